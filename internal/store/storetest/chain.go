package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/receipt"
	"github.com/loom-gateway/gateway/internal/store"
)

// --- the run's chain (store.Seal): extended in the finishing step ---

// chains is s as a store that keeps chains; a store that keeps none skips
// the chain tests.
func chains(t *testing.T, s store.Store) store.Chains {
	t.Helper()
	c, ok := s.(store.Chains)
	if !ok {
		t.Skip("the store keeps no chains")
	}
	return c
}

// sealCall seals c as the receipt package records a call: its admitted
// entries' handles set to the tokens the step mints.
func sealCall(run, event string, c store.Call) store.Seal {
	return func(tokens []string, tip store.Tip) (store.Sealed, error) {
		rec, err := receipt.CallRecord(receipt.Meta{RunID: run, Seq: tip.Seq + 1, EventID: event, Prev: tip.Hash, At: epoch}, c, tokens, nil)
		return store.Sealed{Record: rec, Tip: store.Tip{Seq: tip.Seq + 1, Hash: receipt.Hash(rec)}}, err
	}
}

func sealResult(run, event string, r store.Result) store.Seal {
	return func(_ []string, tip store.Tip) (store.Sealed, error) {
		rec, err := receipt.ResultRecord(receipt.Meta{RunID: run, Seq: tip.Seq + 1, EventID: event, Prev: tip.Hash, At: epoch}, r)
		return store.Sealed{Record: rec, Tip: store.Tip{Seq: tip.Seq + 1, Hash: receipt.Hash(rec)}}, err
	}
}

// verifyChain reads the run's chain and checks it link by link.
func verifyChain(t *testing.T, s store.Chains, run string) []receipt.Fields {
	t.Helper()
	recs, err := s.Chain(context.Background(), run)
	if err != nil {
		t.Fatalf("Chain = %v", err)
	}
	links := make([]receipt.Link, len(recs))
	out := make([]receipt.Fields, len(recs))
	for i, r := range recs {
		links[i] = receipt.LinkOf(int64(i+1), r)
		out[i], _ = receipt.ParseRecord(r)
	}
	if _, err := receipt.VerifyChain(run, links, nil); err != nil {
		t.Fatalf("the chain does not verify: %v", err)
	}
	return out
}

// testChain: Finish and PutResult with a Seal extend the run's chain in
// their step; the record holds the tokens the step minted; a step without
// a Seal, and one refused, extend nothing.
func testChain(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	cs := chains(t, s)
	create(t, s, h.run("run-1"))
	mint(t, s, "run-1", refs(1)) // one identity held before the chain
	toks, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(1, 2), Call: finishCall(1, 2), Seal: sealCall("run-1", "e1", finishCall(1, 2))})
	if err != nil {
		t.Fatalf("Finish = %v", err)
	}
	if _, err := s.Finish(ctx, "run-1", store.Finish{Call: finishCall(2, 0)}); err != nil {
		t.Fatalf("Finish without a seal = %v", err)
	}
	_, err = s.Finish(ctx, "run-1", store.Finish{Refs: refs(3, 4), Limits: store.MintLimits{Handles: 3}, Call: finishCall(3, 2), Seal: sealCall("run-1", "e3", finishCall(3, 2))})
	wantErr(t, "Finish past the handle cap", err, store.ErrHandleLimit)
	bad := errors.New("no record")
	_, err = s.Finish(ctx, "run-1", store.Finish{Refs: refs(5), Call: finishCall(4, 1), Seal: func([]string, store.Tip) (store.Sealed, error) { return store.Sealed{}, bad }})
	wantErr(t, "Finish whose seal fails", err, bad)
	_, err = s.Finish(ctx, "run-1", store.Finish{Call: finishCall(5, 0), Seal: func(_ []string, tip store.Tip) (store.Sealed, error) {
		return store.Sealed{Record: []byte("{}"), Tip: store.Tip{Seq: tip.Seq + 2}}, nil
	}})
	wantErr(t, "Finish whose seal skips a link", err, store.ErrSealShape)
	res := store.Result{Value: jsontext.Value(`{"a":1}`), WrittenAt: epoch}
	res.Seal = sealResult("run-1", "e6", res)
	if err := s.PutResult(ctx, "run-1", res); err != nil {
		t.Fatalf("PutResult = %v", err)
	}
	if err := s.PutResult(ctx, "run-1", res); !errors.Is(err, store.ErrResultExists) {
		t.Fatalf("second PutResult = %v", err)
	}
	got := verifyChain(t, cs, "run-1")
	if len(got) != 2 || got[0].OutputID != "run-1:loom_search:1" || got[1].Kind != receipt.KindResult {
		t.Fatalf("chain = %+v, want the first call and the result", got)
	}
	recs, _ := cs.Chain(ctx, "run-1")
	for _, tok := range toks {
		if !strings.Contains(string(recs[0]), `"handle":"`+tok+`"`) {
			t.Errorf("the call's record lacks the token %s its step minted: %s", tok, recs[0])
		}
	}
	if calls, _ := allCalls(ctx, s, "run-1"); len(calls) != 2 {
		t.Errorf("call log = %d records, want 2", len(calls))
	}

	// The chain goes with the run; a run of the same id starts anew.
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	_, err = cs.Chain(ctx, "run-1")
	wantErr(t, "Chain of a deleted run", err, store.ErrRunNotFound)
	create(t, s, h.run("run-1"))
	if _, err := s.Finish(ctx, "run-1", store.Finish{Call: finishCall(1, 0), Seal: sealCall("run-1", "f1", finishCall(1, 0))}); err != nil {
		t.Fatal(err)
	}
	if got := verifyChain(t, cs, "run-1"); len(got) != 1 || got[0].EventID != "f1" {
		t.Fatalf("the new run's chain = %+v", got)
	}
}

// testChainConcurrent: steps racing on one run, minting identities the
// others mint too, make one chain with every step's record once, no gap
// and no fork.
func testChainConcurrent(t *testing.T, h *harness) {
	const goroutines, each = 16, 8
	ctx := context.Background()
	s := h.store(t, 0)
	cs := chains(t, s)
	create(t, s, h.run("run-1"))
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		for i := range each {
			n := g*each + i + 1
			c := finishCall(n, 2)
			if _, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(i, 100+n), Call: c, Seal: sealCall("run-1", fmt.Sprint("e", n), c)}); err != nil {
				errs[g] = err
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	got := verifyChain(t, cs, "run-1")
	if len(got) != goroutines*each {
		t.Fatalf("chain holds %d records, want %d", len(got), goroutines*each)
	}
	seen := map[string]bool{}
	for _, f := range got {
		seen[f.OutputID] = true
	}
	if len(seen) != goroutines*each {
		t.Fatalf("chain holds %d distinct calls, want %d", len(seen), goroutines*each)
	}
}
