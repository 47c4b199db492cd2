package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/store"
)

// tombKey is the key of an ended run's token record: Pended:<hash>, a
// string holding the run id, expiring when the record ends.
func (s *Store) tombKey(h store.TokenHash) string {
	return s.prefix + "ended:" + hex.EncodeToString(h[:])
}

// PutTombstone implements store.Store.
func (s *Store) PutTombstone(ctx context.Context, h store.TokenHash, id string, until time.Time) error {
	ttl := until.Sub(s.now())
	if ttl <= 0 {
		return nil
	}
	if err := s.c.Set(ctx, s.tombKey(h), id, ttl).Err(); err != nil {
		return fail(ctx, "tombstone", err)
	}
	return nil
}

// Tombstone implements store.Store.
func (s *Store) Tombstone(ctx context.Context, h store.TokenHash) (string, error) {
	id, err := s.c.Get(ctx, s.tombKey(h)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", store.ErrRunNotFound
	case err != nil:
		return "", fail(ctx, "tombstone", err)
	}
	return id, nil
}
