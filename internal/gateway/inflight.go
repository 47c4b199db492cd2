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
//
// When the refusal has run its course and the bucket can hold only the
// one call it has refilled, the first claim to come asks the store for it
// and the others are refused here while it asks: had they asked too, the
// store would have refused all but one (a flood's workers did, one
// EVALSHA each, every time a refusal ran out). The asker's answer
// decides what comes next (answered, or set when the store refused it).
type notBefore struct {
	mu   sync.Mutex
	runs map[string]limitedRun
}

// limitedRun is a run refused at its rate: the token hash Begin checked,
// when its bucket holds a call (until) and when to ask the store again;
// asking while one claim of it is asking the store.
type limitedRun struct {
	token        store.TokenHash
	until, check time.Time
	asking       bool
	// refilled: the asker asks for the call the bucket refilled, and
	// until is the call after it.
	refilled bool
}

// notBeforeMax bounds how long a refusal is answered here without asking
// the store again.
const notBeforeMax = time.Second

// wait reports whether the claim's run is refused until later than now,
// and for how long. Only a claim with the token Begin checked matches.
// interval is how long the bucket takes to refill one call (0: no rate):
// within interval after the refusal's end the bucket holds one call, and
// the first claim then goes on to ask for it while the rest are refused
// until the call after it (until plus interval), or until the asker's
// answer (answered, set), or interval at the most; a claim that comes
// when the entry is due to be checked again before the refusal's end
// (notBeforeMax) asks the store alone too, the rest refused as before.
func (n *notBefore) wait(cl Claim, now time.Time, interval time.Duration) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runs[cl.RunID]
	switch {
	case !ok:
		return 0, false
	case r.token != cl.Token:
		if !now.Before(r.check) {
			delete(n.runs, cl.RunID)
		}
		return 0, false
	case now.Before(r.check):
		return r.until.Sub(now), true
	case !r.asking && interval > 0 && now.Sub(r.until) < interval:
		// The bucket holds at most one call (or none yet, when this is
		// the check notBeforeMax asks for): one claim asks for it.
		r.asking = true
		if r.refilled = !now.Before(r.until); r.refilled {
			r.until = r.until.Add(interval)
		}
		r.check = now.Add(min(interval, notBeforeMax))
		n.runs[cl.RunID] = r
		return 0, false
	}
	delete(n.runs, cl.RunID)
	return 0, false
}

// answered records the store's answer, other than a refusal at the rate
// (set), to a claim that went on past wait: when it took the call the
// bucket held, the run's other claims stay refused here until the bucket
// holds the next (the until wait set); any other answer ends the entry.
func (n *notBefore) answered(cl Claim, took bool, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runs[cl.RunID]
	if !ok || !r.asking || r.token != cl.Token {
		return
	}
	if !took || !r.refilled || !now.Before(r.until) {
		delete(n.runs, cl.RunID)
		return
	}
	r.asking, r.refilled = false, false
	r.check = now.Add(notBeforeMax)
	if r.until.Before(r.check) {
		r.check = r.until
	}
	n.runs[cl.RunID] = r
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
