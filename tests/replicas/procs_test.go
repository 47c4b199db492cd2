package replicas

import (
	"testing"

	"github.com/loom-gateway/gateway/tests/procs"
)

// loomProcesses returns the processes a fake loom of scenario directory dir
// left or is running: every live process whose environment names dir (the
// fake loom and the grandchildren it forks, even once re-parented), and
// every process, zombies included, whose parent chain leads to one of the
// gateways (a zombie child is one the gateway did not reap).
func loomProcesses(dir string, gateways ...int) []procs.Proc {
	all := procs.List()
	parent := procs.Parents(all)
	var out []procs.Proc
	for _, p := range all {
		if (p.Instance == dir && p.State != 'Z') || procs.Descends(parent, p.PID, gateways...) {
			out = append(out, p)
		}
	}
	return out
}

// underGateway returns the processes whose parent chain leads to gw.
func underGateway(gw int) []procs.Proc {
	all := procs.List()
	parent := procs.Parents(all)
	var out []procs.Proc
	for _, p := range all {
		if procs.Descends(parent, p.PID, gw) {
			out = append(out, p)
		}
	}
	return out
}

// noLoomProcesses waits up to 5s for no loomProcesses(dir, gateways...);
// survivors fail t and are killed.
func noLoomProcesses(t *testing.T, dir string, gateways ...int) {
	t.Helper()
	procs.WaitNone(t, func() []procs.Proc { return loomProcesses(dir, gateways...) })
}
