package handlers

import (
	"context"
	"net/http"
	"testing"

	"github.com/loom-gateway/gateway/internal/store"
)

// heldBytes is the run's handle table size as the byte cap counts it.
func (g *testGateway) heldBytes(t *testing.T, id string) int64 {
	t.Helper()
	hs, err := g.store.Handles(context.Background(), id)
	if err != nil {
		t.Fatalf("Handles(%q) = %v", id, err)
	}
	var n int64
	for _, h := range hs {
		n += store.ReferentBytes(h)
	}
	return n
}

// TestHandleByteLimit: a call whose admitted rows would take the run's
// handle table past --max-handle-bytes-per-run answers 409
// handle_limit_reached with its outputId and mints nothing; a table
// exactly at the cap is allowed, and rows it already holds cost nothing.
func TestHandleByteLimit(t *testing.T) {
	t.Parallel()
	// The profile's one row, measured on an uncapped gateway.
	probe := newTestGateway(t, gatewayOptions{})
	_, ptok := probe.createRun(t, `{"runId":"r"}`)
	wantStatus(t, probe.call("r", ptok, "loom_profile", `{}`), http.StatusOK)
	profile := probe.heldBytes(t, "r")
	if profile <= 0 {
		t.Fatalf("profile row = %d bytes", profile)
	}

	g := newTestGateway(t, gatewayOptions{MaxHandleBytesPerRun: profile})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	// Exactly at the cap fits, and the same row again costs nothing.
	wantStatus(t, g.call("r", tok, "loom_profile", `{}`), http.StatusOK)
	wantStatus(t, g.call("r", tok, "loom_profile", `{}`), http.StatusOK)
	before, err := g.store.Handles(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	// The search's new rows do not fit, though the handle count is
	// uncapped: nothing of the call is kept.
	p := wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), http.StatusConflict, "handle_limit_reached")
	if p.OutputID != "r:loom_search:3" {
		t.Errorf("outputId = %q, want r:loom_search:3", p.OutputID)
	}
	after, err := g.store.Handles(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || len(after) != 1 || after[0].Token != before[0].Token {
		t.Errorf("handle table = %d referents before the refused call, %d after, want 1 and the same", len(before), len(after))
	}
	if got := g.heldBytes(t, "r"); got != profile {
		t.Errorf("held bytes = %d after a refused mint, want %d", got, profile)
	}
	if r, err := g.store.Run(context.Background(), "r"); err != nil || r.HandleBytes != profile {
		t.Errorf("Run.HandleBytes = %d, %v, want %d", r.HandleBytes, err, profile)
	}
	if s := g.summary(t, "r"); s.Handles != 1 {
		t.Errorf("handles = %d after a refused mint, want 1", s.Handles)
	}
	calls := g.calls(t, "r")
	if len(calls) != 3 || calls[2].Code == nil || *calls[2].Code != "handle_limit_reached" {
		t.Errorf("call log = %+v, want the refused call last", calls)
	}
}
