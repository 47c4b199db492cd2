package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
)

// TestConcurrentPerRunShared: the cap on a run's calls in flight is the
// store's, so two cores on one store (two replicas) share it: with a call
// of the run held in flight on one, a call on the other answers busy with
// its outputId and runs no loom; describe_handle is not capped; once the
// held call ends, the other core calls again.
func TestConcurrentPerRunShared(t *testing.T) {
	t.Parallel()
	unblock := release(t)
	started := make(chan struct{}, 8)
	a := newTestCore(t, coreOptions{MaxConcurrentPerRun: 1, RunFunc: loomtest.Gate(started, unblock)})
	b := a.replica(loomtest.Sample)
	ctx := context.Background()
	tok := a.createRun(t, "r")
	const search = `{"query":"plan"}`
	held := a.start(ctx, "r", tok, "loom_search", search)
	within(t, started)

	_, err := b.call(ctx, "r", tok, "loom_search", search)
	wantError(t, err, "busy", "r:loom_search:2")
	if n := len(b.fake.Calls()); n != 0 {
		t.Errorf("the refused call ran loom %d times", n)
	}
	if _, err := b.call(ctx, "r", tok, "describe_handle", `{"token":"nope"}`); err != nil {
		t.Errorf("describe_handle beside a call in flight: %v", err)
	}

	close(unblock)
	if got := within(t, held); got.err != nil {
		t.Fatalf("the held call: %v", got.err)
	}
	if _, err := b.call(ctx, "r", tok, "loom_search", search); err != nil {
		t.Errorf("a call once the held one ended: %v", err)
	}
}

// replica is another core on c's store and configuration, with a loom of
// its own.
func (c *testCore) replica(run func(ctx context.Context, argv, env []string) (loomref.Output, error)) *testCore {
	fake := &loomtest.Fake{RunFunc: run}
	cfg := c.cfg
	cfg.Runner = fake
	return &testCore{Service: New(cfg), store: c.store, fake: fake, logs: c.logs}
}

// marked reports whether run id holds an in-flight mark, under a cap of
// one: it begins an output with a mark and gives it back.
func marked(t *testing.T, st store.Store, id string) bool {
	t.Helper()
	ctx := context.Background()
	r, err := st.Begin(ctx, id, store.Begin{MaxInFlight: 1, Lease: time.Hour})
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if !r.Marked {
		return true
	}
	if err := st.Release(ctx, id, r.Seq); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestInFlightReleased: every way a call that took an in-flight mark
// ends gives the mark back: an answer, each refusal and failure after
// Begin (the record's store step gives it back), and a call whose
// ending store step failed or that panicked (Release).
func TestInFlightReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tools := []string{"loom_people"}
	for _, tt := range []struct {
		name  string
		run   func(ctx context.Context, argv, env []string) (loomref.Output, error)
		ctx   context.Context
		tools *[]string
		code  string
	}{
		{name: "answered", run: loomtest.Sample},
		{name: "not configured for the run", run: loomtest.Sample, tools: &tools, code: "not_configured"},
		{name: "cancelled", run: loomtest.Sample, ctx: cancelled, code: "cancelled"},
		{name: "command failed", run: loomtest.Reply("", 3), code: "command_failed"},
		{name: "no JSON document", run: loomtest.Reply(`[1,`, 0), code: "command_failed"},
		{name: "process error", run: loomtest.Fail(loom.ErrTimeout), code: "command_failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCore(t, coreOptions{MaxConcurrentPerRun: 1, RunFunc: tt.run})
			id := "r"
			created, err := c.CreateRun(ctx, RunSpec{ID: &id, Tools: tt.tools})
			if err != nil {
				t.Fatal(err)
			}
			callCtx := ctx
			if tt.ctx != nil {
				callCtx = tt.ctx
			}
			run, err := c.Authenticate(ctx, id, created.Token)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Call(callCtx, run, "loom_search", []byte(`{"query":"plan"}`))
			if tt.code == "" && err != nil {
				t.Fatalf("call: %v", err)
			}
			if tt.code != "" {
				wantError(t, err, tt.code, "r:loom_search:1")
			}
			if marked(t, c.store, id) {
				t.Error("the call's in-flight mark is still held")
			}
			if n := len(c.callLog(t, id)); n != 1 {
				t.Errorf("call log holds %d records, want 1", n)
			}
		})
	}
}

// failingFinish is a store whose Finish fails as an unreachable (or full)
// Redis does, and that records its Releases.
type failingFinish struct {
	*memstore.Store
	mu       sync.Mutex
	released []int64
}

func (s *failingFinish) Finish(context.Context, string, store.Finish) ([]string, error) {
	return nil, fmt.Errorf("finish: %w", store.ErrStoreUnavailable)
}

func (s *failingFinish) AppendCall(context.Context, string, store.Call) error {
	return fmt.Errorf("append: %w", store.ErrStoreUnavailable)
}

func (s *failingFinish) Release(ctx context.Context, id string, mark int64) error {
	s.mu.Lock()
	s.released = append(s.released, mark)
	s.mu.Unlock()
	return s.Store.Release(ctx, id, mark)
}

// TestInFlightReleasedWithoutFinish: a call whose ending store steps fail
// (the record refused, as a full Redis refuses it) gives its mark back
// with one Release; so does a call that panics. A call that ended with
// Finish sends no Release.
func TestInFlightReleasedWithoutFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var ff *failingFinish
	c := newTestCore(t, coreOptions{MaxConcurrentPerRun: 1, WrapStore: func(m *memstore.Store) Store {
		ff = &failingFinish{Store: m}
		return ff
	}})
	tok := c.createRun(t, "r")
	_, err := c.call(ctx, "r", tok, "loom_search", `{"query":"plan"}`)
	wantError(t, err, "store_unavailable", "r:loom_search:1")
	if !slices.Equal(ff.released, []int64{1}) {
		t.Errorf("Releases = %v, want [1]", ff.released)
	}
	if marked(t, c.store, "r") {
		t.Error("the mark is still held")
	}

	p := newTestCore(t, coreOptions{MaxConcurrentPerRun: 1, RunFunc: func(context.Context, []string, []string) (loomref.Output, error) {
		panic("loom runner bug")
	}})
	tok = p.createRun(t, "r")
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the call did not panic")
			}
		}()
		_, _ = p.call(ctx, "r", tok, "loom_search", `{"query":"plan"}`)
	}()
	if marked(t, p.store, "r") {
		t.Error("the panicked call's mark is still held")
	}
}

// TestLease: a call's in-flight lease is its longest life: the wait for
// a slot, the loom stage and a grace.
func TestLease(t *testing.T) {
	t.Parallel()
	slots := loom.NewLimiter(1, time.Second)
	for _, tt := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"timeout and wait", Config{CommandTimeout: 10 * time.Second, Slots: slots, BusyWait: 3 * time.Second}, 13*time.Second + leaseGrace},
		{"default wait", Config{CommandTimeout: 10 * time.Second, Slots: slots}, 10*time.Second + loom.DefaultQueueWait + leaseGrace},
		{"no wait", Config{CommandTimeout: 10 * time.Second, Slots: slots, BusyWait: -1}, 10*time.Second + leaseGrace},
		{"no slots", Config{CommandTimeout: 10 * time.Second, BusyWait: time.Minute}, 10*time.Second + leaseGrace},
		{"the runner's timeout", Config{}, loom.DefaultTimeout + leaseGrace},
	} {
		if got := New(tt.cfg).lease(); got != tt.want {
			t.Errorf("%s: lease = %v, want %v", tt.name, got, tt.want)
		}
	}
}
