package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadReport: a report reads back as written; a short one is an
// unexpected EOF, none at all EOF.
func TestReadReport(t *testing.T) {
	t.Parallel()
	for _, r := range []Report{{State: Started}, {State: StartFailed, Value: uint32(syscall.ENOENT)}, {State: Exited, Value: 0xffffffff}} {
		got, err := ReadReport(bytes.NewReader(r.bytes()))
		if err != nil || got != r {
			t.Errorf("ReadReport(%v.bytes()) = %v, %v", r, got, err)
		}
	}
	if _, err := ReadReport(bytes.NewReader([]byte{'W', 1})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadReport(2 bytes) = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadReport(bytes.NewReader(nil)); !errors.Is(err, io.EOF) {
		t.Errorf("ReadReport(nothing) = %v, want io.EOF", err)
	}
}

// TestCInit: the C init, outside a namespace, answers the probe with 1
// (not pid 1), and runs a command with its argv and environment,
// reporting its start and its wait status on descriptor 3.
func TestCInit(t *testing.T) {
	t.Parallel()
	path, err := Executable()
	if runtime.GOARCH != "amd64" {
		if err == nil {
			t.Errorf("Executable() = %q on %s, want an error", path, runtime.GOARCH)
		}
		t.Skip("no C init on", runtime.GOARCH)
	}
	if err != nil {
		t.Skip("no memory file to execute:", err)
	}
	probe := exec.Command(path)
	probe.Args = []string{Name}
	if err := probe.Run(); err == nil || probe.ProcessState.ExitCode() != 1 {
		t.Errorf("probe outside a namespace = %v, want exit code 1", err)
	}

	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		t.Skip("no /bin/sh")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(path)
	cmd.Args = []string{Name, sh, "-c", `printf '%s' "$0 $X"; exit 7`, "zero"}
	cmd.Env = []string{"X=y"}
	var out bytes.Buffer
	cmd.Stdout, cmd.ExtraFiles = &out, []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_ = cmd.Wait()
	var got []Report
	for {
		rep, err := ReadReport(r)
		if err != nil {
			break
		}
		got = append(got, rep)
	}
	want := []Report{{State: Started}, {State: Exited, Value: 7 << 8}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if out.String() != "zero y" || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("command printed %q and the init exited %d; want \"zero y\" and 7", out.String(), cmd.ProcessState.ExitCode())
	}
}

// TestInline: the inline init runs a command with its argv, environment,
// descriptors and uid as the first process of a new PID namespace (the
// command is pid 2), in a user namespace of its own or not, reports its
// wait status and a failed exec in memory, and its namespace ends with
// it: what the command left running is killed. Kill ends it early.
func TestInline(t *testing.T) {
	t.Parallel()
	if !InlineAvailable {
		t.Skip("no inline init on", runtime.GOARCH)
	}
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		t.Skip("no /bin/sh")
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, userNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("userNS=%v", userNS), func(t *testing.T) {
			run := func(argv []string, env []string) (string, Report, error, int) {
				t.Helper()
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				p, err := StartInline(argv, env, null, w, null, userNS)
				w.Close()
				if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) {
					t.Skip("no such namespace to be had here:", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(r)
				rep, err := p.Reap()
				return string(out), rep, err, p.InitPid()
			}

			// The background sleep holds stdout: the read ends only because
			// the namespace ends with the init.
			uid := os.Getuid()
			out, rep, err, initPid := run([]string{sh, "-c", `printf '%s %s ' "$0" "$X"; echo $$ $(stat -c %u /proc/self/); sleep 60 & exit 7`, "zero"}, []string{"X=y", "PATH=/usr/bin:/bin"})
			if want := fmt.Sprintf("zero y 2 %d\n", uid); out != want || err != nil || rep != (Report{State: Exited, Value: 7 << 8}) || initPid != 1 {
				t.Errorf("run: printed %q, reported %+v, %v, init pid %d; want %q, exit 7, pid 1", out, rep, err, initPid, want)
			}

			_, rep, err, _ = run([]string{"/nonexistent/loom"}, []string{})
			if err != nil || rep != (Report{State: StartFailed, Value: uint32(syscall.ENOENT)}) {
				t.Errorf("missing command: reported %+v, %v; want StartFailed ENOENT", rep, err)
			}

			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p, err := StartInline([]string{sh, "-c", "sleep 60"}, []string{}, null, null, null, userNS)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Kill(); err != nil {
				t.Errorf("Kill = %v", err)
			}
			if rep, err := p.Reap(); err == nil {
				t.Errorf("Reap after Kill = %+v, nil; want an error", rep)
			}
		})
	}
}
