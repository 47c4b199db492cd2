package tests

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// findCall waits until the run's call log holds an entry with code.
func (r *run) findCall(t testing.TB, code string) client.CallRecord {
	t.Helper()
	var found client.CallRecord
	if !testkit.Poll(10*time.Second, func() bool {
		calls := r.calls(t)
		i := slices.IndexFunc(calls, func(c client.CallRecord) bool { return deref(c.Code) == code })
		if i >= 0 {
			found = calls[i]
		}
		return i >= 0
	}) {
		t.Fatalf("no %s call in the log: %+v", code, r.calls(t))
	}
	return found
}

// TestBusy: with one loom slot taken, a call that cannot get it within
// --busy-wait answers busy with Retry-After; the slot frees when the
// hanging call's client goes away (cancelled).
func TestBusy(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--max-concurrent-loom", "1", "--busy-wait", "100ms", "--command-timeout", "20s"}})
	g.setBehaviour(t, "case-hang", behaviour{Sleep: "60s", Grandchild: "60s"})
	g.setBehaviour(t, "case-quick", behaviour{Stdout: `{"hits":[]}`})

	hanging := g.newRun(t, client.CreateRunInput{})
	hctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := try(hctx, hanging.Agent, hanging.ID, "loom_search", `{"query":"case=hang"}`)
		done <- err
	}()
	g.waitLoomCall(t, "hang")
	g.waitPid(t, "grandchild-hang.pid")

	r := g.newRun(t, client.CreateRunInput{})
	start := time.Now()
	rep := r.call(t, "loom_search", `{"query":"case=quick"}`)
	took := time.Since(start)
	p := wantProblem(t, rep, http.StatusTooManyRequests, "busy")
	if ra, err := strconv.Atoi(rep.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q, want a positive number of seconds", rep.Header.Get("Retry-After"))
	}
	if want := r.ID + ":loom_search:1"; deref(p.OutputId) != want {
		t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
	}
	if took < 90*time.Millisecond || took > 5*time.Second {
		t.Errorf("busy after %v, want after about --busy-wait (100ms)", took)
	}
	r.findCall(t, "busy")

	// The client of the hanging call goes away: its process is killed,
	// its call is logged cancelled, and the slot is free again.
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled client got %v", err)
	}
	c := hanging.findCall(t, "cancelled")
	if c.OutputId != hanging.ID+":loom_search:1" || c.Status != "error" {
		t.Errorf("cancelled call record %+v", c)
	}
	if !g.processGone(t, "grandchild-hang.pid") {
		t.Errorf("the hanging command's group survived the cancellation")
	}
	if !testkit.Poll(5*time.Second, func() bool {
		rep := r.call(t, "loom_search", `{"query":"case=quick"}`)
		if rep.Status != http.StatusOK {
			wantProblem(t, rep, http.StatusTooManyRequests, "busy")
		}
		return rep.Status == http.StatusOK
	}) {
		t.Fatal("the slot was not freed after the cancellation")
	}
}
