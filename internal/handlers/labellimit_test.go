package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
)

// TestLabelLimit: a call whose admitted rows would take the run's
// model-context label past MaxLabelClauses answers label_limit_reached
// with its outputId and mints nothing, leaving the label as it was; rows
// whose clauses the label holds are still answered; an observation or a
// starting label past the cap is refused the same way.
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
	label := func() string {
		return compactJSON(t, g.summary(t, id).ModelContextLabel)
	}

	wantStatus(t, g.call(id, tok, "loom_search", `{"query":"A,B"}`), http.StatusOK)
	held := label()
	handles := g.summary(t, id).Handles

	p := wantProblem(t, g.call(id, tok, "loom_search", `{"query":"C,D"}`), http.StatusConflict, "label_limit_reached")
	if p.OutputID != id+":loom_search:2" {
		t.Errorf("outputId = %q, want %s:loom_search:2", p.OutputID, id)
	}
	if got := label(); got != held {
		t.Errorf("label after a refused call = %s, want %s", got, held)
	}
	if got := g.summary(t, id).Handles; got != handles {
		t.Errorf("handles = %d after a refused call, want %d (nothing minted)", got, handles)
	}

	// Exactly at the cap, and clauses already held, are answered.
	wantStatus(t, g.call(id, tok, "loom_search", `{"query":"C"}`), http.StatusOK)
	wantStatus(t, g.call(id, tok, "loom_search", `{"query":"A,C"}`), http.StatusOK)
	if got, want := label(), `{"confidentiality":["A","B","C"]}`; got != want {
		t.Errorf("label = %s, want %s", got, want)
	}

	// An observation past the cap, and a starting label past it.
	wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs/r/observations", `{"label":{"confidentiality":["X"]}}`), http.StatusConflict, "label_limit_reached")
	wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"big","modelContextLabel":{"confidentiality":["P","Q","R","S"]}}`), http.StatusConflict, "label_limit_reached")
	wantStatus(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"fits","modelContextLabel":{"confidentiality":["P","Q","R"]}}`), http.StatusCreated)
}
