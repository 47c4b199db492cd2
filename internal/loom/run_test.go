package loom

import (
	"bytes"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// The runner tests re-execute the test binary as a fake loom. The fake is
// selected by LOOM_FAKE_MODE, which reaches the child only through the env
// slice a test passes to Run (Run passes nothing else), so a child started
// with any other environment runs the tests, not the fake.
const fakeModeVar = "LOOM_FAKE_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeVar); mode == cinitCapsMode {
		os.Exit(cinitCaps())
	} else if mode != "" {
		os.Exit(fakeLoom(mode, os.Args[1:]))
	}
	pidServer = testkit.ServePids("loom-test-pids-")
	os.Exit(m.Run())
}

// pidServerVar names, in the fake's environment, the abstract unix socket
// on which the test process tells a fake its pid as the test sees it
// (testkit.ServePids): in a PID namespace with a /proc of its own the fake cannot
// read it from /proc.
const pidServerVar = "LOOM_FAKE_PID_SERVER"

// pidServer is the socket testkit.ServePids listens on, "" where there is none.
var pidServer string

// fakeLoom is the fake loom's main.
func fakeLoom(mode string, args []string) int {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch mode {
	case "env":
		json.NewEncoder(os.Stdout).Encode(os.Environ())
	case "args":
		json.NewEncoder(os.Stdout).Encode(args)
	case "print": // print <text> <exit code>
		fmt.Print(arg(0))
		code, _ := strconv.Atoi(arg(1))
		return code
	case "stdin":
		n, err := io.Copy(io.Discard, os.Stdin)
		fmt.Printf(`{"bytes":%d,"err":%q}`, n, fmt.Sprint(err))
	case "pgid":
		pgid, _ := syscall.Getpgid(0)
		fmt.Printf(`{"pid":%d,"pgid":%d}`, os.Getpid(), pgid)
	case "flood": // flood <bytes>; negative: forever
		n, _ := strconv.Atoi(arg(0))
		buf := []byte(strings.Repeat("x", 4096))
		for written := 0; n < 0 || written < n; {
			chunk := buf
			if n >= 0 && n-written < len(chunk) {
				chunk = chunk[:n-written]
			}
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 9
			}
			written += len(chunk)
		}
	case "stderr": // stderr <megabytes> <marker> <exit code | sleep>
		mb, _ := strconv.Atoi(arg(0))
		line := []byte(strings.Repeat(arg(1)+" ", 1<<10))
		for i := 0; i < mb*1024; i++ {
			os.Stderr.Write(line[:1024])
		}
		fmt.Print(`{"ok":true}`)
		if arg(2) == "sleep" {
			time.Sleep(time.Minute)
		}
		code, _ := strconv.Atoi(arg(2))
		return code
	case "procstate": // its blocked and ignored signals and its open descriptors
		status, _ := os.ReadFile("/proc/self/status")
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "SigBlk:") || strings.HasPrefix(line, "SigIgn:") {
				fmt.Println(line)
			}
		}
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			fmt.Print(fd.Name(), " ")
		}
	case "procview": // procview <pid>: what /proc shows of others
		var v struct {
			Pids          []string
			Other, Init   string
			OwnEnvIsInits bool
		}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				v.Pids = append(v.Pids, e.Name())
			}
		}
		if _, err := os.ReadFile("/proc/" + arg(0) + "/environ"); err != nil {
			v.Other = "error"
		} else {
			v.Other = "read"
		}
		own, _ := os.ReadFile("/proc/self/environ")
		if b, err := os.ReadFile("/proc/1/environ"); err != nil {
			v.Init = "error"
		} else {
			v.Init, v.OwnEnvIsInits = "read", bytes.Equal(b, own)
		}
		json.NewEncoder(os.Stdout).Encode(v)
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "sleep": // [pid file]
		if arg(0) != "" {
			os.WriteFile(arg(0)+".tmp", []byte(strconv.Itoa(hostPid())), 0o600)
			os.Rename(arg(0)+".tmp", arg(0))
		}
		time.Sleep(time.Minute)
	case "family": // family <pid file> <hold stdout: yes|no|escape> <then: sleep|exit>
		// Starts a grandchild in the same process group, records both pids
		// (as the gateway sees them, in a PID namespace or not), then
		// sleeps or prints JSON and exits.
		gcFile := arg(0) + ".grandchild"
		gc := exec.Command(os.Args[0], gcFile)
		gc.Env = fakeEnv("sleep")
		if arg(1) == "yes" || arg(1) == "escape" {
			gc.Stdout = os.Stdout
		}
		if arg(1) == "escape" { // a session of its own: out of the group
			gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := gc.Start(); err != nil {
			return 8
		}
		gcPid := 0
		for end := time.Now().Add(30 * time.Second); gcPid == 0 && time.Now().Before(end); time.Sleep(time.Millisecond) {
			b, _ := os.ReadFile(gcFile)
			gcPid, _ = strconv.Atoi(string(b))
		}
		os.WriteFile(arg(0)+".tmp", []byte(fmt.Sprintf("%d %d", hostPid(), gcPid)), 0o600)
		os.Rename(arg(0)+".tmp", arg(0))
		if arg(2) == "exit" {
			fmt.Print(`{"ok":true}`)
			return 0
		}
		time.Sleep(time.Minute)
	default:
		fmt.Fprintln(os.Stderr, "fake loom: unknown mode", mode)
		return 99
	}
	return 0
}

