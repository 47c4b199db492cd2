package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// TestCallLimit: a run whose call log holds MaxCallsPerRun calls refuses
// every further output (the eight tools and describe_handle) with
// call_limit_reached, before an output number is taken and before loom
// runs, and appends nothing; errors count as calls; each refusal is
// audited without an outputId; the result writer, which takes no
// outputId, is not refused; another run is unaffected.
func TestCallLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	type op struct{ op, input string }
	firsts := []struct {
		name  string
		calls [limit]op
		loom  int // loom processes the three calls start
	}{
		{"tools", [limit]op{
			{"loom_search", `{"query":"atlas"}`},
			{"loom_people", `{"query":"nobody@example.com"}`}, // not_found: an error output counts
			{"loom_profile", `{}`},
		}, 3},
		{"describe_handle", [limit]op{
			{"describe_handle", `{"token":"cfh:v:22222"}`},
			{"describe_handle", `{"token":"cfh:v:33333"}`},
			{"describe_handle", `{"token":"cfh:v:44444"}`},
		}, 0},
	}
	for _, tt := range firsts {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newTestCore(t, coreOptions{MaxCallsPerRun: limit})
			tok := c.createRun(t, "r")
			for i, o := range tt.calls {
				if _, err := c.call(ctx, "r", tok, o.op, o.input); err != nil && string(CodeOf(err)) != "not_found" {
					t.Fatalf("call %d, %s: %v", i+1, o.op, err)
				}
			}
			if n := len(c.fake.Calls()); n != tt.loom {
				t.Fatalf("loom ran %d times for the first %d calls, want %d", n, limit, tt.loom)
			}

			// The fourth output of every kind is refused, with no outputId.
			for _, o := range testkit.Outputs {
				_, err := c.call(ctx, "r", tok, o.Name, o.Input)
				wantError(t, err, "call_limit_reached", "")
			}
			if n := len(c.fake.Calls()); n != tt.loom {
				t.Errorf("loom ran %d times, want %d: a refused call started a process", n, tt.loom)
			}
			refused := 0
			for _, a := range c.logRecords(t, "audit") {
				if a["code"] != "call_limit_reached" {
					continue
				}
				refused++
				if _, ok := a["outputId"]; ok || a["runId"] != "r" || a["status"] != "error" {
					t.Errorf("audit of a refused call: %v", a)
				}
			}
			if refused != len(testkit.Outputs) {
				t.Errorf("%d refusals audited, want %d", refused, len(testkit.Outputs))
			}
			if calls := c.callLog(t, "r"); len(calls) != limit {
				t.Errorf("call log holds %d calls, want %d", len(calls), limit)
			}
			if run := c.run(t, "r"); run.Calls != limit || run.Seq != limit {
				t.Errorf("run: %d calls, output sequence %d; want %d each (a refused call took an output number)", run.Calls, run.Seq, limit)
			}

			// The result writer takes no outputId and is not counted.
			if _, err := c.call(ctx, "r", tok, "result", `{"note":"done"}`); err != nil {
				t.Errorf("result writer at the cap: %v", err)
			}

			// Another run has its own log.
			other := c.createRun(t, "other")
			if _, err := c.call(ctx, "other", other, "loom_search", `{"query":"atlas"}`); err != nil {
				t.Errorf("another run's call: %v", err)
			}
			if calls := c.callLog(t, "other"); len(calls) != 1 || calls[0].OutputID != "other:loom_search:1" || calls[0].Status != "ok" {
				t.Errorf("another run's call log: %+v", calls)
			}
		})
	}
}

// TestCallLimitZeroIsNoCap: MaxCallsPerRun 0 leaves the call log unbounded.
func TestCallLimitZeroIsNoCap(t *testing.T) {
	t.Parallel()
	c := newTestCore(t, coreOptions{})
	tok := c.createRun(t, "r")
	for range 20 {
		if _, err := c.call(context.Background(), "r", tok, "describe_handle", `{"token":"cfh:v:22222"}`); err != nil {
			t.Fatal(err)
		}
	}
	if calls := c.callLog(t, "r"); len(calls) != 20 {
		t.Errorf("call log holds %d calls, want 20", len(calls))
	}
}

// TestCallLimitExactUnderRace: calls racing past the run as Authenticate
// read it (none has finished, so the log is empty for all) are refused by
// their output number, so the log holds exactly the cap and loom runs that
// often.
func TestCallLimitExactUnderRace(t *testing.T) {
	t.Parallel()
	const limit, racers = 5, 40
	unblock := release(t)
	var arrived atomic.Int32
	c := newTestCore(t, coreOptions{
		MaxCallsPerRun: limit,
		RunFunc: func(ctx context.Context, argv, env []string) (loomref.Output, error) {
			arrived.Add(1)
			<-unblock
			return loomtest.Sample(ctx, argv, env)
		},
	})
	tok := c.createRun(t, "r")
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, errs[i] = c.call(context.Background(), "r", tok, "loom_search", `{"query":"atlas"}`)
		})
	}
	testkit.WaitFor(t, 5*time.Second, func() bool { return arrived.Load() >= limit })
	time.Sleep(300 * time.Millisecond) // room for more to arrive, were they let through
	close(unblock)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case string(CodeOf(err)) == "call_limit_reached":
		default:
			t.Errorf("a racing call answered %v", err)
		}
	}
	if calls := c.callLog(t, "r"); len(calls) != limit || ok != limit || arrived.Load() != limit {
		t.Errorf("call log holds %d calls, %d answered, loom ran %d times; want exactly %d each", len(calls), ok, arrived.Load(), limit)
	}
}
