package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/store"
)

// Watcher is a store that reports the runs deleted through the other
// stores sharing its backend (store.DeleteWatch), as redisstore.Store does.
type Watcher interface {
	Store
	WatchDeletes(ctx context.Context, w store.DeleteWatch)
}

// NewReplicasFunc returns two stores on one new, empty backend, as two
// replicas of one deployment hold them (for Redis: two clients, one fresh
// prefix), on the wall clock and without a run limit.
type NewReplicasFunc func(t *testing.T) (a, b Watcher)

// RunWatch runs the conformance suite of WatchDeletes: a delete through
// one store is reported to the others' watches, exactly once and not to
// its own; a delete that deletes nothing, or an expiry, reports nothing;
// the watch returns when its context ends.
//
// Reports are compared in any order: on a Redis Cluster the deletes of
// runs on different shards may arrive in another order than they were
// made. That a delete is not reported is checked by waiting for the
// reports that must come, then settle longer: on one Redis server a report
// that must not come would have come before a later one of the same store.
func RunWatch(t *testing.T, newReplicas NewReplicasFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b Watcher)
	}{
		{"OthersDeletes", testWatchOthersDeletes},
		{"NothingDeleted", testWatchNothingDeleted},
		{"RunIDsAsIs", testWatchRunIDsAsIs},
		{"ConcurrentDeletes", testWatchConcurrentDeletes},
		{"StopsWithContext", testWatchStops},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := newReplicas(t)
			if a == nil || b == nil {
				t.Fatal("newReplicas returned nil")
			}
			tt.fn(t, a, b)
		})
	}
}

// watchRecord is what one watch reported.
type watchRecord struct {
	mu         sync.Mutex
	deleted    []string
	subscribed int
	failed     []error
	changed    chan struct{} // a token after every report
	done       chan struct{} // closed when WatchDeletes returned
}

