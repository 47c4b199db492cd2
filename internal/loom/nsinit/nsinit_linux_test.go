package nsinit

import (
	"bytes"
	"errors"
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
	for _, r := range []Report{{Kind: Started}, {Kind: StartFailed, Value: uint32(syscall.ENOENT)}, {Kind: Exited, Value: 0xffffffff}} {
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
	want := []Report{{Kind: Started}, {Kind: Exited, Value: 7 << 8}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if out.String() != "zero y" || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("command printed %q and the init exited %d; want \"zero y\" and 7", out.String(), cmd.ProcessState.ExitCode())
	}
}
