package memstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// fakeClock is a settable clock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (m *Store) sizes() (runs, tokens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs), len(m.byToken)
}

func TestMemoryExpiryHousekeeping(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := New(Options{Now: clock.Now})
	for i, life := range []time.Duration{time.Minute, time.Minute, time.Hour, 0} {
		r := store.Run{ID: fmt.Sprintf("run-%d", i), TokenHash: store.HashToken(fmt.Sprint(i)), CreatedAt: clock.now}
		if life > 0 {
			r.ExpiresAt = clock.now.Add(life)
		}
		if err := m.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Sweep(); got != 0 {
		t.Errorf("Sweep before expiry = %d, want 0", got)
	}

	clock.now = clock.now.Add(time.Minute)
	// A lookup deletes the expired run it meets...
	if _, err := m.Run(ctx, "run-0"); !errors.Is(err, store.ErrRunNotFound) {
		t.Fatalf("Run(expired) = %v", err)
	}
	if runs, tokens := m.sizes(); runs != 3 || tokens != 3 {
		t.Errorf("after lazy delete: %d runs, %d tokens, want 3, 3", runs, tokens)
	}
	// ...and Sweep the rest.
	if got := m.Sweep(); got != 1 {
		t.Errorf("Sweep = %d, want 1", got)
	}
	if runs, tokens := m.sizes(); runs != 2 || tokens != 2 {
		t.Errorf("after Sweep: %d runs, %d tokens, want 2, 2", runs, tokens)
	}

	// A zero ExpiresAt never expires.
	clock.now = clock.now.AddDate(100, 0, 0)
	if got := m.Sweep(); got != 1 {
		t.Errorf("Sweep a century later = %d, want 1", got)
	}
	if _, err := m.Run(ctx, "run-3"); err != nil {
		t.Errorf("Run(no ExpiresAt) = %v, want nil", err)
	}
}

func TestMemoryNilNow(t *testing.T) {
	m := New(Options{})
	ctx := context.Background()
	now := time.Now()
	if err := m.CreateRun(ctx, store.Run{ID: "past", ExpiresAt: now.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateRun(ctx, store.Run{ID: "future", TokenHash: store.HashToken("f"), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, "past"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Run(expired by the wall clock) = %v, want ErrRunNotFound", err)
	}
	if _, err := m.Run(ctx, "future"); err != nil {
		t.Errorf("Run(live) = %v", err)
	}
}
