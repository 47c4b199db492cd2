package gateway

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
)

// TestDeleteRunMidCall: deleting a run cancels its call in flight,
// whatever the runner then answers: the call is refused cancelled (the
// one cancellation cause) with its outputId; a call of another run in
// flight goes on; the deleted run's token then answers run_ended.
func TestDeleteRunMidCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		afterCancel func(context.Context, []string, []string) (loomref.Output, error)
	}{
		{"runner reports cancellation", loomtest.Fail(loom.ErrCancelled)},
		{"runner reports its context error", func(ctx context.Context, _, _ []string) (loomref.Output, error) {
			return loomref.Output{ExitCode: -1}, ctx.Err()
		}},
		{"runner answers anyway", loomtest.Sample},
		{"runner answers nothing to mint anyway", loomtest.Reply(`{"hits":[]}`, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{}, 1)
			c := newTestCore(t, coreOptions{RunFunc: loomtest.Block(started, tt.afterCancel)})
			ctx := context.Background()
			tok, tokOther := c.createRun(t, "r"), c.createRun(t, "other")

			done := c.start(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
			<-started
			otherDone := c.start(ctx, "other", tokOther, "loom_profile", `{}`)
			<-started

			if err := c.DeleteRun(ctx, "r"); err != nil {
				t.Fatal(err)
			}
			wantError(t, within(t, done).err, "cancelled", "r:loom_search:1")
			stillRunning(t, otherDone, "run other's call")
			if err := c.DeleteRun(ctx, "other"); err != nil {
				t.Fatal(err)
			}
			wantError(t, within(t, otherDone).err, "cancelled", "other:loom_profile:1")
			// The token is dead now, and told so.
			_, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
			wantError(t, err, "run_ended", "")
		})
	}
}

// TestClientGoneMidCall: a call whose context ends (its client went away)
// is refused cancelled with its outputId and recorded so; the run lives on.
func TestClientGoneMidCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	c := newTestCore(t, coreOptions{RunFunc: loomtest.Block(started, loomtest.Fail(loom.ErrCancelled))})
	tok := c.createRun(t, "r")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := c.start(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
	<-started
	cancel()
	wantError(t, within(t, done).err, "cancelled", "r:loom_search:1")

	calls := c.callLog(t, "r")
	if len(calls) != 1 || calls[0].Code != "cancelled" || calls[0].Status != "error" || calls[0].OutputID != "r:loom_search:1" {
		t.Errorf("call log = %+v, want one cancelled call", calls)
	}
	if _, err := c.Run(context.Background(), "r"); err != nil {
		t.Errorf("the run after its client went away: %v", err)
	}
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
// cancels nothing): the call is refused cancelled all the same, as any
// call whose run is deleted mid-call, because what it finds cannot be
// kept for a run that is gone.
func TestRunDeletedAfterBegin(t *testing.T) {
	t.Parallel()
	var c *testCore
	hs := &hookedStore{id: "r", at: 1}
	hs.hook = func() {
		if err := c.DeleteRun(context.Background(), "r"); err != nil {
			t.Errorf("DeleteRun: %v", err)
		}
	}
	c = newTestCore(t, coreOptions{WrapStore: func(m *memstore.Store) Store {
		hs.Store = m
		return hs
	}})
	tok := c.createRun(t, "r")
	_, err := c.call(context.Background(), "r", tok, "loom_search", `{"query":"atlas"}`)
	wantError(t, err, "cancelled", "r:loom_search:1")
}
