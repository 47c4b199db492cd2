package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// inflight tracks the cancel functions of the calls in flight per run, so
// deleting a run cancels its calls (they answer cancelled): a delete
// served here, or one served by another replica (FollowDeletes).
type inflight struct {
	mu    sync.Mutex
	calls map[string]map[*context.CancelCauseFunc]struct{}
}

// add registers a call of the run; it returns the function that removes
// it. The cap on a run's calls in flight is the store's (Begin's
// in-flight marks), not this registry's.
func (f *inflight) add(runID string, cancel *context.CancelCauseFunc) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if f.calls[runID] == nil {
		f.calls[runID] = map[*context.CancelCauseFunc]struct{}{}
	}
	f.calls[runID][cancel] = struct{}{}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.calls[runID], cancel)
		if len(f.calls[runID]) == 0 {
			delete(f.calls, runID)
		}
	}
}

// cancelRun cancels the run's calls in flight, with the cause
// ErrCancelled, and returns how many there were.
func (f *inflight) cancelRun(runID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.calls[runID] {
		(*c)(ErrCancelled)
	}
	return len(f.calls[runID])
}

// runs returns the ids of the runs with calls in flight.
func (f *inflight) runs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.calls))
	for id := range f.calls {
		ids = append(ids, id)
	}
	return ids
}

// DeleteWatcher is a run store shared by replicas that reports the runs
// deleted through the other replicas (the Redis store; see
// store.DeleteWatch). WatchDeletes reports until ctx is done, then
// returns.
type DeleteWatcher interface {
	WatchDeletes(ctx context.Context, w store.DeleteWatch)
}

// FollowDeletes makes a delete served by another replica cancel this
// replica's calls of the run, as a delete served here does: they answer
// cancelled and their loom process groups are killed. Each time w
// subscribes (at start and after a lost connection, when deletes may have
// been missed) it also cancels the calls of every run it finds gone. It
// logs the failures of w (the first of a series at warn, the rest at
// debug) and returns when ctx is done; run it on a goroutine of its own
// for as long as calls may be in flight. Nothing of it reaches a response.
func (s *Service) FollowDeletes(ctx context.Context, w DeleteWatcher) {
	failing := false // only the watch's goroutine calls the functions below
	w.WatchDeletes(ctx, store.DeleteWatch{
		Deleted: func(runID string) {
			s.limited.forget(runID)
			if n := s.inflight.cancelRun(runID); n > 0 {
				s.log.InfoContext(ctx, "calls cancelled: run deleted through another replica", "runId", runID, "calls", n)
			}
		},
		Subscribed: func() {
			if failing {
				failing = false
				s.log.InfoContext(ctx, "run delete watch restored")
			}
			s.cancelGoneRuns(ctx)
		},
		Failed: func(err error) {
			if failing {
				s.log.DebugContext(ctx, "run delete watch failed again", "code", CodeOf(err), "err", err)
				return
			}
			failing = true
			s.log.WarnContext(ctx, "run delete watch failed; retrying (until it is back, a call of a run deleted through another replica runs to its end)",
				"code", CodeOf(err), "err", err)
		},
	})
}

// cancelGoneRuns cancels the calls in flight of the runs the store no
// longer holds: deleted while no delete could be reported, or expired.
// A run the store cannot be asked about is left alone: its calls find out
// when they next touch the store.
func (s *Service) cancelGoneRuns(ctx context.Context) {
	for _, id := range s.inflight.runs() {
		if _, err := s.cfg.Store.Run(ctx, id); errors.Is(err, store.ErrRunNotFound) {
			if n := s.inflight.cancelRun(id); n > 0 {
				s.log.InfoContext(ctx, "calls cancelled: run gone", "runId", id, "calls", n)
			}
		}
	}
}

// notBefore holds, per run, when the rate bucket Begin last refused holds
// a call again, so that a run calling past its rate is refused on this
// replica without a store step until then. What it holds is what the
// bucket answered: every replica shares the bucket and only takes calls
// from it, so none can hold a call sooner. An entry is checked again in
// the store after at most notBeforeMax, and forgotten when its run is
// deleted (forget), so a run that ends is answered as ended soon after.
type notBefore struct {
	mu   sync.Mutex
	runs map[string]limitedRun
}

// limitedRun is a run refused at its rate: the token hash Begin checked,
// when its bucket holds a call (until) and when to ask the store again.
type limitedRun struct {
	token        store.TokenHash
	until, check time.Time
}

// notBeforeMax bounds how long a refusal is answered here without asking
// the store again.
const notBeforeMax = time.Second

// wait reports whether the claim's run is refused until later than now,
// and for how long. Only a claim with the token Begin checked matches.
func (n *notBefore) wait(cl Claim, now time.Time) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runs[cl.RunID]
	switch {
	case !ok:
		return 0, false
	case !now.Before(r.check):
		delete(n.runs, cl.RunID)
		return 0, false
	case r.token != cl.Token:
		return 0, false
	}
	return r.until.Sub(now), true
}

// set records that Begin refused the claim's run at now until until.
func (n *notBefore) set(cl Claim, now, until time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runs == nil {
		n.runs = map[string]limitedRun{}
	}
	if len(n.runs) >= 1024 {
		for id, r := range n.runs {
			if !now.Before(r.check) {
				delete(n.runs, id)
			}
		}
	}
	check := now.Add(notBeforeMax)
	if until.Before(check) {
		check = until
	}
	n.runs[cl.RunID] = limitedRun{token: cl.Token, until: until, check: check}
}

// forget drops the run's entry (the run was deleted).
func (n *notBefore) forget(runID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.runs, runID)
}
