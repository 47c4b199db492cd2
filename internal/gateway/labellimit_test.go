package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestLabelLimit: a call whose admitted rows would take the run's
// model-context label past MaxLabelClauses is refused with
// label_limit_reached and its outputId, and mints nothing, leaving the
// label as it was; rows whose clauses the label holds are still answered;
// an observation or a starting label past the cap is refused the same way.
func TestLabelLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCore(t, coreOptions{MaxLabelClauses: 3, RunFunc: loomtest.Clauses})
	tok := c.createRun(t, "r")
	label := func() string {
		b, err := json.Marshal(c.label(t, "r"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	search := func(q string) error {
		_, err := c.call(ctx, "r", tok, "loom_search", `{"query":"`+q+`"}`)
		return err
	}

	if err := search("A,B"); err != nil {
		t.Fatal(err)
	}
	held, handles := label(), c.run(t, "r").Handles

	wantError(t, search("C,D"), "label_limit_reached", "r:loom_search:2")
	if got := label(); got != held {
		t.Errorf("label after a refused call = %s, want %s", got, held)
	}
	if got := c.run(t, "r").Handles; got != handles {
		t.Errorf("handles = %d after a refused call, want %d (nothing minted)", got, handles)
	}

	// Exactly at the cap, and clauses already held, are answered.
	for _, q := range []string{"C", "A,C"} {
		if err := search(q); err != nil {
			t.Errorf("query %s: %v", q, err)
		}
	}
	if got, want := label(), `["A","B","C"]`; got != want {
		t.Errorf("label = %s, want %s", got, want)
	}

	// An observation past the cap, and a starting label past it.
	wantError(t, c.Observe(ctx, "r", []byte(`["X"]`)), "label_limit_reached", "")
	for _, tt := range []struct {
		id, label, code string
	}{
		{"big", `["P","Q","R","S"]`, "label_limit_reached"},
		{"fits", `["P","Q","R"]`, ""},
	} {
		_, err := c.CreateRun(ctx, RunSpec{ID: &tt.id, ModelContext: []byte(tt.label)})
		if tt.code == "" {
			if err != nil {
				t.Errorf("CreateRun %s: %v", tt.label, err)
			}
			continue
		}
		wantError(t, err, tt.code, "")
	}
}
