package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/testkit"
)

// stageGateway is a test gateway whose calls take a slot of a one-slot
// limiter (waiting up to wait) for their loom stage, bounded by timeout,
// and run hook just before measuring.
func stageGateway(t *testing.T, wait, timeout time.Duration, hook func(stage context.Context)) *testGateway {
	t.Helper()
	g := newTestGateway(t, gatewayOptions{})
	g.deps.Slots = loom.NewLimiter(1, wait)
	g.deps.CommandTimeout = timeout
	g.deps.beforeMeasure = hook
	return g
}

// noSlotLeft fails t unless every slot of g's limiter is free.
func noSlotLeft(t *testing.T, g *testGateway) {
	t.Helper()
	if n, q := g.deps.Slots.InFlight(), g.deps.Slots.Queued(); n != 0 || q != 0 {
		t.Errorf("after the calls: %d slots held, %d calls queued; want none", n, q)
	}
}

// TestSlotHeldUntilMeasured: with one loom slot, a second call waits until
// the first one's output is measured, not only until its process exits;
// when the wait is shorter than that measurement it answers busy.
func TestSlotHeldUntilMeasured(t *testing.T) {
	t.Parallel()
	t.Run("waits", func(t *testing.T) {
		t.Parallel()
		measuring, finish := make(chan struct{}, 2), release(t)
		var calls atomic.Int32
		g := stageGateway(t, 10*time.Second, time.Minute, func(context.Context) {
			measuring <- struct{}{}
			if calls.Add(1) == 1 { // the first call measures until finish
				<-finish
			}
		})
		_, tok1 := g.createRun(t, `{"runId":"one"}`)
		_, tok2 := g.createRun(t, `{"runId":"two"}`)

		done1 := make(chan *httptest.ResponseRecorder, 1)
		go func() { done1 <- g.call("one", tok1, "loom_search", `{"query":"atlas"}`) }()
		within(t, measuring) // the first call's process has exited; it is measuring
		done2 := make(chan *httptest.ResponseRecorder, 1)
		go func() { done2 <- g.call("two", tok2, "loom_search", `{"query":"atlas"}`) }()

		testkit.WaitFor(t, 5*time.Second, func() bool { return g.deps.Slots.Queued() == 1 })
		if n := len(g.fake.Calls()); n != 1 {
			t.Fatalf("loom ran %d times while the first call measured, want 1", n)
		}
		select {
		case rec := <-done2:
			t.Fatalf("second call answered while the first measured: %d %s", rec.Code, rec.Body)
		case <-time.After(50 * time.Millisecond):
		}
		close(finish)
		wantStatus(t, within(t, done1), http.StatusOK)
		wantStatus(t, within(t, done2), http.StatusOK)
		if n := len(g.fake.Calls()); n != 2 {
			t.Errorf("loom ran %d times, want 2", n)
		}
		noSlotLeft(t, g)
	})
	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		measuring, finish := make(chan struct{}, 2), release(t)
		g := stageGateway(t, 20*time.Millisecond, time.Minute, func(context.Context) {
			measuring <- struct{}{}
			<-finish
		})
		_, tok1 := g.createRun(t, `{"runId":"one"}`)
		_, tok2 := g.createRun(t, `{"runId":"two"}`)

		done1 := make(chan *httptest.ResponseRecorder, 1)
		go func() { done1 <- g.call("one", tok1, "loom_search", `{"query":"atlas"}`) }()
		within(t, measuring)
		done2 := make(chan *httptest.ResponseRecorder, 1)
		go func() { done2 <- g.call("two", tok2, "loom_search", `{"query":"atlas"}`) }()
		rec := within(t, done2)
		wantProblem(t, rec, http.StatusTooManyRequests, "busy")
		if rec.Header().Get("Retry-After") == "" {
			t.Error("busy without Retry-After")
		}
		close(finish)
		wantStatus(t, within(t, done1), http.StatusOK)
		noSlotLeft(t, g)
	})
}

// release returns a channel that the test closes, or else its cleanup
// does, so that no hook waiting on it outlives a failed test.
func release(t *testing.T) chan struct{} {
	ch := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-ch:
		default:
			close(ch)
		}
	})
	return ch
}

// within receives from ch, failing t after 5s.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received within 5s")
	}
	var zero T
	return zero
}

// TestMeasurePastDeadline: a measurement that ends after --command-timeout
// (counted from the slot, so the process's time counts) answers
// command_failed, as a process timeout does; a run deleted while its
// output is measured answers cancelled. Neither keeps its slot.
func TestMeasurePastDeadline(t *testing.T) {
	t.Parallel()
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		g := stageGateway(t, time.Second, 30*time.Millisecond, func(stage context.Context) {
			<-stage.Done() // measuring took all the time left
		})
		_, tok := g.createRun(t, `{"runId":"r"}`)
		p := wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), http.StatusBadGateway, "command_failed")
		if p.OutputID != "r:loom_search:1" {
			t.Errorf("outputId = %q, want r:loom_search:1", p.OutputID)
		}
		noSlotLeft(t, g)
		// The slot is free again for the next call, which has time.
		g.deps.beforeMeasure = nil
		wantStatus(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), http.StatusOK)
		noSlotLeft(t, g)
	})
	t.Run("run deleted", func(t *testing.T) {
		t.Parallel()
		var g *testGateway
		g = stageGateway(t, time.Second, time.Minute, func(stage context.Context) {
			wantStatus(t, g.hostDo(http.MethodDelete, "/host/v1/runs/r", ""), http.StatusNoContent)
			<-stage.Done()
		})
		_, tok := g.createRun(t, `{"runId":"r"}`)
		wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), 499, "cancelled")
		noSlotLeft(t, g)
	})
}
