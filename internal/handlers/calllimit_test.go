package handlers

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestCallLimit: a run whose call log holds MaxCallsPerRun calls refuses
// every further output (the eight tools and describe_handle) with
// call_limit_reached, before an output number is taken and before loom
// runs, and appends nothing; errors count as calls; the result writer,
// which takes no outputId, is not refused; another run is unaffected.
func TestCallLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	firsts := []struct {
		name  string
		calls [limit]struct{ op, body string }
		loom  int // loom processes the three calls start
	}{
		{"tools", [limit]struct{ op, body string }{
			{"loom_search", `{"query":"atlas"}`},
			{"loom_people", `{"query":"nobody@example.com"}`}, // not_found: an error output counts
			{"loom_profile", `{}`},
		}, 3},
		{"describe_handle", [limit]struct{ op, body string }{
			{"describe_handle", `{"token":"cfh:v:22222"}`},
			{"describe_handle", `{"token":"cfh:v:33333"}`},
			{"describe_handle", `{"token":"cfh:v:44444"}`},
		}, 0},
	}
	for _, tt := range firsts {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{MaxCallsPerRun: limit})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			for _, c := range tt.calls {
				if rec := g.call("r", tok, c.op, c.body); rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
					t.Fatalf("%s = %d %s, want an answer with an outputId", c.op, rec.Code, rec.Body)
				}
			}
			if n := len(g.fake.Calls()); n != tt.loom {
				t.Fatalf("loom ran %d times for the first %d calls, want %d", n, limit, tt.loom)
			}

			// The fourth output of every kind is refused, with no outputId.
			for _, r := range agentRoutes {
				if r.op == "result" {
					continue
				}
				p := wantProblem(t, g.call("r", tok, r.op, r.body), http.StatusConflict, "call_limit_reached")
				if p.OutputID != "" {
					t.Errorf("%s: outputId = %q on a refused call, want none", r.op, p.OutputID)
				}
			}
			if n := len(g.fake.Calls()); n != tt.loom {
				t.Errorf("loom ran %d times, want %d: a refused call started a process", n, tt.loom)
			}
			// Each refusal is audited, without an outputId.
			refused := 0
			for _, a := range logRecords(t, g, "audit") {
				if a["code"] != "call_limit_reached" {
					continue
				}
				refused++
				if _, ok := a["outputId"]; ok || a["runId"] != "r" || a["status"] != "error" {
					t.Errorf("audit of a refused call: %v", a)
				}
			}
			if want := len(agentRoutes) - 1; refused != want {
				t.Errorf("%d refusals audited, want %d", refused, want)
			}
			if calls := g.calls(t, "r"); len(calls) != limit {
				t.Errorf("call log holds %d calls, want %d", len(calls), limit)
			}
			if s := g.summary(t, "r"); s.Calls != limit {
				t.Errorf("summary calls = %d, want %d", s.Calls, limit)
			}
			if run, err := g.store.Run(context.Background(), "r"); err != nil || run.Seq != limit {
				t.Errorf("output sequence = %d, %v; want %d: a refused call took an output number", run.Seq, err, limit)
			}

			// The result writer takes no outputId and is not counted.
			wantStatus(t, g.call("r", tok, "result", `{"value":{"note":"done"}}`), http.StatusCreated)

			// Another run has its own log.
			_, other := g.createRun(t, `{"runId":"other"}`)
			rec := g.call("other", other, "loom_search", `{"query":"atlas"}`)
			wantStatus(t, rec, http.StatusOK)
			checkResult(t, rec.Body.Bytes(), "other:loom_search:1", "search", true)
		})
	}
}

// TestCallLimitZeroIsNoCap: MaxCallsPerRun 0 leaves the call log unbounded.
func TestCallLimitZeroIsNoCap(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	for range 20 {
		wantStatus(t, g.call("r", tok, "describe_handle", `{"token":"cfh:v:22222"}`), http.StatusOK)
	}
	if calls := g.calls(t, "r"); len(calls) != 20 {
		t.Errorf("call log holds %d calls, want 20", len(calls))
	}
}

// TestCallLimitExactUnderRace: calls racing past the run as auth read it
// (none has finished, so the log is empty for all) are refused by their
// output number, so the log holds exactly the cap and loom runs that often.
func TestCallLimitExactUnderRace(t *testing.T) {
	t.Parallel()
	const limit, racers = 5, 40
	release := make(chan struct{})
	var arrived atomic.Int32
	g := newTestGateway(t, gatewayOptions{
		MaxCallsPerRun: limit,
		RunFunc: func(ctx context.Context, argv, env []string) (loom.Output, error) {
			arrived.Add(1)
			<-release
			return loomtest.Sample(ctx, argv, env)
		},
	})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	var wg sync.WaitGroup
	codes := make([]int, racers)
	for i := range racers {
		wg.Go(func() {
			codes[i] = g.call("r", tok, "loom_search", `{"query":"atlas"}`).Code
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for arrived.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for more to arrive, were they let through
	close(release)
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
		default:
			t.Errorf("a racing call answered %d", c)
		}
	}
	if calls := g.calls(t, "r"); len(calls) != limit || ok != limit || arrived.Load() != limit {
		t.Errorf("call log holds %d calls, %d answered 200, loom ran %d times; want exactly %d each", len(calls), ok, arrived.Load(), limit)
	}
}
