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

// TestDeleteRunMidCall: the core's cancellation of a deleted run's call
// (its rule is tested in package gateway) answers 499 cancelled with the
// call's outputId; the run's token then answers 410 run_ended.
func TestDeleteRunMidCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	g := newTestGateway(t, gatewayOptions{RunFunc: loomtest.Block(started, loomtest.Fail(loom.ErrCancelled))})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- g.call("r", tok, "loom_search", `{"query":"atlas"}`) }()
	<-started
	wantStatus(t, g.hostDo(http.MethodDelete, "/host/v1/runs/r", ""), http.StatusNoContent)
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end after its run was deleted")
	}
	p := wantProblem(t, rec, 499, "cancelled")
	if p.OutputID != "r:loom_search:1" {
		t.Errorf("outputId = %q, want r:loom_search:1", p.OutputID)
	}
	wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), 410, "run_ended")
}

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
