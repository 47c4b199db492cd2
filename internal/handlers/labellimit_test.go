package handlers

import (
	"net/http"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestLabelLimit: the core's label_limit_reached (its rule is tested in
// package gateway) answers 409 as a problem: on a tool call with its
// outputId, on an observation and on a run's creation.
func TestLabelLimit(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{
		MaxLabelClauses: 3,
		RunFunc:         loomtest.Clauses,
	})
	id, tok := g.createRun(t, `{"runId":"r"}`)
	wantStatus(t, g.call(id, tok, "loom_search", `{"query":"A,B"}`), http.StatusOK)
	p := wantProblem(t, g.call(id, tok, "loom_search", `{"query":"C,D"}`), http.StatusConflict, "label_limit_reached")
	if p.OutputID != id+":loom_search:2" {
		t.Errorf("outputId = %q, want %s:loom_search:2", p.OutputID, id)
	}

	// An observation past the cap, and a starting label past it.
	wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs/r/observations", `{"label":{"confidentiality":["X","Y"]}}`), http.StatusConflict, "label_limit_reached")
	wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"big","modelContextLabel":{"confidentiality":["P","Q","R","S"]}}`), http.StatusConflict, "label_limit_reached")
	wantStatus(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"fits","modelContextLabel":{"confidentiality":["P","Q","R"]}}`), http.StatusCreated)
}
