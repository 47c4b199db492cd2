package handlers

import (
	"context"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// PutTombstone hands an ended run's token record to the wrapped store
// when it keeps them (store.Tombstones); otherwise nothing is kept.
func (s *countingStore) PutTombstone(ctx context.Context, h store.TokenHash, id string, until time.Time) error {
	return s.st.PutTombstone(ctx, h, id, until)
}

// Tombstone reads an ended run's token record from the wrapped store;
// store.ErrRunNotFound when it keeps none.
func (s *countingStore) Tombstone(ctx context.Context, h store.TokenHash) (string, error) {
	return s.st.Tombstone(ctx, h)
}
