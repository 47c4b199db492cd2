package loom

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
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

func TestSplitContext(t *testing.T) {
	t.Parallel()
	const n = 3*checkRows + 1
	rows := strings.Repeat(`{"id":1},`, n-1) + `{"id":1}`
	payloads := map[Tool]string{
		Search:       `{"hits":[` + rows + `]}`,
		PageDiscover: `{"pages":[` + rows + `]}`,
		CalendarList: `[` + rows + `]`,
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for tool, p := range payloads {
		got, more, _, err := SplitContext(context.Background(), tool, []byte(p), -1)
		if err != nil || len(got) != n || more != 0 {
			t.Errorf("SplitContext(%s, live, all) = %d rows + %d, %v; want %d + 0", tool, len(got), more, err, n)
		}
		got, more, _, err = SplitContext(context.Background(), tool, []byte(p), 10)
		if err != nil || len(got) != 10 || more != n-10 {
			t.Errorf("SplitContext(%s, live, 10) = %d rows + %d, %v; want 10 + %d", tool, len(got), more, err, n-10)
		}
		if _, _, _, err := SplitContext(done, tool, []byte(p), -1); !errors.Is(err, context.Canceled) {
			t.Errorf("SplitContext(%s, done) = %v, want context.Canceled", tool, err)
		}
		// A malformed payload is still malformed with a live context.
		if _, _, _, err := SplitContext(context.Background(), tool, []byte(p[:len(p)-1]), 10); !errors.Is(err, ErrMalformedPayload) {
			t.Errorf("SplitContext(%s, truncated) = %v, want ErrMalformedPayload", tool, err)
		}
	}
	// A repeated list member replaces the rows and the count.
	got, more, _, err := SplitContext(context.Background(), Search, []byte(`{"hits":[1,2,3],"hits":[4,5]}`), 1)
	if err != nil || len(got) != 1 || string(got[0]) != "4" || more != 1 {
		t.Errorf("SplitContext(repeated hits, 1) = %q + %d, %v; want [4] + 1", got, more, err)
	}
}

// TestSplitManyRowsMemory: keeping MaxMeasuredRows rows, a payload of
// millions of tiny rows costs a few kilobytes of boundaries, not 24 bytes
// a row.
func TestSplitManyRowsMemory(t *testing.T) {
	payload := []byte(`[` + strings.Repeat(`1,`, 4_000_000) + `1]`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rows, more, _, err := SplitContext(context.Background(), CalendarList, payload, ifc.MaxMeasuredRows)
	runtime.ReadMemStats(&after)
	if err != nil || len(rows) != ifc.MaxMeasuredRows || more != 4_000_001-ifc.MaxMeasuredRows {
		t.Fatalf("SplitContext = %d rows + %d, %v", len(rows), more, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("SplitContext allocated %d bytes, want < 1 MiB", n)
	}
}
