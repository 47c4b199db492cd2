package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/store"
)

// testHolds: Holds answers, for each token in order, whether the run
// holds it (another run's token, a token-shaped text no store mints and
// a repeated token included), and whether the run has its result; more
// than store.MaxHolds tokens are refused, and a run that is gone or
// expired answers ErrRunNotFound.
func testHolds(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	create(t, s, h.run("run-2"))
	toks := mint(t, s, "run-1", refs(1, 2, 3))
	other := mint(t, s, "run-2", refs(7))[0]
	ask := []string{toks[2], other, "cfh:v:zzzzzz", "cfh:a:22222", toks[0], "", "not a token", toks[2], "cfh:v:ZZZZZ"}
	held, has, err := s.Holds(ctx, "run-1", ask)
	want := []bool{true, other == toks[0] || other == toks[1] || other == toks[2], false, false, true, false, false, true, false}
	if err != nil || has || !slices.Equal(held, want) {
		t.Fatalf("Holds(%q) = %v, %v, %v; want %v, false, nil", ask, held, has, err, want)
	}
	if held, has, err := s.Holds(ctx, "run-1", nil); err != nil || has || len(held) != 0 {
		t.Fatalf("Holds(none) = %v, %v, %v; want none, false, nil", held, has, err)
	}
	if err := s.PutResult(ctx, "run-1", store.Result{Value: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if _, has, err := s.Holds(ctx, "run-1", toks[:1]); err != nil || !has {
		t.Fatalf("Holds after PutResult: hasResult %v, %v; want true", has, err)
	}
	many := make([]string, store.MaxHolds+1)
	for i := range many {
		many[i] = toks[i%len(toks)]
	}
	if held, _, err := s.Holds(ctx, "run-1", many[:store.MaxHolds]); err != nil || len(held) != store.MaxHolds || slices.Contains(held, false) {
		t.Fatalf("Holds of MaxHolds held tokens = %d answers, %v", len(held), err)
	}
	_, _, err = s.Holds(ctx, "run-1", many)
	wantErr(t, "Holds of MaxHolds+1 tokens", err, store.ErrTooManyTokens)
	_, _, err = s.Holds(ctx, "no-such-run", toks)
	wantErr(t, "Holds of an unknown run", err, store.ErrRunNotFound)
	if err := s.DeleteRun(ctx, "run-2"); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Holds(ctx, "run-2", []string{other})
	wantErr(t, "Holds of a deleted run", err, store.ErrRunNotFound)

	create(t, s, h.run("run-3", h.ttl()))
	mint(t, s, "run-3", refs(1))
	h.advance(h.ttl() + 10*time.Millisecond)
	_, _, err = s.Holds(ctx, "run-3", toks[:1])
	wantErr(t, "Holds of an expired run", err, store.ErrRunNotFound)
}

// testHandlesLarge: a table past any page a store reads it in (Redis
// reads 256 referents, or 4 MiB, a page: 300 referents, 6 of 1 MiB) lists whole and in order, each
// referent once.
func testHandlesLarge(t *testing.T, h *harness) {
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	var in []store.Referent
	for i := range 300 {
		r := ref(i)
		if i%50 == 7 {
			// A few large values: pages also end at their bytes.
			r.Value = []byte(fmt.Sprintf(`{"id":"row-%d","text":"%s"}`, i, strings.Repeat("x", 1<<20)))
		}
		in = append(in, r)
	}
	var toks []string
	for i := 0; i < len(in); i += 100 {
		toks = append(toks, mint(t, s, "run-1", in[i:min(i+100, len(in))])...)
	}
	got := handles(t, s, "run-1")
	if len(got) != len(in) {
		t.Fatalf("Handles = %d referents, want %d", len(got), len(in))
	}
	for i := range in {
		want := in[i]
		want.Token, want.Value = toks[i], nil
		g := got[i]
		if !bytes.Equal(g.Value, in[i].Value) {
			t.Fatalf("Handles[%d] holds another value (%d bytes, want %d)", i, len(g.Value), len(in[i].Value))
		}
		g.Value = nil
		if diff := cmp.Diff(want, g, cmpOpts); diff != "" {
			t.Fatalf("Handles[%d] (-want +got):\n%s", i, diff)
		}
	}
}

// testBeginNoOutput: a Begin of NoOutput checks the token and takes a
// call from the bucket, and nothing else: no output number, no mark, no
// refusal at MaxSeq; it shares the bucket with the outputs.
func testBeginNoOutput(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	r := h.run("run-1")
	create(t, s, r)
	rate := store.Rate{PerSecond: 0.001, Burst: 3}
	if _, err := s.Begin(ctx, "run-1", store.Begin{Rate: rate, MaxCalls: 1}); err != nil {
		t.Fatalf("Begin = %v", err)
	}
	other := store.HashToken("another token")
	_, err := s.Begin(ctx, "run-1", store.Begin{Token: &other, Rate: rate, NoOutput: true})
	wantErr(t, "Begin of NoOutput with another token", err, store.ErrRunNotFound)
	for i := range 2 {
		got, err := s.Begin(ctx, "run-1", store.Begin{Token: &r.TokenHash, Rate: rate, MaxCalls: 1, MaxInFlight: 1, Lease: time.Minute, NoOutput: true})
		if err != nil || got.Seq != 1 || got.Marked || got.ID != "run-1" {
			t.Fatalf("Begin of NoOutput #%d = Seq %d, Marked %v, %v; want the run at Seq 1, no mark, past MaxSeq", i+1, got.Seq, got.Marked, err)
		}
	}
	_, err = s.Begin(ctx, "run-1", store.Begin{Rate: rate, NoOutput: true})
	wantErr(t, "Begin of NoOutput past the burst", err, store.ErrRateLimited)
	if _, err := s.Begin(ctx, "run-1", store.Begin{Rate: rate}); err == nil {
		t.Fatal("Begin after the bucket was spent by NoOutput = nil, want a refusal")
	}
	if got := getRun(t, s, "run-1"); got.Seq != 1 {
		t.Errorf("Seq = %d, want 1", got.Seq)
	}
	if _, err := s.Begin(ctx, "no-such-run", store.Begin{Rate: rate, NoOutput: true}); err == nil {
		t.Error("Begin of NoOutput of an unknown run = nil")
	}
}
