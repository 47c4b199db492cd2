package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
)

// TestLabelLimit: the core's label_limit_reached (its rule is tested in
// package gateway) answers 409 as a problem: on a tool call with its
// outputId, on an observation and on a run's creation.
func TestLabelLimit(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{
		MaxLabelClauses: 3,
		RunFunc: func(ctx context.Context, argv, env []string) (loom.Output, error) {
			// The query names the clauses of the one row answered.
			q := ""
			for i, a := range argv {
				if a == "search" && i+1 < len(argv) {
					q = argv[i+1]
					break
				}
			}
			var clauses []string
			for _, c := range strings.Split(q, ",") {
				clauses = append(clauses, `"`+c+`"`)
			}
			row := `{"title":"t","ifc":{"confidentiality":[` + strings.Join(clauses, ",") + `]}}`
			return loom.Output{Stdout: []byte(`{"hits":[` + row + `]}`)}, nil
		},
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
