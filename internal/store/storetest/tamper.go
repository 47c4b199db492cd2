package storetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/receipt"
	"github.com/loom-gateway/gateway/internal/store"
)

// SetChain replaces the run's chain records as its store keeps them with
// recs, as anyone who can write to the store's backend can.
type SetChain func(t *testing.T, s store.Store, id string, recs [][]byte)

// RunTamper is the tampering suite of a store that keeps chains: a run's
// chain is sealed through the store (four calls, the result), a receipt is
// signed over it and kept, and then the chain is changed in the backend
// with set; the chain read back with the kept receipt must fail
// verification, naming the first bad link, for a byte changed in any
// record, a record dropped, two swapped, the chain cut short, another
// run's record put in its place; the receipt checked with an unknown key
// fails too; and the untouched chain verifies.
func RunTamper(t *testing.T, newStore NewFunc, set SetChain) {
	ctx := context.Background()
	h := &harness{newStore: newStore}
	s := h.store(t, 0)
	cs := chains(t, s)
	for _, id := range []string{"run-1", "run-2"} {
		create(t, s, h.run(id))
		for n := 1; n <= 4; n++ {
			c := finishCall(n, 1)
			c.OutputID = fmt.Sprintf("%s:loom_search:%d", id, n)
			if _, err := s.Finish(ctx, id, store.Finish{Refs: refs(n), Observed: conf(`"A"`), Base: h.run(id).ModelContext, Call: c, Seal: sealCall(id, fmt.Sprintf("%s-e%d", id, n), c)}); err != nil {
				t.Fatal(err)
			}
		}
		res := store.Result{Value: jsontext.Value(`{"done":true}`), Label: ifc.Label{Confidentiality: conf(`"A"`)}}
		res.Seal = sealResult(id, id+"-e5", res)
		if err := s.PutResult(ctx, id, res); err != nil {
			t.Fatal(err)
		}
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	signer := receipt.NewSigner(key)
	keys := receipt.NewKeyring(signer.Public())
	original, err := cs.Chain(ctx, "run-1")
	if err != nil || len(original) != 5 {
		t.Fatalf("Chain = %d records, %v", len(original), err)
	}
	other, _ := cs.Chain(ctx, "run-2")
	kept, err := receipt.Sign(signer, receipt.Facts{Run: h.run("run-1"), Reason: receipt.ReasonRequested, SignedAt: epoch}, original)
	if err != nil {
		t.Fatal(err)
	}
	// check reads the run's chain as the store now holds it and verifies
	// it against the kept receipt.
	check := func(keys receipt.Keyring) error {
		recs, err := cs.Chain(ctx, "run-1")
		if err != nil {
			t.Fatalf("Chain = %v", err)
		}
		d := receipt.Document{RunID: "run-1", Receipt: kept.Receipt}
		for i, r := range recs {
			d.Chain = append(d.Chain, receipt.LinkOf(int64(i+1), r))
		}
		_, err = receipt.Verify(d, keys, nil)
		return err
	}
	if err := check(keys); err != nil {
		t.Fatalf("the untouched chain: %v", err)
	}
	flip := func(i int) [][]byte {
		recs := slices.Clone(original)
		r := bytes.Clone(recs[i])
		r[len(r)/2] ^= 0x01 // one byte, in the middle of the record
		recs[i] = r
		return recs
	}
	for _, tc := range []struct {
		name string
		recs [][]byte
		want string
	}{
		{"a byte of the first record", flip(0), "chain link 1"},
		{"a byte of a middle record", flip(2), "chain link 3"},
		{"a byte of the last record", flip(4), "chain link 5"},
		{"a record dropped", slices.Delete(slices.Clone(original), 1, 2), "chain link 2"},
		{"two records swapped", [][]byte{original[0], original[2], original[1], original[3], original[4]}, "chain link 2"},
		{"cut short", original[:3], "chain link 4"},
		{"another run's record", [][]byte{original[0], original[1], other[2], original[3], original[4]}, "chain link 3"},
		{"another run's chain", other, "chain link 1"},
	} {
		set(t, s, "run-1", tc.recs)
		err := check(keys)
		if err == nil || !strings.Contains(err.Error(), tc.want+":") {
			t.Errorf("%s: Verify = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	set(t, s, "run-1", original)
	if err := check(keys); err != nil {
		t.Fatalf("the chain put back: %v", err)
	}
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	if err := check(receipt.NewKeyring(receipt.NewSigner(otherKey).Public())); err == nil || !strings.Contains(err.Error(), "not among") {
		t.Errorf("an unknown key: Verify = %v", err)
	}
}
