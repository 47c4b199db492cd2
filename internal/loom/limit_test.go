package loom

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := NewLimiter(1, 50*time.Millisecond)
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	if l.InFlight() != 1 {
		t.Errorf("InFlight = %d, want 1", l.InFlight())
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrBusy) {
		t.Errorf("Acquire with the only slot taken = %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLimiter(1, time.Minute).acquireFull(ctx); !errors.Is(err, ErrCancelled) {
		t.Errorf("Acquire cancelled while queued = %v, want ErrCancelled", err)
	}
	release()
	release() // a second call gives nothing back
	if l.InFlight() != 0 || l.Queued() != 0 {
		t.Errorf("after release: %d in flight, %d queued", l.InFlight(), l.Queued())
	}
	r1, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire after release = %v", err)
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrBusy) {
		t.Errorf("double release freed a second slot: Acquire = %v", err)
	}
	r1()
}

// acquireFull takes l's every slot, then Acquires one more with ctx.
func (l *Limiter) acquireFull(ctx context.Context) (func(), error) {
	for range cap(l.slots) {
		if _, err := l.Acquire(context.Background()); err != nil {
			return nil, err
		}
	}
	return l.Acquire(ctx)
}

// TestRunUnderCallerSlot: with Options.Limiter, Run takes no slot (its
// caller holds one), and the CLI's gauges are the Limiter's.
func TestRunUnderCallerSlot(t *testing.T) {
	t.Parallel()
	l := NewLimiter(1, -1)
	cli := New(Options{Timeout: time.Minute, Limiter: l})
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	argv, env := fake(t, "print", "{}", "0")
	out, err := cli.Run(context.Background(), argv, env)
	if err != nil || string(out.Stdout) != "{}" {
		t.Fatalf("Run under the caller's slot = %q, %v", out.Stdout, err)
	}
	if cli.InFlight() != 1 {
		t.Errorf("InFlight = %d after Run, want 1: the caller still holds its slot", cli.InFlight())
	}
}
