package handlers

import (
	"net/http"
	"testing"
)

// TestCallLimit: the core's call_limit_reached (its rule is tested in
// package gateway) answers 409 as a problem with no outputId, on every
// agent operation that takes an output number; the result writer still
// answers 201.
func TestCallLimit(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{MaxCallsPerRun: 1})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	wantStatus(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), http.StatusOK)
	for _, r := range agentRoutes {
		if r.op == "result" {
			continue
		}
		p := wantProblem(t, g.call("r", tok, r.op, r.body), http.StatusConflict, "call_limit_reached")
		if p.OutputID != "" {
			t.Errorf("%s: outputId = %q on a refused call, want none", r.op, p.OutputID)
		}
	}
	wantStatus(t, g.call("r", tok, "result", `{"value":{"note":"done"}}`), http.StatusCreated)
}
