package tests

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

// proc is one process as /proc shows it.
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

// loomProcesses returns the processes g's loom left or is running: every
// live process whose environment names g's scenario directory (the fake
// loom and the grandchildren it forks, even once they are re-parented), and
// every process, zombies included, whose parent chain leads to the gateway
// (a zombie child is one the gateway did not reap). match, when not empty,
// keeps only those whose command line contains it.
func (g *gateway) loomProcesses(match string) []proc {
	gw := g.cmd.Process.Pid
	all := processes()
	parent := make(map[int]int, len(all))
	for _, p := range all {
		parent[p.pid] = p.ppid
	}
	descends := func(pid int) bool {
		for i := 0; i < 64 && pid > 1; i++ {
			pid = parent[pid]
			if pid == gw {
				return true
			}
		}
		return false
	}
	var out []proc
	for _, p := range all {
		if p.pid == gw {
			continue
		}
		mine := descends(p.pid) || (p.instance == g.Dir && p.state != 'Z')
		if !mine {
			continue
		}
		if match != "" && !strings.Contains(strings.Join(p.cmdline, " "), match) && !(p.state == 'Z' && p.ppid == gw) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// noLoomProcesses waits up to 5s for g to have no loom process matching
// match; survivors fail t and are killed.
func (g *gateway) noLoomProcesses(t testing.TB, match string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := g.loomProcesses(match)
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

// procStatus reads the numeric fields of /proc/<pid>/status (in kB for the
// Vm* fields), and counts the open file descriptors as "FDs".
func procStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	out["FDs"] = int64(len(fds))
	return out, nil
}

// procCPU is the user and system CPU time pid has used, from
// /proc/<pid>/stat (clock ticks of 10ms).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unreadable times", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
