package tests

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
	"github.com/loom-gateway/gateway/tests/procs"
)

// loomProcesses returns the processes g's loom left or is running: every
// live process whose environment names g's scenario directory (the fake
// loom and the grandchildren it forks, even once they are re-parented), and
// every process, zombies included, whose parent chain leads to the gateway
// (a zombie child is one the gateway did not reap). match, when not empty,
// keeps only those whose command line contains it, the namespace init
// that runs loom left out (its command line holds loom's).
func (g *gateway) loomProcesses(match string) []procs.Proc {
	gw := g.cmd.Process.Pid
	all := procs.List()
	parent := procs.Parents(all)
	var out []procs.Proc
	for _, p := range all {
		if p.PID == gw {
			continue
		}
		mine := procs.Descends(parent, p.PID, gw) || (p.Instance == g.Dir && p.State != 'Z')
		if !mine {
			continue
		}
		if match != "" && !strings.Contains(strings.Join(p.Cmdline, " "), match) && !(p.State == 'Z' && p.PPID == gw) {
			continue
		}
		if match != "" && len(p.Cmdline) > 0 && (p.Cmdline[0] == nsinit.Name || p.Cmdline[0] == nsinit.NameProc) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// running drops the zombies from ps.
func running(ps []procs.Proc) []procs.Proc {
	var out []procs.Proc
	for _, p := range ps {
		if p.State != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// noLoomProcesses waits up to 5s for g to have no loom process matching
// match; survivors fail t and are killed.
func (g *gateway) noLoomProcesses(t testing.TB, match string) {
	t.Helper()
	procs.WaitNone(t, func() []procs.Proc { return g.loomProcesses(match) })
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
