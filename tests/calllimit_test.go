package tests

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// TestCallLimitReached: with --max-calls-per-run 2, a run whose call log
// holds two calls refuses a further tool call and describe_handle with a
// call_limit_reached problem (409, no outputId, valid against the
// contract like every answer here), starts no loom process and logs
// nothing; its result writer still works, and another run is unaffected.
func TestCallLimitReached(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--max-calls-per-run", "2"}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":1}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"q"}`)
	if rep := r.call(t, "describe_handle", `{"token":"cfh:v:22222"}`); rep.Status != http.StatusOK {
		t.Fatalf("describe_handle: %d %s, want 200", rep.Status, rep.Body)
	}
	loomRuns := len(g.loomCalls(t))

	for _, c := range []struct{ route, body string }{
		{"loom_search", `{"query":"q"}`},
		{"loom_profile", `{}`},
		{"describe_handle", `{"token":"cfh:v:22222"}`},
	} {
		rep := r.call(t, c.route, c.body)
		p := wantProblem(t, rep, http.StatusConflict, "call_limit_reached")
		if p.OutputId != nil {
			t.Errorf("%s: outputId = %q on a refused call, want none", c.route, *p.OutputId)
		}
		var raw map[string]any
		if err := json.Unmarshal(rep.Body, &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw["outputId"]; ok || raw["status"] != float64(http.StatusConflict) || raw["title"] != "Call limit reached" {
			t.Errorf("%s: problem body %s", c.route, rep.Body)
		}
	}
	if n := len(g.loomCalls(t)); n != loomRuns {
		t.Errorf("loom ran %d more times for refused calls", n-loomRuns)
	}
	if calls := r.calls(t); len(calls) != 2 {
		t.Errorf("call log holds %d calls, want 2", len(calls))
	}
	if rep := r.call(t, "result", `{"value":{"note":"done"}}`); rep.Status != http.StatusCreated {
		t.Errorf("result writer at the cap: %d %s, want 201", rep.Status, rep.Body)
	}

	other := g.newRun(t, client.CreateRunInput{})
	if res := other.ok(t, "loom_search", `{"query":"q"}`); res.OutputId != other.ID+":loom_search:1" {
		t.Errorf("other run's outputId = %q", res.OutputId)
	}
}
