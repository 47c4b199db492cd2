package handlers

import (
	"context"
	"fmt"
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
	"github.com/loom-gateway/gateway/internal/store/redisstore"
)

var _ gateway.DeleteWatcher = (*redisstore.Store)(nil)

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

// following starts g.deps.FollowDeletes on a fake watcher, stopped (and
// required to return) at the test's end.
func following(t *testing.T, g *testGateway) *fakeWatcher {
	t.Helper()
	f := &fakeWatcher{events: make(chan func(store.DeleteWatch))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.deps.FollowDeletes(ctx, f)
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
func twoCallsInFlight(t *testing.T) (g *testGateway, r, other <-chan *httptest.ResponseRecorder) {
	t.Helper()
	started := make(chan struct{}, 1)
	g = newTestGateway(t, gatewayOptions{RunFunc: blockingLoom(started, loomtest.Fail(loom.ErrCancelled))})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	_, tokOther := g.createRun(t, `{"runId":"other"}`)
	rc, oc := make(chan *httptest.ResponseRecorder, 1), make(chan *httptest.ResponseRecorder, 1)
	go func() { rc <- g.call("r", tok, "loom_search", `{"query":"atlas"}`) }()
	<-started
	go func() { oc <- g.call("other", tokOther, "loom_profile", `{}`) }()
	<-started
	t.Cleanup(func() {
		// Let the other call end, whatever the test did.
		g.deps.cancelRun("other")
		<-oc
	})
	return g, rc, oc
}

// ended returns the call's answer, failing when it does not come within 5s.
func ended(t *testing.T, c <-chan *httptest.ResponseRecorder, what string) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case rec := <-c:
		return rec
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not end", what)
		return nil
	}
}

// stillRunning checks that the call has not ended.
func stillRunning(t *testing.T, c <-chan *httptest.ResponseRecorder, what string) {
	t.Helper()
	select {
	case rec := <-c:
		t.Fatalf("%s ended: %d %s", what, rec.Code, rec.Body)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestFollowDeletes: a run deleted through another replica (here: deleted
// in the shared store behind the handlers' back, then reported by the
// watch) has its calls in flight answer cancelled, as a DELETE served here
// does; the calls of other runs go on.
func TestFollowDeletes(t *testing.T) {
	t.Parallel()
	g, r, other := twoCallsInFlight(t)
	f := following(t, g)

	// A run without calls here, and an id that is no run: nothing happens.
	f.send(t, func(w store.DeleteWatch) { w.Deleted("no-calls-here") })
	stillRunning(t, r, "run r's call")

	if err := g.store.DeleteRun(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	f.send(t, func(w store.DeleteWatch) { w.Deleted("r") })
	p := wantProblem(t, ended(t, r, "run r's call"), 499, "cancelled")
	if p.OutputID != "r:loom_search:1" {
		t.Errorf("outputId = %q, want r:loom_search:1", p.OutputID)
	}
	stillRunning(t, other, "run other's call")
	logs := g.logs.String()
	if !strings.Contains(logs, `"msg":"calls cancelled: run deleted through another replica","runId":"r","calls":1`) {
		t.Errorf("no log record of the cancellation:\n%s", logs)
	}
	if strings.Contains(logs, "no-calls-here") {
		t.Errorf("a delete of a run without calls here was logged:\n%s", logs)
	}
	// The audit record says cancelled, as for a DELETE served here.
	if !strings.Contains(logs, `"runId":"r","tool":"loom_search","outputId":"r:loom_search:1","status":"error","code":"cancelled"`) {
		t.Errorf("no audit record of the cancelled call:\n%s", logs)
	}
}

// TestFollowDeletesResubscribed: a delete made while the watch was down is
// never reported; when the watch subscribes again, the calls of runs that
// are gone are cancelled, those of live runs go on. The failures are logged
// once (warn), with no response touched.
func TestFollowDeletesResubscribed(t *testing.T) {
	t.Parallel()
	g, r, other := twoCallsInFlight(t)
	f := following(t, g)
	f.send(t, func(w store.DeleteWatch) { w.Subscribed() })
	stillRunning(t, r, "run r's call")

	const marker = "redis-host-text-7f3a"
	for range 3 {
		f.send(t, func(w store.DeleteWatch) {
			w.Failed(fmt.Errorf("store: redis watch deletes: %w: dial tcp %s: refused", store.ErrStoreUnavailable, marker))
		})
	}
	if err := g.store.DeleteRun(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	stillRunning(t, r, "run r's call (its delete was not reported)")
	f.send(t, func(w store.DeleteWatch) { w.Subscribed() })
	wantProblem(t, ended(t, r, "run r's call"), 499, "cancelled")
	stillRunning(t, other, "run other's call")

	logs := g.logs.String()
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
	_, tok := g.createRun(t, `{"runId":"after"}`)
	g.fake.RunFunc = loomtest.Sample
	for _, rec := range []*httptest.ResponseRecorder{
		g.call("after", tok, "loom_search", `{"query":"atlas"}`),
		g.hostDo(http.MethodGet, "/host/v1/runs", ""),
	} {
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String()+fmt.Sprint(rec.Header()), marker) {
			t.Errorf("answer %d %s", rec.Code, rec.Body)
		}
	}
}

// TestFollowDeletesStoreDown: at resubscription a run the store cannot be
// asked about keeps its calls.
func TestFollowDeletesStoreDown(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	down := &downStore{}
	g := newTestGateway(t, gatewayOptions{
		RunFunc:   blockingLoom(started, loomtest.Fail(loom.ErrCancelled)),
		WrapStore: func(m *memstore.Store) gateway.Store { down.Store = m; return down },
	})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	rc := make(chan *httptest.ResponseRecorder, 1)
	go func() { rc <- g.call("r", tok, "loom_search", `{"query":"atlas"}`) }()
	<-started
	f := following(t, g)
	down.down.Store(true)
	f.send(t, func(w store.DeleteWatch) { w.Subscribed() })
	stillRunning(t, rc, "run r's call")
	down.down.Store(false)
	g.deps.cancelRun("r")
	wantProblem(t, ended(t, rc, "run r's call"), 499, "cancelled")
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
