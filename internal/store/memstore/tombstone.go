package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// tombstones are the ended runs' token records of a memory store.
type tombstones struct {
	mu sync.Mutex
	m  map[store.TokenHash]tombstone
	// swept is the size of m after its last sweep: m is swept of expired
	// records when it has doubled since, so it holds no more than twice
	// the records that are live.
	swept int
}

type tombstone struct {
	id    string
	until time.Time
}

// PutTombstone implements store.Store.
func (s *Store) PutTombstone(_ context.Context, h store.TokenHash, id string, until time.Time) error {
	t := &s.tombs
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[store.TokenHash]tombstone{}
	}
	if len(t.m) >= 2*t.swept+64 {
		now := s.now()
		for k, v := range t.m {
			if !now.Before(v.until) {
				delete(t.m, k)
			}
		}
		t.swept = len(t.m)
	}
	t.m[h] = tombstone{id, until}
	return nil
}

// Tombstone implements store.Store.
func (s *Store) Tombstone(_ context.Context, h store.TokenHash) (string, error) {
	t := &s.tombs
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[h]
	if !ok || !s.now().Before(v.until) {
		return "", store.ErrRunNotFound
	}
	return v.id, nil
}
