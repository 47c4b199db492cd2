package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/store"
)

// --- the run list in pages ---

// pages reads every page of limit runs and returns the ids of each.
func pages(t *testing.T, s Store, limit int) [][]string {
	t.Helper()
	var out [][]string
	after := store.RunKey{}
	for range 100 {
		runs, more, err := s.RunsPage(context.Background(), after, limit)
		if err != nil {
			t.Fatalf("RunsPage(%v, %d) = %v", after, limit, err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		out = append(out, ids)
		if !more {
			return out
		}
		if len(runs) == 0 {
			t.Fatalf("RunsPage(%v, %d) = no runs, and more", after, limit)
		}
		after = store.KeyOf(runs[len(runs)-1])
	}
	t.Fatal("RunsPage: more than 100 pages")
	return nil
}

func testRunsPage(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	if got := pages(t, s, 3); len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("pages of an empty store = %v, want one empty page", got)
	}
	base := h.Now()
	// Created out of order; three share a CreatedAt (ties by ID, in bytes:
	// "run-C" before "run-c").
	at := map[string]time.Duration{"run-a": 5, "run-b": 1, "run-d": 2, "run-c": 2, "run-C": 2, "run-e": 0, "run-f": 4}
	for _, id := range []string{"run-a", "run-b", "run-d", "run-c", "run-e", "run-C", "run-f"} {
		r := h.run(id)
		r.CreatedAt = base.Add(-at[id] * time.Minute)
		create(t, s, r)
	}
	want := [][]string{{"run-a", "run-f", "run-C"}, {"run-c", "run-d", "run-b"}, {"run-e"}}
	if diff := cmp.Diff(want, pages(t, s, 3)); diff != "" {
		t.Errorf("pages of 3 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"run-a", "run-f", "run-C", "run-c", "run-d", "run-b", "run-e"}}, pages(t, s, 100)); diff != "" {
		t.Errorf("one page of 100 (-want +got):\n%s", diff)
	}
	runs, more, err := s.RunsPage(ctx, store.RunKey{}, 7)
	if err != nil || more || len(runs) != 7 {
		t.Errorf("RunsPage(limit = the count) = %d runs, more %v, %v; want 7, false", len(runs), more, err)
	}
	all, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, runs, cmpOpts); diff != "" {
		t.Errorf("RunsPage runs differ from Runs (-Runs +RunsPage):\n%s", diff)
	}

	// A page after a key no run has any more starts at the next run;
	// deleted runs are left out, even when the page must read past them.
	first, _, err := s.RunsPage(ctx, store.RunKey{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run-f", "run-C", "run-c"} {
		if err := s.DeleteRun(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	runs, more, err = s.RunsPage(ctx, store.KeyOf(first[1]), 2)
	if err != nil || !more || len(runs) != 2 || runs[0].ID != "run-d" || runs[1].ID != "run-b" {
		t.Errorf("RunsPage after deleted run-f = %v, more %v, %v; want run-d, run-b and more", ids(runs), more, err)
	}
}

func testRunsPageExpiry(t *testing.T, h *harness) {
	s := h.store(t, 0)
	base := h.Now()
	for i, id := range []string{"run-1", "run-2", "run-3", "run-4"} {
		r := h.run(id, h.ttl())
		if id == "run-2" || id == "run-3" {
			r = h.run(id, h.ttl()/2)
		}
		r.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		create(t, s, r)
	}
	h.advance(h.ttl()/2 + 10*time.Millisecond)
	if diff := cmp.Diff([][]string{{"run-1", "run-4"}}, pages(t, s, 2)); diff != "" {
		t.Errorf("pages with two runs expired (-want +got):\n%s", diff)
	}
}

func ids(runs []store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func testCountRuns(t *testing.T, h *harness) {
	s := h.store(t, 0)
	create(t, s, h.run("run-1", h.ttl()))
	create(t, s, h.run("run-2", 2*h.ttl()))
	create(t, s, h.run("run-3", 2*h.ttl()))
	if err := s.DeleteRun(context.Background(), "run-3"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountRuns(context.Background()); err != nil || n != 2 {
		t.Errorf("CountRuns = %d, %v, want 2", n, err)
	}
	h.advance(h.ttl() + 10*time.Millisecond)
	if n, err := s.CountRuns(context.Background()); err != nil || n != 1 {
		t.Errorf("CountRuns after run-1 expired = %d, %v, want 1", n, err)
	}
}
