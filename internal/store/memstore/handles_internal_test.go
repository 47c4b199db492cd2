package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Token collisions in the memory store's handle table.

func testRef(n int) store.Referent {
	return store.Referent{
		Kind:        "document",
		Source:      "loom_search",
		Value:       []byte(fmt.Sprintf(`{"n":%d}`, n)),
		Label:       ifc.Label{Confidentiality: ifc.Confidentiality{ifc.Clause(`"A"`)}},
		LabelSource: "row",
	}
}

// preInsert holds tok in the run for a referent of a different identity, as
// if it had been minted earlier.
func preInsert(t *testing.T, m *Store, id, tok string, r store.Referent) {
	t.Helper()
	k, ok := store.TokenKey(tok)
	if !ok {
		t.Fatalf("preInsert: %q is not a token", tok)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mr := m.runs[id]
	if mr.ids == nil {
		mr.ids = map[uint64]int32{}
		mr.tokens = map[[store.TokenWidth]byte]int32{}
	}
	r.Token = tok
	mr.ids[maphash.Bytes(m.seed, store.Identity(r))] = int32(len(mr.handles))
	mr.tokens[k] = int32(len(mr.handles))
	mr.handles = append(mr.handles, r)
	mr.run.Handles = len(mr.handles)
}

func newTestRun(t *testing.T, id string) *Store {
	t.Helper()
	m := New(Options{})
	if err := m.CreateRun(context.Background(), store.Run{ID: id, TokenHash: store.HashToken(id)}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMintCollisionPreInserted(t *testing.T) {
	ctx := context.Background()
	const id = "run-collide"
	m := newTestRun(t, id)
	c := testRef(3)
	ident := store.Identity(c)
	// The first two derivations of c's token are held by other referents.
	preInsert(t, m, id, store.MintToken(id, ident, 0), testRef(100))
	preInsert(t, m, id, store.MintToken(id, ident, 1), testRef(101))
	toks, err := m.Mint(ctx, id, []store.Referent{c, testRef(100)}, store.MintLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := store.MintToken(id, ident, 2); toks[0] != want {
		t.Errorf("Mint(c) = %q, want attempt 2 %q", toks[0], want)
	}
	if want := store.MintToken(id, ident, 0); toks[1] != want {
		t.Errorf("Mint(holder of attempt 0) = %q, want its held %q", toks[1], want)
	}
	again, err := m.Mint(ctx, id, []store.Referent{c}, store.MintLimits{})
	if err != nil || again[0] != toks[0] {
		t.Errorf("re-Mint(c) = %q, %v, want %q", again, err, toks[0])
	}
	got, ok, err := m.Handle(ctx, id, toks[0])
	if err != nil || !ok || string(got.Value) != string(c.Value) {
		t.Errorf("Handle(%q) = %s, %v, %v, want c", toks[0], got.Value, ok, err)
	}
	if hs, _ := m.Handles(ctx, id); len(hs) != 3 {
		t.Errorf("Handles = %d, want 3", len(hs))
	}
}

// collidingPair finds two referents whose first tokens in run id coincide.
func collidingPair(t *testing.T, id string) (a, b store.Referent) {
	t.Helper()
	seen := map[string]int{}
	for n := range 1_000_000 {
		tok := store.MintToken(id, store.Identity(testRef(n)), 0)
		if prev, ok := seen[tok]; ok {
			return testRef(prev), testRef(n)
		}
		seen[tok] = n
	}
	t.Fatal("no collision in 1e6 referents")
	return
}

func TestMintCollisionNatural(t *testing.T) {
	ctx := context.Background()
	const id = "run-birthday"
	a, b := collidingPair(t, id)
	first := store.MintToken(id, store.Identity(a), 0)
	if store.MintToken(id, store.Identity(b), 0) != first {
		t.Fatal("collidingPair returned a non-colliding pair")
	}
	retryB := store.MintToken(id, store.Identity(b), 1)
	retryA := store.MintToken(id, store.Identity(a), 1)
	tests := []struct {
		name    string
		batches [][]store.Referent
		want    [2]string // tokens of a and b
	}{
		{"one batch", [][]store.Referent{{a, b}}, [2]string{first, retryB}},
		{"one batch, b first", [][]store.Referent{{b, a}}, [2]string{retryA, first}},
		{"two batches", [][]store.Referent{{a}, {b}}, [2]string{first, retryB}},
		{"two batches, b first", [][]store.Referent{{b}, {a}}, [2]string{retryA, first}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestRun(t, id)
			got := map[string]string{}
			for _, batch := range tt.batches {
				toks, err := m.Mint(ctx, id, batch, store.MintLimits{})
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range batch {
					got[string(r.Value)] = toks[i]
				}
			}
			if got[string(a.Value)] != tt.want[0] || got[string(b.Value)] != tt.want[1] {
				t.Errorf("tokens a, b = %q, %q, want %q, %q",
					got[string(a.Value)], got[string(b.Value)], tt.want[0], tt.want[1])
			}
			for _, r := range []store.Referent{a, b} {
				h, ok, err := m.Handle(ctx, id, got[string(r.Value)])
				if err != nil || !ok || string(h.Value) != string(r.Value) {
					t.Errorf("Handle(%q) = %s, %v, %v, want %s", got[string(r.Value)], h.Value, ok, err, r.Value)
				}
			}
		})
	}
}

func TestMintHandleLimitWithCollision(t *testing.T) {
	// A refused batch must not leave a retried token behind.
	ctx := context.Background()
	const id = "run-birthday"
	a, b := collidingPair(t, id)
	m := newTestRun(t, id)
	if _, err := m.Mint(ctx, id, []store.Referent{a, b, testRef(-1)}, store.MintLimits{Handles: 2}); err != store.ErrHandleLimit {
		t.Fatalf("Mint(3 new, max 2) = %v, want ErrHandleLimit", err)
	}
	toks, err := m.Mint(ctx, id, []store.Referent{b}, store.MintLimits{Handles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := store.MintToken(id, store.Identity(b), 0); toks[0] != want {
		t.Errorf("Mint(b) after refusal = %q, want attempt 0 %q", toks[0], want)
	}
}

// TestMintIdentityHashCollision holds the table's lookup to identities,
// not to their hashes: a referent whose identity hash (Store.seed) is
// taken by a different referent is minted a token of its own, and found
// again by its identity afterwards.
func TestMintIdentityHashCollision(t *testing.T) {
	ctx := context.Background()
	const id = "run-hash"
	m := newTestRun(t, id)
	a, b := testRef(1), testRef(2)
	toks, err := m.Mint(ctx, id, []store.Referent{a}, store.MintLimits{})
	if err != nil {
		t.Fatal(err)
	}
	// Make a's entry answer to b's hash, as a collision of the two would.
	m.mu.Lock()
	mr := m.runs[id]
	ha, hb := maphash.Bytes(m.seed, store.Identity(a)), maphash.Bytes(m.seed, store.Identity(b))
	mr.ids[hb] = mr.ids[ha]
	delete(mr.ids, ha)
	m.mu.Unlock()
	for range 2 {
		got, err := m.Mint(ctx, id, []store.Referent{b}, store.MintLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if want := store.MintToken(id, store.Identity(b), 0); got[0] != want || got[0] == toks[0] {
			t.Fatalf("Mint(b) = %q, want its own %q (a holds %q)", got[0], want, toks[0])
		}
	}
	if hs, _ := m.Handles(ctx, id); len(hs) != 2 {
		t.Errorf("Handles = %d, want 2", len(hs))
	}
	if len(mr.more[hb]) != 1 {
		t.Errorf("more[hash of b] = %v, want b's index", mr.more[hb])
	}
}
