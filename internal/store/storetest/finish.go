package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// --- finishing an output: mint, observe and record in one step ---

// finishCall is a call record with one admitted entry per ref and one
// withheld entry after them; its handles are left for Finish to set.
func finishCall(n, refs int) store.Call {
	c := store.Call{OutputID: fmt.Sprintf("run-1:loom_search:%d", n), Tool: "loom_search", Status: "ok",
		Admitted: refs, Withheld: 1, Observed: conf(`"A"`), StartedAt: epoch}
	for range refs {
		c.Entries = append(c.Entries, store.CallEntry{Status: "admitted", LabelSource: "row",
			Label: ifc.Disclosed{Confidentiality: [][]string{{"A"}}, Integrity: []string{"I"}}})
	}
	c.Entries = append(c.Entries, store.CallEntry{Status: "withheld", ReasonCode: "cfc_ceiling_exceeded"})
	return c
}

// entryHandles are the handles of c's admitted entries.
func entryHandles(c store.Call) []string {
	var out []string
	for _, e := range c.Entries {
		if e.Status == "admitted" {
			out = append(out, e.Handle)
		}
	}
	return out
}

func testFinish(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	rs := refs(1, 2, 1)
	want := expectedTokens("run-1", rs)
	toks, err := s.Finish(ctx, "run-1", store.Finish{Refs: rs, Observed: conf(`"A"`), Base: h.run("run-1").ModelContext, Call: finishCall(1, 3)})
	if err != nil {
		t.Fatalf("Finish = %v", err)
	}
	if diff := cmp.Diff(want, toks); diff != "" {
		t.Errorf("Finish tokens (-want +got):\n%s", diff)
	}
	if got := handles(t, s, "run-1"); len(got) != 2 || got[0].Token != want[0] || got[1].Token != want[1] {
		t.Errorf("handle table = %v, want the two identities minted", got)
	}
	r := getRun(t, s, "run-1")
	if diff := cmp.Diff(ifc.JoinModelContext(h.run("run-1").ModelContext, conf(`"A"`)), r.ModelContext, cmpOpts); diff != "" {
		t.Errorf("model-context label after Finish (-want +got):\n%s", diff)
	}
	calls, err := allCalls(ctx, s, "run-1")
	if err != nil || len(calls) != 1 || r.Calls != 1 {
		t.Fatalf("call log = %d records, %v (Run.Calls %d), want 1", len(calls), err, r.Calls)
	}
	wantRec := finishCall(1, 3)
	for i := range 3 {
		wantRec.Entries[i].Handle = want[i]
	}
	if diff := cmp.Diff(wantRec, calls[0], cmpOpts); diff != "" {
		t.Errorf("call record (-want +got):\n%s", diff)
	}

	// Nothing to mint or observe: only the record.
	if toks, err := s.Finish(ctx, "run-1", store.Finish{Call: finishCall(2, 0)}); err != nil || len(toks) != 0 {
		t.Errorf("Finish of a record alone = %v, %v", toks, err)
	}
	if calls, _ := allCalls(ctx, s, "run-1"); len(calls) != 2 || calls[1].OutputID != "run-1:loom_search:2" {
		t.Errorf("call log after a record alone = %d records", len(calls))
	}
	if _, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(9), Call: finishCall(3, 2)}); !errors.Is(err, store.ErrFinishShape) {
		t.Errorf("Finish with 1 ref and 2 admitted entries = %v, want ErrFinishShape", err)
	}
	_, err = s.Finish(ctx, "nope", store.Finish{Call: finishCall(1, 0)})
	wantErr(t, "Finish(unknown run)", err, store.ErrRunNotFound)
}

// testFinishAllOrNothing: a Finish refused for its handles or its label
// writes nothing: no handle, no label, no record.
func testFinishAllOrNothing(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.storeWith(t, Config{MaxLabelClauses: 2})
	create(t, s, h.run("run-1")) // its label holds one clause, "Base"
	base := h.run("run-1").ModelContext
	mint(t, s, "run-1", refs(1))

	_, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(2, 3), Limits: store.MintLimits{Handles: 2},
		Observed: conf(`"A"`), Base: base, Call: finishCall(1, 2)})
	wantErr(t, "Finish past the handle cap", err, store.ErrHandleLimit)
	_, err = s.Finish(ctx, "run-1", store.Finish{Refs: refs(2), Observed: conf(`"A"`, `"B"`), Base: base, Call: finishCall(2, 1)})
	wantErr(t, "Finish past the label cap", err, store.ErrLabelLimit)
	// A stale base (the label seen empty) does not hide the cap.
	_, err = s.Finish(ctx, "run-1", store.Finish{Refs: refs(2), Observed: conf(`"A"`, `"B"`), Call: finishCall(3, 1)})
	wantErr(t, "Finish past the label cap, on a stale base", err, store.ErrLabelLimit)

	if got := handles(t, s, "run-1"); len(got) != 1 {
		t.Errorf("handle table holds %d referents after refusals, want 1", len(got))
	}
	r := getRun(t, s, "run-1")
	if diff := cmp.Diff(base, r.ModelContext, cmpOpts); diff != "" {
		t.Errorf("label after refusals (-want +got):\n%s", diff)
	}
	if calls, _ := allCalls(ctx, s, "run-1"); len(calls) != 0 || r.Calls != 0 {
		t.Errorf("call log holds %d records after refusals, want none", len(calls))
	}
}

