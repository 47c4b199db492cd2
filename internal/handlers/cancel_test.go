package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestClientGoneMidCall: a client that goes away mid-call (the request's
// context ends) cancels the call: it answers 499 cancelled, is logged,
// and the run lives on.
func TestClientGoneMidCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	g := newTestGateway(t, gatewayOptions{RunFunc: loomtest.Block(started, loomtest.Fail(loom.ErrCancelled))})
	_, tok := g.createRun(t, `{"runId":"r"}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/runs/r/loom_search", strings.NewReader(`{"query":"atlas"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { g.agent.ServeHTTP(rec, req); close(done) }()
	<-started
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end after its client went away")
	}
	wantProblem(t, rec, 499, "cancelled")

	// The call is logged, and the run lives on.
	calls := g.calls(t, "r")
	if len(calls) != 1 || calls[0].Code == nil || *calls[0].Code != "cancelled" {
		t.Errorf("call log = %+v, want one cancelled call", calls)
	}
	wantStatus(t, g.hostDo(http.MethodGet, "/host/v1/runs/r", ""), http.StatusOK)
}
