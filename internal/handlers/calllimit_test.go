package handlers

import (
	"context"
	"net/http"
	"testing"
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
