package loom

import (
	"context"
	"sync/atomic"
	"time"
)

// Limiter bounds the loom calls in progress. A call takes a slot before its
// process starts and gives it back once it is done with the process: when
// RunTool returns, or, for a caller that reads the Output under the slot too
// (Options.Limiter), when that reading ends. It is safe for concurrent use;
// build one with NewLimiter.
type Limiter struct {
	slots    chan struct{}
	wait     time.Duration
	inFlight atomic.Int64
	queued   atomic.Int64
}

// NewLimiter returns a Limiter of max slots whose callers wait up to wait
// for one. A max of 0 or less means DefaultMaxConcurrent; a wait of 0
// means DefaultQueueWait, a negative one not waiting at all.
func NewLimiter(max int, wait time.Duration) *Limiter {
	if max <= 0 {
		max = DefaultMaxConcurrent
	}
	if wait == 0 {
		wait = DefaultQueueWait
	}
	return &Limiter{slots: make(chan struct{}, max), wait: wait}
}

// Acquire takes a slot, waiting for one as NewLimiter says, and returns the
// function that gives it back; calling that more than once gives it back
// once.
//
// Errors: ErrBusy when no slot freed up in time, ErrCancelled when ctx was
// done first.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	if err := l.acquire(ctx); err != nil {
		return nil, err
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			l.release()
		}
	}, nil
}

// InFlight returns the number of calls holding a slot.
func (l *Limiter) InFlight() int64 { return l.inFlight.Load() }

// Queued returns the number of calls waiting for a slot.
func (l *Limiter) Queued() int64 { return l.queued.Load() }

func (l *Limiter) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		l.inFlight.Add(1)
		return nil
	default:
	}
	if l.wait < 0 {
		return ErrBusy
	}
	l.queued.Add(1)
	defer l.queued.Add(-1)
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		l.inFlight.Add(1)
		return nil
	case <-ctx.Done():
		return ErrCancelled
	case <-t.C:
		return ErrBusy
	}
}

func (l *Limiter) release() {
	l.inFlight.Add(-1)
	<-l.slots
}
