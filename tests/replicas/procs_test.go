package replicas

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is one process as /proc shows it (as in tests/procs_test.go).
type proc struct {
	pid, ppid int
	state     byte     // R, S, D, Z, ...
	cmdline   []string // empty for a zombie
	instance  string   // LOOM_INSTANCE_DIR of its environment, if any
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d (ppid %d, state %c) %q", p.pid, p.ppid, p.state, p.cmdline)
}

// processes lists every process of the machine that /proc lets us read.
func processes() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
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
		p := proc{pid: pid, state: fields[0][0]}
		p.ppid, _ = strconv.Atoi(fields[1])
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && len(b) > 0 {
			p.cmdline = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil {
			for _, kv := range strings.Split(string(b), "\x00") {
				if v, ok := strings.CutPrefix(kv, "LOOM_INSTANCE_DIR="); ok {
					p.instance = v
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// loomProcesses returns the processes a fake loom of scenario directory dir
// left or is running: every live process whose environment names dir (the
// fake loom and the grandchildren it forks, even once re-parented), and
// every process, zombies included, whose parent chain leads to one of the
// gateways (a zombie child is one the gateway did not reap).
func loomProcesses(dir string, gateways ...int) []proc {
	all := processes()
	parent := make(map[int]int, len(all))
	for _, p := range all {
		parent[p.pid] = p.ppid
	}
	var out []proc
	for _, p := range all {
		if (p.instance == dir && p.state != 'Z') || descends(parent, p.pid, gateways) {
			out = append(out, p)
		}
	}
	return out
}

// underGateway returns the processes whose parent chain leads to gw.
func underGateway(gw int) []proc {
	all := processes()
	parent := make(map[int]int, len(all))
	for _, p := range all {
		parent[p.pid] = p.ppid
	}
	var out []proc
	for _, p := range all {
		if descends(parent, p.pid, []int{gw}) {
			out = append(out, p)
		}
	}
	return out
}

// descends reports whether pid is a descendant (not itself) of one of
// ancestors.
func descends(parent map[int]int, pid int, ancestors []int) bool {
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

// noLoomProcesses waits up to 5s for no loomProcesses(dir, gateways...);
// survivors fail t and are killed.
func noLoomProcesses(t *testing.T, dir string, gateways ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := loomProcesses(dir, gateways...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				t.Errorf("process left behind: %v", p)
				if p.state != 'Z' {
					_ = syscall.Kill(p.pid, syscall.SIGKILL)
				}
			}
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}
