package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// coreOptions configures newTestCore. The zero value is a core over the
// sample loom and a memory store, offering every tool, with no caps.
type coreOptions struct {
	// RunFunc answers loom calls; nil means loomtest.Sample.
	RunFunc func(ctx context.Context, argv, env []string) (loomref.Output, error)
	// MaxCallsPerRun, MaxLabelClauses (in the core and the store) and
	// MaxConcurrentPerRun are the caps of Config.
	MaxCallsPerRun      int
	MaxLabelClauses     int
	MaxConcurrentPerRun int
	// Slots and CommandTimeout bound the loom stage (Config).
	Slots          *loom.Limiter
	CommandTimeout time.Duration
	// WrapStore, when set, wraps the memory store the core uses.
	WrapStore func(*memstore.Store) Store
	// Receipts is Config.Receipts; its Chains, when nil, the memory store.
	Receipts *Receipts
}

// testCore is a core, its store, its fake loom and its JSON log.
type testCore struct {
	*Service
	store *memstore.Store
	fake  *loomtest.Fake
	logs  *testkit.Buffer
	// beforeMeasure, when set, is Config.BeforeMeasure; it may change
	// at any time.
	beforeMeasure atomic.Pointer[func(stage context.Context)]
}

func newTestCore(t testing.TB, o coreOptions) *testCore {
	t.Helper()
	st := memstore.New(memstore.Options{MaxLabelClauses: o.MaxLabelClauses})
	fake := &loomtest.Fake{RunFunc: o.RunFunc}
	if fake.RunFunc == nil {
		fake.RunFunc = loomtest.Sample
	}
	var rs Store = st
	if o.WrapStore != nil {
		rs = o.WrapStore(st)
	}
	cfg := &loom.Config{CLIPath: "/usr/bin/loom", Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: "/srv/loom", RunID: "t"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := &testCore{store: st, fake: fake, logs: &testkit.Buffer{}}
	if o.Receipts != nil && o.Receipts.Chains == nil {
		o.Receipts.Chains = st
	}
	c.Service = New(Config{
		Receipts:            o.Receipts,
		Store:               rs,
		Runner:              fake,
		Loom:                cfg,
		Env:                 loom.Env(cfg, "/usr/bin:/bin", true),
		Tools:               loom.Tools,
		Slots:               o.Slots,
		CommandTimeout:      o.CommandTimeout,
		MaxCallsPerRun:      o.MaxCallsPerRun,
		MaxLabelClauses:     o.MaxLabelClauses,
		MaxConcurrentPerRun: o.MaxConcurrentPerRun,
		Logger:              slog.New(slog.NewJSONHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		BeforeMeasure: func(stage context.Context) {
			if f := c.beforeMeasure.Load(); f != nil {
				(*f)(stage)
			}
		},
	})
	return c
}

// setBeforeMeasure sets the hook run just before a call's output is
// measured; nil removes it.
func (c *testCore) setBeforeMeasure(f func(stage context.Context)) {
	if f == nil {
		c.beforeMeasure.Store(nil)
		return
	}
	c.beforeMeasure.Store(&f)
}

// createRun creates run id and returns its token.
func (c *testCore) createRun(t testing.TB, id string) string {
	t.Helper()
	created, err := c.CreateRun(context.Background(), RunSpec{ID: &id})
	if err != nil {
		t.Fatalf("CreateRun(%s): %v", id, err)
	}
	return created.Token
}

// call authenticates token for run id, as a face does for each request,
// and calls the operation: one of the eight tools, describe_handle or
// result. It returns the answer's body.
func (c *testCore) call(ctx context.Context, id, token, op, input string) ([]byte, error) {
	run, err := c.Authenticate(ctx, id, token)
	if err != nil {
		return nil, err
	}
	switch op {
	case "describe_handle":
		var in struct{ Token string }
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return nil, err
		}
		d, err := c.Describe(ctx, run, in.Token)
		if err != nil {
			return nil, err
		}
		return json.Marshal(d)
	case "result":
		w, err := c.WriteResult(ctx, run, []byte(input))
		if err != nil {
			return nil, err
		}
		return json.Marshal(w)
	}
	return c.Call(ctx, run, loom.Tool(op), []byte(input))
}

// run reads run id from the store.
func (c *testCore) run(t testing.TB, id string) store.Run {
	t.Helper()
	r, err := c.store.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("Run(%s): %v", id, err)
	}
	return r
}

// callLog is run id's call log.
func (c *testCore) callLog(t testing.TB, id string) []store.Call {
	t.Helper()
	calls, _, err := c.CallsPage(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatalf("CallsPage(%s): %v", id, err)
	}
	return calls
}

// logRecords are the core's log records with message msg.
func (c *testCore) logRecords(t testing.TB, msg string) []map[string]any {
	t.Helper()
	return testkit.LogRecords(t, c.logs.String(), msg, false)
}

// wantError fails t unless err is classified with code and carries
// outputID ("" for none).
func wantError(t testing.TB, err error, code, outputID string) {
	t.Helper()
	e, ok := errors.AsType[*Error](err)
	if !ok {
		if string(CodeOf(err)) == code && outputID == "" {
			return
		}
		t.Fatalf("error %v (code %s), want %s with outputId %q", err, CodeOf(err), code, outputID)
	}
	if string(e.Code) != code || e.OutputID != outputID {
		t.Fatalf("error %s with outputId %q (%v), want %s with outputId %q", e.Code, e.OutputID, e.Err, code, outputID)
	}
}

// label is run id's model-context label.
func (c *testCore) label(t testing.TB, id string) ifc.Confidentiality {
	t.Helper()
	return c.run(t, id).ModelContext
}

// answer is what a call started on a goroutine answered.
type answer struct {
	body []byte
	err  error
}

// start runs the call on a goroutine and returns where its answer comes.
func (c *testCore) start(ctx context.Context, id, token, op, input string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		body, err := c.call(ctx, id, token, op, input)
		ch <- answer{body, err}
	}()
	return ch
}

// within receives from ch, failing t after 5s.
func within[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received within 5s")
	}
	var zero T
	return zero
}

// stillRunning fails t if the call answers within 50ms.
func stillRunning(t testing.TB, ch <-chan answer, what string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s ended: %s %v", what, a.body, a.err)
	case <-time.After(50 * time.Millisecond):
	}
}

// release returns a channel that the test closes, or else its cleanup
// does, so that no hook waiting on it outlives a failed test.
func release(t testing.TB) chan struct{} {
	ch := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-ch:
		default:
			close(ch)
		}
	})
	return ch
}
