package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// Tombstones runs the conformance checks of the tombstones
// (Store.PutTombstone, Store.Tombstone) against a
// store made by newStore with the real clock: a record names its run
// until it ends, is absent for a token never recorded, is replaced by a
// later one, and is gone after its time.
func Tombstones(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	s := newStore(t, Config{})
	h := store.HashToken("token-of-an-ended-run")
	if _, err := s.Tombstone(ctx, h); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Tombstone of a token never recorded = %v, want ErrRunNotFound", err)
	}
	if err := s.PutTombstone(ctx, h, "run-1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Tombstone(ctx, h); err != nil || id != "run-1" {
		t.Errorf("Tombstone = %q, %v; want run-1", id, err)
	}
	if err := s.PutTombstone(ctx, h, "run-2", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.Tombstone(ctx, h); id != "run-2" {
		t.Errorf("Tombstone after a second record = %q, want run-2", id)
	}
	short := store.HashToken("token-of-a-short-record")
	if err := s.PutTombstone(ctx, short, "run-3", time.Now().Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTombstone(ctx, store.HashToken("already-over"), "run-4", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tombstone(ctx, store.HashToken("already-over")); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("a record whose time is past = %v, want ErrRunNotFound", err)
	}
	time.Sleep(600 * time.Millisecond)
	if _, err := s.Tombstone(ctx, short); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("a record after its time = %v, want ErrRunNotFound", err)
	}
}
