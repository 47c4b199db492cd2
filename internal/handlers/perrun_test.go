package handlers

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestConcurrentPerRun: the core's per-run cap (its rule is tested in
// package gateway) answers busy as 429 with its outputId and Retry-After.
func TestConcurrentPerRun(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	g := newTestGateway(t, gatewayOptions{
		MaxConcurrentPerRun: 1,
		RunFunc:             loomtest.Gate(started, release),
	})
	id, token := g.createRun(t, `{}`)
	var wg sync.WaitGroup
	wg.Go(func() {
		if rec := g.call(id, token, "loom_search", `{"query":"plan"}`); rec.Code != http.StatusOK {
			t.Errorf("a call within the cap: %d %s", rec.Code, rec.Body)
		}
	})
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first call did not reach loom")
	}
	// (On a goroutine: a call let through would wait for the release.)
	third := make(chan *httptest.ResponseRecorder, 1)
	go func() { third <- g.call(id, token, "loom_search", `{"query":"plan"}`) }()
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-third:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("a call past the cap did not answer at once")
	}
	p := wantProblem(t, rec, http.StatusTooManyRequests, "busy")
	if p.OutputID != id+":loom_search:2" {
		t.Errorf("outputId = %q, want %s:loom_search:2", p.OutputID, id)
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("busy without Retry-After")
	}
	close(release)
	wg.Wait()
}
