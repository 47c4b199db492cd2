package tests

import (
	"net/http"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// TestLabelLimitReached: over the real binary, a call whose admitted row
// would take the model-context label past --max-label-clauses answers
// label_limit_reached with its outputId (the checked client validates the
// problem against the contract), and mints nothing.
func TestLabelLimitReached(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--max-label-clauses", "1"}})
	g.setBehaviour(t, "case-one", behaviour{Stdout: `{"hits":[{"title":"one","ifc":{"confidentiality":["work"]}}]}`})
	g.setBehaviour(t, "case-two", behaviour{Stdout: `{"hits":[{"title":"two","ifc":{"confidentiality":["work","health"]}}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"case=one"}`)
	p := wantProblem(t, r.call(t, "loom_search", `{"query":"case=two"}`), http.StatusConflict, "label_limit_reached")
	if want := r.ID + ":loom_search:2"; deref(p.OutputId) != want {
		t.Errorf("outputId = %v, want %s", deref(p.OutputId), want)
	}
	if hs := r.handles(t); len(hs) != 1 {
		t.Errorf("%d handles after the refused call, want 1", len(hs))
	}
	r.ok(t, "loom_search", `{"query":"case=one"}`) // a clause the label holds
}
