package storetest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// --- in-flight marks: Begin.MaxInFlight, Finish.Mark, Release ---

// lease is the in-flight lease of testInFlightLease: long on the fake
// clock, short under RealTime, where the suite sleeps past it. The other
// cases take an hour's lease, which no slow machine passes.
func (h *harness) lease() time.Duration {
	if h.opts.RealTime {
		return time.Second
	}
	return time.Minute
}

// beginMarked calls Begin and checks the number it took and whether it
// took a mark.
func beginMarked(t *testing.T, s Store, id string, b store.Begin, seq int64, marked bool) {
	t.Helper()
	got, err := s.Begin(context.Background(), id, b)
	if err != nil || got.Seq != seq || got.Marked != marked {
		t.Fatalf("Begin(%s) = Seq %d, Marked %v, %v; want %d, %v, nil", id, got.Seq, got.Marked, err, seq, marked)
	}
}

// errorCall is the record of an output that ends without rows.
func errorCall(id string, seq int64) store.Call {
	return store.Call{OutputID: id + ":loom_search:" + strconv.FormatInt(seq, 10), Tool: "loom_search", Status: "error", Code: "busy"}
}

// testInFlight: under MaxInFlight, Begin marks outputs in flight until
// the run holds the cap, then numbers outputs without a mark; Finish and
// Release give a mark back, a refused Finish keeps it; marks are per run
// and a Begin with no cap takes none.
func testInFlight(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	create(t, s, h.run("run-2"))
	b := store.Begin{MaxInFlight: 2, Lease: time.Hour}

	beginMarked(t, s, "run-1", b, 1, true)
	beginMarked(t, s, "run-1", b, 2, true)
	beginMarked(t, s, "run-1", b, 3, false) // numbered, no mark
	beginMarked(t, s, "run-2", b, 1, true)  // marks are per run
	beginMarked(t, s, "run-1", store.Begin{}, 4, false)
	if r := getRun(t, s, "run-1"); r.Marked || r.Seq != 4 {
		t.Errorf("Run = Seq %d, Marked %v; want 4, false (Marked is Begin's alone)", r.Seq, r.Marked)
	}

	if _, err := s.Finish(ctx, "run-1", store.Finish{Call: errorCall("run-1", 1), Mark: 1}); err != nil {
		t.Fatalf("Finish with mark 1 = %v", err)
	}
	beginMarked(t, s, "run-1", b, 5, true)
	beginMarked(t, s, "run-1", b, 6, false)

	if err := s.Release(ctx, "run-1", 2); err != nil {
		t.Fatalf("Release(2) = %v", err)
	}
	for _, m := range []int64{2, 99, 0} {
		if err := s.Release(ctx, "run-1", m); err != nil {
			t.Errorf("Release(%d), a mark not held = %v, want nil", m, err)
		}
	}
	if err := s.Release(ctx, "nope", 1); err != nil {
		t.Errorf("Release of an unknown run = %v, want nil", err)
	}
	beginMarked(t, s, "run-1", b, 7, true)
	beginMarked(t, s, "run-1", b, 8, false)

	// A Finish refused writes nothing: the mark stays held.
	if _, err := s.Mint(ctx, "run-1", refs(1), store.MintLimits{}); err != nil {
		t.Fatal(err)
	}
	admitted := store.Call{OutputID: "run-1:loom_search:5", Tool: "loom_search", Status: "ok", Admitted: 1,
		Entries: []store.CallEntry{{Status: "admitted", LabelSource: "row"}}}
	_, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(2), Limits: store.MintLimits{Handles: 1}, Call: admitted, Mark: 5})
	wantErr(t, "Finish past the handle cap", err, store.ErrHandleLimit)
	beginMarked(t, s, "run-1", b, 9, false)
	if _, err := s.Finish(ctx, "run-1", store.Finish{Refs: refs(2), Call: admitted, Mark: 5}); err != nil {
		t.Fatalf("Finish = %v", err)
	}
	beginMarked(t, s, "run-1", b, 10, true)
	if n := getRun(t, s, "run-1").Calls; n != 2 {
		t.Errorf("Calls = %d, want the 2 Finishes that wrote", n)
	}
}

// testInFlightLease: a mark not given back expires at Begin's clock plus
// Lease, and Begin drops it before counting; giving back an expired mark
// releases nothing of the mark that took its place.
func testInFlightLease(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	lease := h.lease()
	b := store.Begin{MaxInFlight: 1, Lease: lease}
	beginMarked(t, s, "run-1", b, 1, true)
	beginMarked(t, s, "run-1", b, 2, false)
	if h.opts.RealTime {
		h.advance(lease + 100*time.Millisecond)
	} else {
		h.advance(lease - time.Millisecond)
		beginMarked(t, s, "run-1", b, 3, false)
		h.advance(time.Millisecond) // the mark expires at its lease
	}
	seq := getRun(t, s, "run-1").Seq + 1
	beginMarked(t, s, "run-1", b, seq, true)
	if _, err := s.Finish(ctx, "run-1", store.Finish{Call: errorCall("run-1", 1), Mark: 1}); err != nil {
		t.Fatalf("Finish of the expired mark = %v", err)
	}
	if err := s.Release(ctx, "run-1", 1); err != nil {
		t.Fatalf("Release of the expired mark = %v", err)
	}
	beginMarked(t, s, "run-1", b, seq+1, false)
}

// testInFlightDeleted: a deleted run's marks go with it; a run
// recreated under the id starts with none.
func testInFlightDeleted(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	b := store.Begin{MaxInFlight: 1, Lease: time.Hour}
	beginMarked(t, s, "run-1", b, 1, true)
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "run-1", 1); err != nil {
		t.Errorf("Release of a deleted run = %v, want nil", err)
	}
	_, err := s.Finish(ctx, "run-1", store.Finish{Call: errorCall("run-1", 1), Mark: 1})
	wantErr(t, "Finish of a deleted run", err, store.ErrRunNotFound)
	_, err = s.Begin(ctx, "run-1", b)
	wantErr(t, "Begin of a deleted run", err, store.ErrRunNotFound)
	create(t, s, h.run("run-1"))
	beginMarked(t, s, "run-1", b, 1, true)
}

// testInFlightConcurrent races many Begins of one run under a cap:
// exactly the cap take a mark, and each a number of its own.
func testInFlightConcurrent(t *testing.T, h *harness) {
	const goroutines, limit = 30, 3
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	got := make([]store.Run, goroutines)
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		got[g], errs[g] = s.Begin(ctx, "run-1", store.Begin{MaxInFlight: limit, Lease: time.Hour})
	})
	marked, seen := 0, map[int64]bool{}
	for g, err := range errs {
		if err != nil {
			t.Fatalf("Begin = %v", err)
		}
		if seen[got[g].Seq] {
			t.Errorf("Seq %d taken twice", got[g].Seq)
		}
		seen[got[g].Seq] = true
		if got[g].Marked {
			marked++
		}
	}
	if marked != limit {
		t.Errorf("%d Begins took a mark, want the cap, %d", marked, limit)
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