// hostPid is the fake's pid as /proc shows it, which in a PID namespace
// of the fake's own is the gateway's view, not os.Getpid's.
func hostPid() int {
	if name := os.Getenv(pidServerVar); name != "" {
		if c, err := net.Dial("unix", "@"+name); err == nil {
			b, _ := io.ReadAll(c)
			c.Close()
			if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
				return pid
			}
		}
	}
	s, _ := os.Readlink("/proc/self")
	pid, _ := strconv.Atoi(s)
	return pid
}

// fake returns argv and env for the fake loom in mode.
func fake(t *testing.T, mode string, args ...string) (argv, env []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe}, args...), fakeEnv(mode)
}

// fakeEnv is the environment of the fake loom in mode. Under the race
// detector the fake is a race-enabled binary, which sleeps a second as it
// exits (GORACE atexit_sleep_ms, 1000 by default) unless told not to.
func fakeEnv(mode string) []string {
	env := []string{fakeModeVar + "=" + mode}
	if name := pidServerName(); name != "" {
		env = append(env, pidServerVar+"="+name)
	}
	if raceEnabled {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// readPids waits for the family pid file and returns child and grandchild.
func readPids(t *testing.T, path string) (int, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			var child, grand int
			if _, err := fmt.Sscanf(string(b), "%d %d", &child, &grand); err == nil {
				return child, grand
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pid file")
	return 0, 0
}

// waitDead fails the test unless pid is gone (or a zombie, which is dead
// but not yet reaped by whoever inherited it) within five seconds.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d still alive", pid)
}

func TestRunEnvExactly(t *testing.T) {
	argv, env := fake(t, "env")
	env = append(env, "PATH=/nowhere", "LOOM_PAGE_RPC_QUEUE=/q", "EMPTY=")
	t.Setenv("LOOM_GATEWAY_SECRET", "must-not-leak") // in the gateway's own environment
	out, err := New(Options{}).Run(context.Background(), argv, env)
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	var got []string
	if err := json.Unmarshal(out.Stdout, &got); err != nil {
		t.Fatalf("child printed %q: %v", out.Stdout, err)
	}
	if diff := cmp.Diff(env, got); diff != "" {
		t.Errorf("child environment mismatch (-want +got):\n%s", diff)
	}
}

func TestRunNilEnvIsEmpty(t *testing.T) {
	t.Parallel()
	envBin := "/usr/bin/env"
	if _, err := os.Stat(envBin); err != nil {
		t.Skip("no /usr/bin/env")
	}
	out, err := New(Options{}).Run(context.Background(), []string{envBin}, nil)
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if len(out.Stdout) != 0 {
		t.Errorf("a nil env gave the child %q, want nothing", out.Stdout)
	}
}

func TestRunArgvDirect(t *testing.T) {
	t.Parallel()
	args := []string{"search", "a b; echo pwned", "$HOME", "*", "--json", "'\"", ""}
	argv, env := fake(t, "args", args...)
	out, err := New(Options{}).Run(context.Background(), argv, env)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(out.Stdout, &got); err != nil {
		t.Fatalf("child printed %q: %v", out.Stdout, err)
	}
	if diff := cmp.Diff(args, got); diff != "" {
		t.Errorf("child argv mismatch (-want +got):\n%s", diff)
	}
}

func TestRunStdinIsNull(t *testing.T) {
	t.Parallel()
	argv, env := fake(t, "stdin")
	out, err := New(Options{Timeout: 10 * time.Second}).Run(context.Background(), argv, env)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"bytes":0,"err":"<nil>"}`; string(out.Stdout) != want {
		t.Errorf("stdin read = %s, want %s", out.Stdout, want)
	}
}

func TestRunOwnProcessGroup(t *testing.T) {
	t.Parallel()
	argv, env := fake(t, "pgid")
	out, err := New(Options{}).Run(context.Background(), argv, env)
	if err != nil {
		t.Fatal(err)
	}
	var ids struct{ Pid, Pgid int }
	if err := json.Unmarshal(out.Stdout, &ids); err != nil {
		t.Fatal(err)
	}
	if ids.Pid != ids.Pgid || ids.Pgid == syscall.Getpgrp() {
		t.Errorf("child pid %d in group %d (ours %d), want its own group", ids.Pid, ids.Pgid, syscall.Getpgrp())
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	cli := New(Options{})
	for _, code := range []int{0, 1, 2, 3, 42, 255} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			argv, env := fake(t, "print", `{"code":`+strconv.Itoa(code)+`}`, strconv.Itoa(code))
			out, err := cli.Run(context.Background(), argv, env)
			if err != nil {
				t.Fatalf("Run = %v; an exit is not an error", err)
			}
			want := `{"code":` + strconv.Itoa(code) + `}`
			if string(out.Stdout) != want || out.ExitCode != code || out.Signal != 0 {
				t.Errorf("Run = stdout %q, exit %d, signal %d; want %q, %d, 0", out.Stdout, out.ExitCode, out.Signal, want, code)
			}
			if out.Duration <= 0 {
				t.Errorf("Duration = %v", out.Duration)
			}
		})
	}
}

func TestRunSignalDeath(t *testing.T) {
	t.Parallel()
	argv, env := fake(t, "signal")
	out, err := New(Options{}).Run(context.Background(), argv, env)
	if err != nil {
		t.Fatalf("Run = %v; a signal death is an exit", err)
	}
	if out.ExitCode != -1 || out.Signal != int(syscall.SIGKILL) {
		t.Errorf("ExitCode = %d, Signal = %d, want -1 and SIGKILL", out.ExitCode, out.Signal)
	}
	f := Explain(Search, Decide(Search, false, true, out.ExitCode, Facts{Object: true}), out.Output)
	if f == nil || f.Reason != ReasonSignal || f.Detail != "signal 9 (killed)" {
		t.Errorf("Explain = %+v, want signal 9", f)
	}
}

func TestRunStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "loom-not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "loom-garbage")
	if err := os.WriteFile(garbage, []byte("\x00\x01\x02\x03 no format"), 0o755); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loom-loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		argv   []string
		reason Reason
		detail string
	}{
		{"missing", []string{filepath.Join(dir, "secret-dir", "loom")}, ReasonStartNotFound, "no such file or directory"},
		{"not executable", []string{notExec}, ReasonStartPermission, "permission denied"},
		{"directory", []string{dir}, ReasonStartPermission, "permission denied"},
		{"no format", []string{garbage}, ReasonStartExecFormat, "exec format error"},
		{"symlink loop", []string{loop}, ReasonStartOther, "too many levels of symbolic links"},
		{"relative", []string{"loom"}, ReasonStartOther, "the path is not absolute"},
		{"relative with slash", []string{"bin/loom"}, ReasonStartOther, "the path is not absolute"},
		{"empty argv", nil, ReasonStartOther, "the path is not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := New(Options{}).Run(context.Background(), tt.argv, []string{})
			var se *StartError
			if !errors.As(err, &se) || !errors.Is(err, ErrStart) || !errors.Is(err, ErrCommandFailed) {
				t.Fatalf("Run = %+v, %v; want *StartError", out, err)
			}
			if msg := err.Error(); msg != "loom: command could not start" || strings.Contains(msg, dir) {
				t.Errorf("message %q is not the fixed text", msg)
			}
			if out.ExitCode != -1 || out.Stdout != nil {
				t.Errorf("Output = %+v on a start failure", out)
			}
			f, ok := errors.AsType[*Failure](err)
			if !ok || f.Reason != tt.reason || f.Detail != tt.detail || strings.Contains(f.Detail, dir) {
				t.Errorf("failure %+v, want %s %q", f, tt.reason, tt.detail)
			}
		})
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	// The timeout must fire after the child started its grandchild; on a
	// loaded machine start-up can be slow, so retry with a longer timeout.
	for timeout := time.Second; ; timeout *= 4 {
		pidFile := filepath.Join(t.TempDir(), "pids")
		argv, env := fake(t, "family", pidFile, "no", "sleep")
		start := time.Now()
		_, err := New(Options{Timeout: timeout}).Run(context.Background(), argv, env)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrCommandFailed) {
			t.Fatalf("Run = %v, want ErrTimeout", err)
		}
		if d := time.Since(start); d > timeout+20*time.Second {
			t.Errorf("Run took %v after a %v timeout", d, timeout)
		}
		if _, err := os.Stat(pidFile); err != nil {
			if timeout > 30*time.Second {
				t.Fatal("the fake never started its grandchild")
			}
			continue
		}
		child, grand := readPids(t, pidFile)
		waitDead(t, child)
		waitDead(t, grand)
		return
	}
}

func TestRunCancelKillsGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	argv, env := fake(t, "family", pidFile, "yes", "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPids(t, pidFile)
		cancel()
	}()
	_, err := New(Options{Timeout: time.Minute}).Run(ctx, argv, env)
	if !errors.Is(err, ErrCancelled) || errors.Is(err, ErrCommandFailed) {
		t.Fatalf("Run = %v, want ErrCancelled", err)
	}
	child, grand := readPids(t, pidFile)
	waitDead(t, child)
	waitDead(t, grand)
}

func TestRunCallerDeadlineIsCancelled(t *testing.T) {
	t.Parallel()
	argv, env := fake(t, "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := New(Options{Timeout: time.Minute}).Run(ctx, argv, env)
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("Run = %v, want ErrCancelled (the deadline is the caller's)", err)
	}
}

func TestRunAlreadyCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	argv, env := fake(t, "print", "{}", "0")
	if _, err := New(Options{}).Run(ctx, argv, env); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Run = %v, want ErrCancelled", err)
	}
}

func TestRunGrandchildHoldingStdout(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	argv, env := fake(t, "family", pidFile, "yes", "exit")
	start := time.Now()
	out, err := New(Options{Timeout: time.Minute, WaitDelay: 300 * time.Millisecond}).Run(context.Background(), argv, env)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if string(out.Stdout) != `{"ok":true}` || out.ExitCode != 0 {
		t.Errorf("Output = %q, exit %d", out.Stdout, out.ExitCode)
	}
	if elapsed > 20*time.Second { // the grandchild sleeps a minute
		t.Errorf("Run took %v with a 300ms WaitDelay", elapsed)
	}
	_, grand := readPids(t, pidFile)
	waitDead(t, grand) // what was left of the group was killed
}

// TestRunEscapeeHoldingStdout: a grandchild that left loom's group (its
// own session) and holds stdout open past loom's exit is not killed with
// the group; the call ends WaitDelay after the exit with what was printed,
// through Run and RunTool alike.
func TestRunEscapeeHoldingStdout(t *testing.T) {
	t.Parallel()
	for _, condensed := range []bool{false, true} {
		pidFile := filepath.Join(t.TempDir(), "pids")
		argv, env := fake(t, "family", pidFile, "escape", "exit")
		cli := New(Options{Timeout: time.Minute, WaitDelay: 300 * time.Millisecond})
		start := time.Now()
		var got string
		var exit int
		var err error
		if condensed {
			var out Output
			out, err = cli.RunTool(context.Background(), Profile, argv, env)
			got, exit = string(out.Condensed.Payload), out.ExitCode
		} else {
			var out whole
			out, err = cli.Run(context.Background(), argv, env)
			got, exit = string(out.Stdout), out.ExitCode
		}
		elapsed := time.Since(start)
		_, grand := readPids(t, pidFile)
		syscall.Kill(grand, syscall.SIGKILL)
		if err != nil {
			t.Fatalf("condensed %v: Run = %v", condensed, err)
		}
		if got != `{"ok":true}` || exit != 0 {
			t.Errorf("condensed %v: Output = %q, exit %d", condensed, got, exit)
		}
		if elapsed < 300*time.Millisecond || elapsed > 20*time.Second {
			t.Errorf("condensed %v: Run took %v with a 300ms WaitDelay and stdout held open", condensed, elapsed)
		}
	}
}

func TestRunStdoutLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		bytes int
		err   error
	}{
		{"at the cap", 10000, nil},
		{"one over", 10001, ErrStdoutLimit},
		{"far over", 1 << 20, ErrStdoutLimit},
		{"endless", -1, ErrStdoutLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			argv, env := fake(t, "flood", strconv.Itoa(tt.bytes))
			out, err := New(Options{MaxStdout: 10000, Timeout: 20 * time.Second}).Run(context.Background(), argv, env)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Run = %v, want %v", err, tt.err)
			}
			if err == nil && len(out.Stdout) != tt.bytes {
				t.Errorf("read %d bytes, want %d", len(out.Stdout), tt.bytes)
			}
			if err != nil && (out.Stdout != nil || !errors.Is(err, ErrCommandFailed)) {
				t.Errorf("Output = %d bytes, err %v", len(out.Stdout), err)
			}
		})
	}
}

// TestRunStderrTail: megabytes of stderr neither block the command nor
// reach an error's text; Output keeps their last MaxStderrTail bytes, on
// an exit and on a timeout alike.
func TestRunStderrTail(t *testing.T) {
	t.Parallel()
	const marker = "STDERR-MARKER-/private/secret"
	for _, code := range []string{"0", "1"} {
		argv, env := fake(t, "stderr", "8", marker, code)
		out, err := New(Options{Timeout: 30 * time.Second}).Run(context.Background(), argv, env)
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if string(out.Stdout) != `{"ok":true}` {
			t.Errorf("stdout = %.100q", out.Stdout)
		}
		if len(out.Stderr) != MaxStderrTail || !out.StderrCut || !strings.Contains(string(out.Stderr), marker) {
			t.Errorf("stderr tail of %d bytes (cut %v) ending %q, want %d ending with the marker", len(out.Stderr), out.StderrCut, out.Stderr[max(0, len(out.Stderr)-40):], MaxStderrTail)
		}
		kept := Condense(PageRead, bytes.NewReader(out.Stdout))
		ierr := Decide(PageRead, false, kept.Payload != nil, out.ExitCode, kept.Facts)
		if code == "1" && ierr == nil {
			t.Error("Decide accepted exit 1")
		}
		if ierr != nil && strings.Contains(ierr.Error(), "MARKER") {
			t.Errorf("error %q carries stderr", ierr)
		}
	}
	// stderr, then a timeout.
	argv, env := fake(t, "stderr", "1", marker, "sleep")
	out, err := New(Options{Timeout: time.Second}).Run(context.Background(), argv, env)
	if !errors.Is(err, ErrTimeout) || strings.Contains(err.Error(), "MARKER") {
		t.Errorf("Run = %v, want ErrTimeout without stderr", err)
	}
	if f, ok := errors.AsType[*Failure](err); !ok || f.Reason != ReasonTimeout || f.Detail != TimeoutDetail(time.Second) {
		t.Errorf("failure %+v, want a timeout", f)
	}
	if !strings.Contains(string(out.Stderr), marker) {
		t.Errorf("no stderr tail after a timeout: %d bytes", len(out.Stderr))
	}
}

func TestRunLimiter(t *testing.T) {
	t.Parallel()
	cli := New(Options{MaxConcurrent: 1, QueueWait: 100 * time.Millisecond, Timeout: time.Minute})
	sleepArgv, sleepEnv := fake(t, "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cli.Run(ctx, sleepArgv, sleepEnv)
		done <- err
	}()
	testkit.WaitFor(t, 30*time.Second, func() bool { return cli.InFlight() == 1 })

	argv, env := fake(t, "print", "{}", "0")
	start := time.Now()
	if _, err := cli.Run(context.Background(), argv, env); !errors.Is(err, ErrBusy) {
		t.Fatalf("Run with the only slot taken = %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("ErrBusy after %v, want after QueueWait", d)
	}

	// A caller cancelled while queued.
	qctx, qcancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() {
		_, err := New(Options{}).Run(qctx, argv, env) // warm-up: a different CLI is not limited
		if err != nil {
			queued <- err
			return
		}
		_, err = cli.Run(qctx, argv, env)
		queued <- err
	}()
	testkit.WaitFor(t, 30*time.Second, func() bool { return cli.Queued() == 1 })
	qcancel()
	if err := <-queued; !errors.Is(err, ErrCancelled) {
		t.Errorf("queued Run cancelled = %v, want ErrCancelled", err)
	}

	cancel()
	if err := <-done; !errors.Is(err, ErrCancelled) {
		t.Errorf("first Run = %v, want ErrCancelled", err)
	}
	testkit.WaitFor(t, 30*time.Second, func() bool { return cli.InFlight() == 0 && cli.Queued() == 0 })
	if _, err := cli.Run(context.Background(), argv, env); err != nil {
		t.Errorf("Run after the slot freed = %v", err)
	}
}

func TestRunQueueWaitsForSlot(t *testing.T) {
	t.Parallel()
	cli := New(Options{MaxConcurrent: 2, QueueWait: 30 * time.Second})
	argv, env := fake(t, "print", "{}", "0")
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := cli.Run(context.Background(), argv, env)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("Run = %v", err)
		}
	}
	if cli.InFlight() != 0 || cli.Queued() != 0 {
		t.Errorf("gauges after = %d in flight, %d queued", cli.InFlight(), cli.Queued())
	}
}

func TestRunNoQueueWait(t *testing.T) {
	t.Parallel()
	cli := New(Options{MaxConcurrent: 1, QueueWait: -1})
	sleepArgv, sleepEnv := fake(t, "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go cli.Run(ctx, sleepArgv, sleepEnv)
	testkit.WaitFor(t, 30*time.Second, func() bool { return cli.InFlight() == 1 })
	argv, env := fake(t, "print", "{}", "0")
	start := time.Now()
	if _, err := cli.Run(context.Background(), argv, env); !errors.Is(err, ErrBusy) || time.Since(start) > time.Second {
		t.Fatalf("Run = %v after %v, want ErrBusy at once", err, time.Since(start))
	}
}

func TestNewDefaults(t *testing.T) {
	c := New(Options{})
	want := Options{Timeout: DefaultTimeout, MaxStdout: DefaultMaxStdout, MaxConcurrent: DefaultMaxConcurrent, QueueWait: DefaultQueueWait, WaitDelay: DefaultWaitDelay}
	if c.opts != want {
		t.Errorf("New(Options{}) options = %+v, want %+v", c.opts, want)
	}
	if cap(c.slots.slots) != DefaultMaxConcurrent {
		t.Errorf("slots = %d", cap(c.slots.slots))
	}
}

// TestRunSlowReaderKeepsBufferedOutput: loom writes its whole output into
// the pipe and exits; a reader slower than WaitDelay still reads all of
// it, since nothing holds stdout open (only what waits in the pipe is
// left to read).
func TestRunSlowReaderKeepsBufferedOutput(t *testing.T) {
	t.Parallel()
	payload := `{"hits":[` + strings.Repeat(`1,`, 20000) + `1]}`
	argv, env := fake(t, "print", payload, "0")
	c := New(Options{Timeout: time.Minute, WaitDelay: 50 * time.Millisecond})
	var got []byte
	out, err := c.run(context.Background(), argv, env, func(r io.Reader) {
		buf := make([]byte, 4096)
		for {
			time.Sleep(20 * time.Millisecond) // ten reads outlast WaitDelay four times
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				return
			}
		}
	})
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	if out.ExitCode != 0 || string(got) != payload {
		t.Errorf("exit %d, read %d bytes of %d", out.ExitCode, len(got), len(payload))
	}
}

// pidServerName is the pid server's name: the test process's own, or, in
// a fake starting another, the one it was given.
func pidServerName() string {
	if pidServer != "" {
		return pidServer
	}
	return os.Getenv(pidServerVar)
}
