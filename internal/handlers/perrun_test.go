package handlers

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestConcurrentPerRun: a run with MaxConcurrentPerRun calls in flight
// answers busy, with its outputId and Retry-After, at once and without
// starting loom; another run still calls, and the run calls again once
// one of its calls ends.
func TestConcurrentPerRun(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	g := newTestGateway(t, gatewayOptions{
		MaxConcurrentPerRun: 2,
		RunFunc: func(ctx context.Context, argv, env []string) (loom.Output, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return loom.Output{ExitCode: -1}, loom.ErrCancelled
			}
			return loomtest.Sample(ctx, argv, env)
		},
	})
	id, token := g.createRun(t, `{}`)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if rec := g.call(id, token, "loom_search", `{"query":"plan"}`); rec.Code != http.StatusOK {
				t.Errorf("a call within the cap: %d %s", rec.Code, rec.Body)
			}
		})
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the first two calls did not reach loom")
		}
	}

	start := time.Now()
	rec := g.call(id, token, "loom_search", `{"query":"plan"}`)
	p := wantProblem(t, rec, http.StatusTooManyRequests, "busy")
	if p.OutputID != id+":loom_search:3" {
		t.Errorf("outputId = %q, want %s:loom_search:3", p.OutputID, id)
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("busy without Retry-After")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("busy after %v, want at once", took)
	}
	if n := len(g.fake.Calls()); n != 2 {
		t.Errorf("loom ran %d times, want 2 (the refused call starts none)", n)
	}

	// Another run is not held back by this one's calls.
	other, otherToken := g.createRun(t, `{}`)
	done := make(chan int, 1)
	go func() { done <- g.call(other, otherToken, "loom_search", `{"query":"plan"}`).Code }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("another run's call did not reach loom")
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("another run's call: %d", code)
	}
	wg.Wait()
	if rec := g.call(id, token, "loom_search", `{"query":"plan"}`); rec.Code != http.StatusOK {
		t.Errorf("a call after the run's calls ended: %d %s", rec.Code, rec.Body)
	}
}
