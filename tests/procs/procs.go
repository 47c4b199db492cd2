// Package procs lists the machine's processes from /proc for the
// end-to-end tests, which count what a loom call leaves behind: the fake
// loom, the grandchildren it forks (found by the LOOM_INSTANCE_DIR of their
// environment, even once re-parented) and any child the gateway did not
// reap.
package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is one process as /proc shows it.
type Proc struct {
	PID, PPID int
	State     byte     // R, S, D, Z, ...
	Cmdline   []string // empty for a zombie
	Instance  string   // LOOM_INSTANCE_DIR of its environment, if any
}

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (ppid %d, state %c) %q", p.PID, p.PPID, p.State, p.Cmdline)
}

// List returns every process of the machine that /proc lets us read.
func List() []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		fields := strings.Fields(string(stat[i+2:]))
		if len(fields) < 2 {
			continue
		}
		p := Proc{PID: pid, State: fields[0][0]}
		p.PPID, _ = strconv.Atoi(fields[1])
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && len(b) > 0 {
			p.Cmdline = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil {
			for _, kv := range strings.Split(string(b), "\x00") {
				if v, ok := strings.CutPrefix(kv, "LOOM_INSTANCE_DIR="); ok {
					p.Instance = v
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// Parents maps each process of all to its parent.
func Parents(all []Proc) map[int]int {
	parent := make(map[int]int, len(all))
	for _, p := range all {
		parent[p.PID] = p.PPID
	}
	return parent
}

// Descends reports whether pid is a descendant (not itself) of one of
// ancestors.
func Descends(parent map[int]int, pid int, ancestors ...int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		pid = parent[pid]
		for _, a := range ancestors {
			if pid == a {
				return true
			}
		}
	}
	return false
}

// WaitNone waits up to 5s for list to return no process; the survivors
// then fail t and are killed.
func WaitNone(t testing.TB, list func() []Proc) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := list()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				t.Errorf("process left behind: %v", p)
				if p.State != 'Z' {
					_ = syscall.Kill(p.PID, syscall.SIGKILL)
				}
			}
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Gone waits up to 5s for pid to be gone (or a zombie nobody reaps); one
// still alive then is killed and Gone reports false.
func Gone(pid int) bool { return GoneWithin(pid, 5*time.Second) }

// GoneWithin is Gone waiting up to d.
func GoneWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				return true
			}
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
