package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
)

// blockingLoom is a runner that reports when a call started and then waits
// for the call's context, as loom.CLI does with a process it kills.
// afterCancel is what it answers once the context is done.
func blockingLoom(started chan<- struct{}, afterCancel func(ctx context.Context, argv, env []string) (loom.Output, error)) func(context.Context, []string, []string) (loom.Output, error) {
	return func(ctx context.Context, argv, env []string) (loom.Output, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			return loom.Output{}, loom.ErrTimeout
		}
		return afterCancel(ctx, argv, env)
	}
}

func TestDeleteRunMidCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		afterCancel func(context.Context, []string, []string) (loom.Output, error)
	}{
		{"runner reports cancellation", loomtest.Fail(loom.ErrCancelled)},
		{"runner reports its context error", func(ctx context.Context, _, _ []string) (loom.Output, error) {
			return loom.Output{ExitCode: -1}, ctx.Err()
		}},
		{"runner answers anyway", loomtest.Sample},
		{"runner answers nothing to mint anyway", loomtest.Reply(`{"hits":[]}`, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{}, 1)
			g := newTestGateway(t, gatewayOptions{RunFunc: blockingLoom(started, tt.afterCancel)})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			_, tokOther := g.createRun(t, `{"runId":"other"}`)

			done := make(chan *httptest.ResponseRecorder, 1)
			go func() { done <- g.call("r", tok, "loom_search", `{"query":"atlas"}`) }()
			// A call of another run in flight is not touched.
			otherDone := make(chan *httptest.ResponseRecorder, 1)
			<-started
			go func() { otherDone <- g.call("other", tokOther, "loom_profile", `{}`) }()
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
			select {
			case rec := <-otherDone:
				t.Fatalf("deleting run r ended run other's call: %d %s", rec.Code, rec.Body)
			case <-time.After(50 * time.Millisecond):
			}
			wantStatus(t, g.hostDo(http.MethodDelete, "/host/v1/runs/other", ""), http.StatusNoContent)
			wantProblem(t, <-otherDone, 499, "cancelled")
			// The token is dead now, and told so.
			wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), 410, "run_ended")
		})
	}
}

func TestClientGoneMidCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	g := newTestGateway(t, gatewayOptions{RunFunc: blockingLoom(started, loomtest.Fail(loom.ErrCancelled))})
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

// hookedStore calls hook after the n-th Begin of the run it watches.
type hookedStore struct {
	*memstore.Store
	id   string
	n    atomic.Int32
	at   int32
	hook func()
}

func (s *hookedStore) Begin(ctx context.Context, id string, b store.Begin) (store.Run, error) {
	r, err := s.Store.Begin(ctx, id, b)
	if id == s.id && s.n.Add(1) == s.at {
		s.hook()
	}
	return r, err
}

// TestRunDeletedAfterBegin deletes the run just after the call took its
// output number, before it is registered as in flight (so the delete
// cancels nothing): the call answers cancelled all the same, as any call
// whose run is deleted mid-call, because what it finds cannot be kept for
// a run that is gone.
func TestRunDeletedAfterBegin(t *testing.T) {
	t.Parallel()
	var g *testGateway
	hs := &hookedStore{id: "r", at: 1}
	hs.hook = func() {
		if rec := g.hostDo(http.MethodDelete, "/host/v1/runs/r", ""); rec.Code != http.StatusNoContent {
			t.Errorf("DELETE = %d %s", rec.Code, rec.Body)
		}
	}
	g = newTestGateway(t, gatewayOptions{WrapStore: func(m *memstore.Store) gateway.Store {
		hs.Store = m
		return hs
	}})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	p := wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), 499, "cancelled")
	if p.OutputID != "r:loom_search:1" {
		t.Errorf("outputId = %q, want r:loom_search:1", p.OutputID)
	}
}
