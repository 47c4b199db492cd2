package store

import (
	"context"
	"time"
)

// Tombstones is kept by a store that remembers the tokens of runs that
// ended (deleted or expired), by the token's hash, so that such a token
// can be told its run is over instead of being refused like a stranger's.
type Tombstones interface {
	// PutTombstone records that the token hashed h opened run id, until
	// until (after it, the record is gone).
	PutTombstone(ctx context.Context, h TokenHash, id string, until time.Time) error
	// Tombstone returns the run id the token hashed h opened, while its
	// record lasts; ErrRunNotFound when there is none, or
	// ErrStoreUnavailable.
	Tombstone(ctx context.Context, h TokenHash) (string, error)
}