// testFinishStaleBase: a label grown since the caller read it is joined
// into, not overwritten.
func testFinishStaleBase(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	base := h.run("run-1").ModelContext
	if _, err := s.Observe(ctx, "run-1", conf(`"X"`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(1), Observed: conf(`"A"`), Base: base, Call: finishCall(1, 1)}); err != nil {
		t.Fatalf("Finish = %v", err)
	}
	want := ifc.JoinModelContext(ifc.JoinModelContext(base, conf(`"X"`)), conf(`"A"`))
	if diff := cmp.Diff(want, getRun(t, s, "run-1").ModelContext, cmpOpts); diff != "" {
		t.Errorf("label (-want +got):\n%s", diff)
	}
}

// testFinishConcurrent races Finishes of one run, each observing an atom
// of its own and minting a referent of its own and one all share: every
// record is in the log with handles the table holds, and the label holds
// every atom.
func testFinishConcurrent(t *testing.T, h *harness) {
	const goroutines = 24
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		_, errs[g] = s.Finish(ctx, "run-1", store.Finish{Refs: refs(0, 100+g),
			Observed: conf(fmt.Sprintf(`"G%d"`, g)), Call: finishCall(g+1, 2)})
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	calls, err := allCalls(ctx, s, "run-1")
	if err != nil || len(calls) != goroutines {
		t.Fatalf("call log = %d records, %v, want %d", len(calls), err, goroutines)
	}
	for _, c := range calls {
		for _, tok := range entryHandles(c) {
			if _, held, err := s.Handle(ctx, "run-1", tok); err != nil || !held {
				t.Errorf("record %s names %s, which the table does not hold (%v)", c.OutputID, tok, err)
			}
		}
	}
	if n := len(handles(t, s, "run-1")); n != goroutines+1 {
		t.Errorf("handle table holds %d referents, want %d", n, goroutines+1)
	}
	label := getRun(t, s, "run-1").ModelContext
	for g := range goroutines {
		if !containsClause(label, fmt.Sprintf(`"G%d"`, g)) {
			t.Errorf("label lacks G%d: an observation was lost", g)
		}
	}
}

func containsClause(c ifc.Confidentiality, clause string) bool {
	for _, x := range c {
		if string(x) == clause {
			return true
		}
	}
	return false
}

// testFinishLarge mints batches past what a store may read or write in
// one command (thousands of referents, identities repeated within and
// across batches): the tokens, the table's order and the call record's
// handles are those of minting one referent at a time.
func testFinishLarge(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	var a, b []int
	for n := range 2600 {
		a = append(a, n)
	}
	for n := range 100 {
		a = append(a, n)
	}
	for n := 2000; n < 3200; n++ {
		b = append(b, n)
	}
	want := expectedTokens("run-1", append(refs(a...), refs(b...)...))
	got, err := s.Mint(ctx, "run-1", refs(a...), store.MintLimits{})
	if err != nil {
		t.Fatalf("Mint of %d = %v", len(a), err)
	}
	toks, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(b...), Observed: conf(`"A"`), Base: h.run("run-1").ModelContext, Call: finishCall(1, len(b))})
	if err != nil {
		t.Fatalf("Finish of %d = %v", len(b), err)
	}
	if diff := cmp.Diff(want, append(got, toks...)); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	var order []string
	seen := map[string]bool{}
	for _, tok := range want {
		if !seen[tok] {
			seen[tok] = true
			order = append(order, tok)
		}
	}
	var held []string
	for _, r := range handles(t, s, "run-1") {
		held = append(held, r.Token)
	}
	if diff := cmp.Diff(order, held); diff != "" {
		t.Errorf("handle table's order (-want +got):\n%s", diff)
	}
	calls, _, err := s.CallsPage(ctx, "run-1", 0, 0)
	if err != nil || len(calls) != 1 {
		t.Fatalf("CallsPage = %d records, %v", len(calls), err)
	}
	if diff := cmp.Diff(toks, entryHandles(calls[0])); diff != "" {
		t.Errorf("the call record's handles (-want +got):\n%s", diff)
	}
	if r, ok, err := s.Handle(ctx, "run-1", toks[len(toks)-1]); err != nil || !ok || string(r.Value) != string(ref(3199).Value) {
		t.Errorf("Handle(last) = %s, %v, %v, want row 3199", r.Value, ok, err)
	}
}
