package loom

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoGoroutineEndsAThread holds what runInline rests on: the inline
// init's parent-death signal is tied to the OS thread that ran its clone,
// and Go ends a thread only when a goroutine exits locked to it, so no
// package the gateway binary links may lock a goroutine to its thread
// without unlocking it on the way out (runtime.LockOSThread followed at
// once by a deferred UnlockOSThread). A package that breaks this could
// end a thread that is some call's init's parent, and the kernel would
// kill that call's loom.
func TestNoGoroutineEndsAThread(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over the gateway's dependencies")
	}
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`, "github.com/loom-gateway/gateway/cmd/gateway")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var locks []string
	for _, file := range strings.Fields(string(out)) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found, bad := lockedExits(src)
		for _, line := range found {
			locks = append(locks, fmt.Sprintf("%s:%d", filepath.Base(file), line))
		}
		for _, line := range bad {
			t.Errorf("%s:%d: LockOSThread not followed by a deferred UnlockOSThread: a goroutine that exits there ends its thread", file, line)
		}
	}
	// The check must have read the files it is about: the runtime's own
	// signal thread and the runner's locked start (startAndWait) lock.
	for _, want := range []string{"signal_unix.go:", "run.go:"} {
		if !strings.Contains(strings.Join(locks, " "), want) {
			t.Errorf("no LockOSThread found in %s*; found %v: the check read nothing", want, locks)
		}
	}
}

// TestLockedExitsSeesALock: lockedExits reports a lock without a deferred
// unlock on the next line, and passes one with it.
func TestLockedExitsSeesALock(t *testing.T) {
	src := "func f() {\n\t// runtime.LockOSThread() in a comment\n\truntime.LockOSThread()\n\tdefer runtime.UnlockOSThread()\n}\n" +
		"func g() {\n\truntime.LockOSThread()\n\tdo()\n\truntime.UnlockOSThread()\n}\n" +
		"func LockOSThread() {\n}\n"
	found, bad := lockedExits([]byte(src))
	if fmt.Sprint(found) != "[3 7]" || fmt.Sprint(bad) != "[7]" {
		t.Errorf("lockedExits: found %v, bad %v; want found [3 7], bad [7]", found, bad)
	}
}

// lockedExits returns the lines of src that call LockOSThread, and those
// of them whose next line is not a deferred UnlockOSThread; comments and
// the function's own declaration are not calls.
func lockedExits(src []byte) (found, bad []int) {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	for i, l := range lines {
		if !strings.Contains(l, "LockOSThread()") || strings.Contains(l, "UnlockOSThread()") ||
			strings.HasPrefix(l, "//") || strings.HasPrefix(l, "func ") {
			continue
		}
		found = append(found, i+1)
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "defer ") || !strings.Contains(lines[i+1], "UnlockOSThread()") {
			bad = append(bad, i+1)
		}
	}
	return found, bad
}
