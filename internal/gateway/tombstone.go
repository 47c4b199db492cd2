package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/store"
)

// ErrRunEnded: the token opened a run that has ended, deleted or
// expired (run_ended, 410): retrying will not help.
var ErrRunEnded = errors.New("gateway: run ended")

// TombstoneFloor is the least time a run's token is recognised after
// the run expires.
const TombstoneFloor = 10 * time.Minute

// putTombstone records that run's token opened run: from its creation
// until the run's lifetime again (at least TombstoneFloor) after it
// expires, so that a token of a deleted run is recognised at least until
// the run would have expired, and one of an expired run for as long
// again as it lived. It is written
// with the run, so no later event (a delete, an expiry in Redis) has to
// remember it; a failure to write it leaves the token answered as a
// stranger's once the run ends.
func (s *Service) putTombstone(ctx context.Context, run store.Run) {
	_ = s.cfg.Store.PutTombstone(ctx, run.TokenHash, run.ID, run.ExpiresAt.Add(max(run.ExpiresAt.Sub(run.CreatedAt), TombstoneFloor)))
}

// ended is the answer to a token hashed h that opens no live run on a
// path naming runID ("" outside a run's path): run_ended when the
// token's tombstone names that run (or the path names none), else
// orElse. A token that never opened the run the path names learns
// nothing from it.
func (s *Service) ended(ctx context.Context, h store.TokenHash, runID string, orElse error) error {
	id, err := s.cfg.Store.Tombstone(ctx, h)
	if err != nil || runID != "" && id != runID {
		return orElse
	}
	return &Error{Code: problem.RunEnded, Err: ErrRunEnded}
}
