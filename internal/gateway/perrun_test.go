package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestConcurrentPerRun: a run with MaxConcurrentPerRun calls in flight is
// refused busy, with its outputId, at once and without starting loom;
// another run still calls, and the run calls again once one of its calls
// ends.
func TestConcurrentPerRun(t *testing.T) {
	t.Parallel()
	unblock := release(t)
	started := make(chan struct{}, 8)
	c := newTestCore(t, coreOptions{
		MaxConcurrentPerRun: 2,
		RunFunc:             loomtest.Gate(started, unblock),
	})
	ctx := context.Background()
	tok := c.createRun(t, "r")
	const search = `{"query":"plan"}`
	first := []<-chan answer{c.start(ctx, "r", tok, "loom_search", search), c.start(ctx, "r", tok, "loom_search", search)}
	within(t, started)
	within(t, started)

	begun := time.Now()
	// (On a goroutine: a call let through would wait for the release.)
	wantError(t, within(t, c.start(ctx, "r", tok, "loom_search", search)).err, "busy", "r:loom_search:3")
	if took := time.Since(begun); took > 5*time.Second {
		t.Errorf("busy after %v, want at once", took)
	}
	if n := len(c.fake.Calls()); n != 2 {
		t.Errorf("loom ran %d times, want 2 (the refused call starts none)", n)
	}

	// Another run is not held back by this one's calls.
	otherTok := c.createRun(t, "other")
	other := c.start(ctx, "other", otherTok, "loom_search", search)
	within(t, started)
	close(unblock)
	if a := within(t, other); a.err != nil {
		t.Errorf("another run's call: %v", a.err)
	}
	for _, ch := range first {
		if a := within(t, ch); a.err != nil {
			t.Errorf("a call within the cap: %v", a.err)
		}
	}
	if _, err := c.call(ctx, "r", tok, "loom_search", search); err != nil {
		t.Errorf("a call after the run's calls ended: %v", err)
	}
}
