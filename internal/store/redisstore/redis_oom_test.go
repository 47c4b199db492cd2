package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// TestRedisFull: on a Redis at maxmemory with noeviction, every method
// that adds data (a run, an output number, a label, a call record, a
// handle, a result, a Finish even one that would give back an in-flight
// mark) fails with ErrStoreUnavailable and writes nothing, while reads,
// a deletion and the release of an in-flight mark (which free memory)
// work; once memory is freed the same run takes writes again, and a
// mark released while full is free.
func TestRedisFull(t *testing.T) {
	_, c := redistest.Start(t)
	ctx := context.Background()
	s := redisstore.New(c, redisstore.Options{MaxRuns: 100})
	now := time.Now()
	newRun := func(id string) store.Run {
		return store.Run{ID: id, TokenHash: store.HashToken("token-" + id), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	for _, id := range []string{"kept", "deleted"} {
		if err := s.CreateRun(ctx, newRun(id)); err != nil {
			t.Fatalf("CreateRun(%s) before the fill = %v", id, err)
		}
	}
	ref := store.Referent{Kind: "document", Source: "loom_search", Value: []byte(`"doc-1"`)}
	oneInFlight := store.Begin{MaxInFlight: 1, Lease: time.Hour}
	held, err := s.Begin(ctx, "kept", oneInFlight)
	if err != nil || !held.Marked {
		t.Fatalf("Begin before the fill = Marked %v, %v", held.Marked, err)
	}
	writes := map[string]func() error{
		"Begin": func() error { _, err := s.Begin(ctx, "kept", store.Begin{}); return err },
		"Finish": func() error {
			_, err := s.Finish(ctx, "kept", store.Finish{Call: store.Call{OutputID: "kept:loom_search:1", Tool: "loom_search", Status: "error"}, Mark: held.Seq})
			return err
		},
		"CreateRun":  func() error { return s.CreateRun(ctx, newRun("new")) },
		"NextOutput": func() error { _, err := s.NextOutput(ctx, "kept"); return err },
		"Observe": func() error {
			_, err := s.Observe(ctx, "kept", ifc.Confidentiality{ifc.Clause(`"A"`)})
			return err
		},
		"AppendCall": func() error {
			return s.AppendCall(ctx, "kept", store.Call{OutputID: "kept:loom_search:1", Tool: "loom_search", Status: "ok"})
		},
		"Mint": func() error {
			_, err := s.Mint(ctx, "kept", []store.Referent{ref}, store.MintLimits{})
			return err
		},
		"PutResult": func() error { return s.PutResult(ctx, "kept", store.Result{Value: []byte(`1`), WrittenAt: now}) },
	}

	redistest.Fill(t, c)
	for name, write := range writes {
		if err := write(); !errors.Is(err, store.ErrStoreUnavailable) {
			t.Errorf("%s on a full Redis = %v, want ErrStoreUnavailable", name, err)
		}
	}
	if _, err := s.Run(ctx, "new"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Run(new) after a refused CreateRun = %v, want ErrRunNotFound", err)
	}
	if runs, err := s.Runs(ctx); err != nil || len(runs) != 2 {
		t.Errorf("Runs on a full Redis = %d runs, %v; want the two made before", len(runs), err)
	}
	r, err := s.Run(ctx, "kept")
	if err != nil {
		t.Fatalf("Run(kept) on a full Redis = %v", err)
	}
	if r.Seq != 1 || r.Calls != 0 || r.Handles != 0 || r.HasResult || len(r.ModelContext) != 0 {
		t.Errorf("refused writes left %+v", r)
	}
	if err := s.DeleteRun(ctx, "deleted"); err != nil {
		t.Errorf("DeleteRun on a full Redis = %v, want nil (it frees memory)", err)
	}
	if err := s.Release(ctx, "kept", held.Seq); err != nil {
		t.Errorf("Release on a full Redis = %v, want nil (it frees memory)", err)
	}

	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Begin(ctx, "kept", oneInFlight); err != nil || !r.Marked {
		t.Errorf("Begin once memory is freed = Marked %v, %v, want the mark released while full free", r.Marked, err)
	}
	for name, write := range writes {
		if err := write(); err != nil {
			t.Errorf("%s once memory is freed = %v", name, err)
		}
	}
}
