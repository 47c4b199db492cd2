package handlers

import (
	"context"
	"errors"

	"github.com/loom-gateway/gateway/internal/store"
)

// DeleteWatcher is a run store shared by replicas that reports the runs
// deleted through the other replicas (store.Redis; see store.DeleteWatch).
// WatchDeletes reports until ctx is done, then returns.
type DeleteWatcher interface {
	WatchDeletes(ctx context.Context, w store.DeleteWatch)
}

// FollowDeletes makes a DELETE served by another replica cancel this
// replica's calls of the run, as a DELETE served here does: they answer
// cancelled and their loom process groups are killed. Each time w
// subscribes (at start and after a lost connection, when deletes may have
// been missed) it also cancels the calls of every run it finds gone. It
// logs the failures of w (the first of a series at warn, the rest at
// debug) and returns when ctx is done; run it on a goroutine of its own
// for as long as calls may be in flight. Nothing of it reaches a response.
func (d *Deps) FollowDeletes(ctx context.Context, w DeleteWatcher) {
	log := d.logger()
	failing := false // only the watch's goroutine calls the functions below
	w.WatchDeletes(ctx, store.DeleteWatch{
		Deleted: func(runID string) {
			if n := d.inflight.cancelRun(runID); n > 0 {
				log.InfoContext(ctx, "calls cancelled: run deleted through another replica", "runId", runID, "calls", n)
			}
		},
		Subscribed: func() {
			if failing {
				failing = false
				log.InfoContext(ctx, "run delete watch restored")
			}
			d.cancelGoneRuns(ctx)
		},
		Failed: func(err error) {
			if failing {
				log.DebugContext(ctx, "run delete watch failed again", "code", codeOf(err), "err", err)
				return
			}
			failing = true
			log.WarnContext(ctx, "run delete watch failed; retrying (until it is back, a call of a run deleted through another replica runs to its end)",
				"code", codeOf(err), "err", err)
		},
	})
}

// cancelGoneRuns cancels the calls in flight of the runs the store no
// longer holds: deleted while no delete could be reported, or expired.
// A run the store cannot be asked about is left alone: its calls find out
// when they next touch the store.
func (d *Deps) cancelGoneRuns(ctx context.Context) {
	for _, id := range d.inflight.runs() {
		if _, err := d.Store.Run(ctx, id); errors.Is(err, store.ErrRunNotFound) {
			if n := d.inflight.cancelRun(id); n > 0 {
				d.logger().InfoContext(ctx, "calls cancelled: run gone", "runId", id, "calls", n)
			}
		}
	}
}