// watch starts s.WatchDeletes until cancel (or the test's end, which also
// requires it to return within 5s) and waits for its first subscription.
func watch(t *testing.T, s Watcher) (rec *watchRecord, cancel func()) {
	t.Helper()
	rec = &watchRecord{changed: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	note := func(f func()) {
		rec.mu.Lock()
		f()
		rec.mu.Unlock()
		select {
		case rec.changed <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(rec.done)
		s.WatchDeletes(ctx, store.DeleteWatch{
			Deleted:    func(id string) { note(func() { rec.deleted = append(rec.deleted, id) }) },
			Subscribed: func() { note(func() { rec.subscribed++ }) },
			Failed:     func(err error) { note(func() { rec.failed = append(rec.failed, err) }) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-rec.done:
		case <-time.After(5 * time.Second):
			t.Error("WatchDeletes did not return within 5s of its context's end")
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, err := range rec.failed {
			t.Logf("watch failure: %v", err)
		}
	})
	rec.wait(t, "the first subscription", func() bool { return rec.subscribed > 0 })
	return rec, cancel
}

// wait waits up to 10s for cond, read under the record's lock.
func (r *watchRecord) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("waiting for %s: reported deleted %q, %d subscriptions, failures %v", what, r.deleted, r.subscribed, r.failed)
		}
	}
}

// settle is how long the suite waits for a report that must not come,
// after the ones that must.
const settle = 100 * time.Millisecond

// reported waits for n reports, and settle more, then returns every id
// reported so far, sorted.
func (r *watchRecord) reported(t *testing.T, n int) []string {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d deletes reported", n), func() bool { return len(r.deleted) >= n })
	time.Sleep(settle)
	r.mu.Lock()
	defer r.mu.Unlock()
	got := slices.Clone(r.deleted)
	slices.Sort(got)
	return got
}

// liveRun creates a run of an hour on s.
func liveRun(t *testing.T, s Store, id string) {
	t.Helper()
	now := time.Now().Truncate(time.Millisecond)
	create(t, s, store.Run{ID: id, TokenHash: store.HashToken("watch-token-" + id), CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
}

// del deletes a live run through s.
func del(t *testing.T, s Store, id string) {
	t.Helper()
	if err := s.DeleteRun(context.Background(), id); err != nil {
		t.Fatalf("DeleteRun(%q) = %v", id, err)
	}
}

// testWatchOthersDeletes: a's delete reaches b, b's reaches a, and no
// watch reports its own store's deletes.
func testWatchOthersDeletes(t *testing.T, a, b Watcher) {
	ra, _ := watch(t, a)
	rb, _ := watch(t, b)
	for _, id := range []string{"by-a", "by-b", "by-a-again"} {
		liveRun(t, a, id)
	}
	del(t, a, "by-a")
	if got := rb.reported(t, 1); !slices.Equal(got, []string{"by-a"}) {
		t.Errorf("b reported %q, want [by-a]", got)
	}
	del(t, b, "by-b") // through the other store: the run is shared
	if got := ra.reported(t, 1); !slices.Equal(got, []string{"by-b"}) {
		t.Errorf("a reported %q, want [by-b] (not its own delete of by-a)", got)
	}
	del(t, a, "by-a-again")
	if got := rb.reported(t, 2); !slices.Equal(got, []string{"by-a", "by-a-again"}) {
		t.Errorf("b reported %q, want [by-a by-a-again] (not its own delete of by-b)", got)
	}
	// A run deleted, created again under the same id and deleted again is
	// reported twice.
	liveRun(t, a, "by-a")
	del(t, a, "by-a")
	if got := rb.reported(t, 3); !slices.Equal(got, []string{"by-a", "by-a", "by-a-again"}) {
		t.Errorf("b reported %q, want [by-a by-a by-a-again]", got)
	}
	if got := ra.reported(t, 1); !slices.Equal(got, []string{"by-b"}) {
		t.Errorf("a reported %q, want [by-b] (not its own deletes)", got)
	}
}

// testWatchNothingDeleted: deleting an unknown, already deleted or expired
// run deletes nothing and reports nothing.
func testWatchNothingDeleted(t *testing.T, a, b Watcher) {
	rb, _ := watch(t, b)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	create(t, a, store.Run{ID: "expires", TokenHash: store.HashToken("expires"), CreatedAt: now, ExpiresAt: now.Add(200 * time.Millisecond)})
	liveRun(t, a, "twice")
	liveRun(t, a, "sentinel")
	del(t, a, "twice")
	wantErr(t, "DeleteRun of a deleted run", a.DeleteRun(ctx, "twice"), store.ErrRunNotFound)
	wantErr(t, "DeleteRun of an unknown run", a.DeleteRun(ctx, "unknown"), store.ErrRunNotFound)
	time.Sleep(time.Until(now.Add(300 * time.Millisecond)))
	wantErr(t, "DeleteRun of an expired run", a.DeleteRun(ctx, "expires"), store.ErrRunNotFound)
	del(t, a, "sentinel")
	if got := rb.reported(t, 2); !slices.Equal(got, []string{"sentinel", "twice"}) {
		t.Errorf("b reported %q, want [sentinel twice]", got)
	}
}

// testWatchRunIDsAsIs: run ids come back byte for byte, whatever they
// hold (the host API allows [A-Za-z0-9._-]{1,128}; the store takes any).
func testWatchRunIDsAsIs(t *testing.T, a, b Watcher) {
	rb, _ := watch(t, b)
	ids := []string{
		"run-7",
		"a.b_c-D9",
		strings.Repeat("x", 128),
		"with space and: colon",
		"ünïcödé",
		" leading-space",
	}
	for _, id := range ids {
		liveRun(t, a, id)
		del(t, a, id)
	}
	slices.Sort(ids)
	if diff := cmp.Diff(ids, rb.reported(t, len(ids))); diff != "" {
		t.Errorf("b reported (-want +got):\n%s", diff)
	}
}

// testWatchConcurrentDeletes: runs deleted at once through both stores
// are each reported once, to the other store's watch only.
func testWatchConcurrentDeletes(t *testing.T, a, b Watcher) {
	ra, _ := watch(t, a)
	rb, _ := watch(t, b)
	const n = 40
	var byA, byB []string
	for i := range n {
		id := fmt.Sprintf("run-%02d", i)
		liveRun(t, a, id)
		if i%2 == 0 {
			byA = append(byA, id)
		} else {
			byB = append(byB, id)
		}
	}
	errs := make([]error, n)
	parallel(n, func(i int) {
		s := []Watcher{a, b}[i%2]
		errs[i] = s.DeleteRun(context.Background(), fmt.Sprintf("run-%02d", i))
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(byA, rb.reported(t, len(byA))); diff != "" {
		t.Errorf("b reported (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(byB, ra.reported(t, len(byB))); diff != "" {
		t.Errorf("a reported (-want +got):\n%s", diff)
	}
}

// testWatchStops: WatchDeletes returns soon after its context ends, and a
// delete after that is reported to no one and fails nothing.
func testWatchStops(t *testing.T, a, b Watcher) {
	rb, cancel := watch(t, b)
	cancel()
	select {
	case <-rb.done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchDeletes did not return within 5s of its context's end")
	}
	liveRun(t, a, "after")
	del(t, a, "after")
	// A new watch on the same store works.
	rb2, _ := watch(t, b)
	liveRun(t, a, "again")
	del(t, a, "again")
	// A Redis Cluster forwards a PUBLISH from the run's shard to the
	// channel's node over its bus, later than DeleteRun returns, so a
	// watch that starts just after a delete may still hear of it (a late
	// report of a run already gone); nothing else may reach it.
	if got := rb2.reported(t, 1); !slices.Equal(got, []string{"again"}) && !slices.Equal(got, []string{"after", "again"}) {
		t.Errorf("the second watch reported %q, want [again] (or [after again], late)", got)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if len(rb.deleted) != 0 {
		t.Errorf("the stopped watch reported %q", rb.deleted)
	}
}
