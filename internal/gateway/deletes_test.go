package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
)

var _ DeleteWatcher = (*redisstore.Store)(nil)

// fakeWatcher is a DeleteWatcher the test drives: each function sent on
// events is called with the watch, on WatchDeletes' goroutine.
type fakeWatcher struct {
	events chan func(store.DeleteWatch)
}

func (f *fakeWatcher) WatchDeletes(ctx context.Context, w store.DeleteWatch) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-f.events:
			ev(w)
		}
	}
}

// send has the watch report ev and waits until it has.
func (f *fakeWatcher) send(t *testing.T, ev func(w store.DeleteWatch)) {
	t.Helper()
	done := make(chan struct{})
	select {
	case f.events <- func(w store.DeleteWatch) { ev(w); close(done) }:
	case <-time.After(5 * time.Second):
		t.Fatal("FollowDeletes is not watching")
	}
	<-done
}

// following starts c.FollowDeletes on a fake watcher, stopped (and
// required to return) at the test's end.
func following(t *testing.T, c *testCore) *fakeWatcher {
	t.Helper()
	f := &fakeWatcher{events: make(chan func(store.DeleteWatch))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.FollowDeletes(ctx, f)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("FollowDeletes did not return after its context ended")
		}
	})
	return f
}

// twoCallsInFlight starts a loom_search of run r and a loom_profile of run
// other, both blocked in the runner until cancelled.
func twoCallsInFlight(t *testing.T) (c *testCore, r, other <-chan answer) {
	t.Helper()
	started := make(chan struct{}, 1)
	c = newTestCore(t, coreOptions{RunFunc: loomtest.Block(started, loomtest.Fail(loom.ErrCancelled))})
	ctx := context.Background()
	tok, tokOther := c.createRun(t, "r"), c.createRun(t, "other")
	r = c.start(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
	<-started
	oc := c.start(ctx, "other", tokOther, "loom_profile", `{}`)
	<-started
	t.Cleanup(func() {
		// Let the other call end, whatever the test did.
		_ = c.DeleteRun(context.Background(), "other")
		<-oc
	})
	return c, r, oc
}

// TestFollowDeletes: a run deleted through another replica (here: deleted
// in the shared store behind the core's back, then reported by the watch)
// has its calls in flight refused cancelled, as a delete served here
// does; the calls of other runs go on.
func TestFollowDeletes(t *testing.T) {
	t.Parallel()
	c, r, other := twoCallsInFlight(t)
	f := following(t, c)

	// A run without calls here, and an id that is no run: nothing happens.
	f.send(t, func(w store.DeleteWatch) { w.Deleted("no-calls-here") })
	stillRunning(t, r, "run r's call")

	if err := c.store.DeleteRun(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	f.send(t, func(w store.DeleteWatch) { w.Deleted("r") })
	wantError(t, within(t, r).err, "cancelled", "r:loom_search:1")
	stillRunning(t, other, "run other's call")
	logs := c.logs.String()
	if !strings.Contains(logs, `"msg":"calls cancelled: run deleted through another replica","runId":"r","calls":1`) {
		t.Errorf("no log record of the cancellation:\n%s", logs)
	}
	if strings.Contains(logs, "no-calls-here") {
		t.Errorf("a delete of a run without calls here was logged:\n%s", logs)
	}
	// The audit record says cancelled, as for a delete served here.
	if !strings.Contains(logs, `"runId":"r","tool":"loom_search","outputId":"r:loom_search:1","status":"error","code":"cancelled"`) {
		t.Errorf("no audit record of the cancelled call:\n%s", logs)
	}
}

// TestFollowDeletesResubscribed: a delete made while the watch was down is
// never reported; when the watch subscribes again, the calls of runs that
// are gone are cancelled, those of live runs go on. The failures are logged
// once (warn), and no answer carries their text.
func TestFollowDeletesResubscribed(t *testing.T) {
	t.Parallel()
	c, r, other := twoCallsInFlight(t)
	f := following(t, c)
	f.send(t, func(w store.DeleteWatch) { w.Subscribed() })
	stillRunning(t, r, "run r's call")

	const marker = "redis-host-text-7f3a"
	for range 3 {
		f.send(t, func(w store.DeleteWatch) {
			w.Failed(fmt.Errorf("store: redis watch deletes: %w: dial tcp %s: refused", store.ErrStoreUnavailable, marker))
		})
	}
	if err := c.store.DeleteRun(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	stillRunning(t, r, "run r's call (its delete was not reported)")
	f.send(t, func(w store.DeleteWatch) { w.Subscribed() })
	wantError(t, within(t, r).err, "cancelled", "r:loom_search:1")
	stillRunning(t, other, "run other's call")

	logs := c.logs.String()
	if n := strings.Count(logs, `"level":"WARN","msg":"run delete watch failed`); n != 1 {
		t.Errorf("%d warnings for 3 failures in a row, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, `"msg":"run delete watch failed again"`); n != 2 {
		t.Errorf("%d debug records for the 2 repeated failures, want 2:\n%s", n, logs)
	}
	for _, want := range []string{`"code":"store_unavailable"`, `"msg":"run delete watch restored"`, `"msg":"calls cancelled: run gone","runId":"r","calls":1`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	// The failure text is the log's only: other runs are served as ever.
	// (The runners of the calls above read RunFunc before they started.)
	tok := c.createRun(t, "after")
	c.fake.RunFunc = loomtest.Sample
	body, err := c.call(context.Background(), "after", tok, "loom_search", `{"query":"atlas"}`)
	if err != nil || strings.Contains(string(body), marker) {
		t.Errorf("another run's call: %v %s", err, body)
	}
	runs, err := c.Runs(context.Background())
	if err != nil || strings.Contains(fmt.Sprint(runs), marker) {
		t.Errorf("Runs: %v %v", err, runs)
	}
}

// TestFollowDeletesStoreDown: at resubscription a run the store cannot be
// asked about keeps its calls.
func TestFollowDeletesStoreDown(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	down := &downStore{}
	c := newTestCore(t, coreOptions{
		RunFunc:   loomtest.Block(started, loomtest.Fail(loom.ErrCancelled)),
		WrapStore: func(m *memstore.Store) Store { down.Store = m; return down },
	})
	tok := c.createRun(t, "r")
	rc := c.start(context.Background(), "r", tok, "loom_search", `{"query":"atlas"}`)
	<-started
	f := following(t, c)
	down.down.Store(true)
	f.send(t, func(w store.DeleteWatch) { w.Subscribed() })
	stillRunning(t, rc, "run r's call")
	down.down.Store(false)
	if err := c.DeleteRun(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	wantError(t, within(t, rc).err, "cancelled", "r:loom_search:1")
}

// downStore answers ErrStoreUnavailable to Run while down is set.
type downStore struct {
	*memstore.Store
	down atomic.Bool
}

func (s *downStore) Run(ctx context.Context, id string) (store.Run, error) {
	if s.down.Load() {
		return store.Run{}, fmt.Errorf("test: %w", store.ErrStoreUnavailable)
	}
	return s.Store.Run(ctx, id)
}
