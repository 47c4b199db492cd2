package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// stageCore is a core whose calls take a slot of a one-slot limiter
// (waiting up to wait) for their loom stage, bounded by timeout, and run
// hook just before measuring.
func stageCore(t *testing.T, wait, timeout time.Duration, hook func(stage context.Context)) (*testCore, *loom.Limiter) {
	t.Helper()
	slots := loom.NewLimiter(1, wait)
	c := newTestCore(t, coreOptions{Slots: slots, CommandTimeout: timeout})
	c.setBeforeMeasure(hook)
	return c, slots
}

// noSlotLeft fails t unless every slot of the limiter is free.
func noSlotLeft(t *testing.T, slots *loom.Limiter) {
	t.Helper()
	if n, q := slots.InFlight(), slots.Queued(); n != 0 || q != 0 {
		t.Errorf("after the calls: %d slots held, %d calls queued; want none", n, q)
	}
}

// TestSlotHeldUntilMeasured: with one loom slot, a second call waits until
// the first one's output is measured, not only until its process exits;
// when the wait is shorter than that measurement it is refused busy.
func TestSlotHeldUntilMeasured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("waits", func(t *testing.T) {
		t.Parallel()
		measuring, finish := make(chan struct{}, 2), release(t)
		var calls atomic.Int32
		c, slots := stageCore(t, 10*time.Second, time.Minute, func(context.Context) {
			measuring <- struct{}{}
			if calls.Add(1) == 1 { // the first call measures until finish
				<-finish
			}
		})
		tok1, tok2 := c.createRun(t, "one"), c.createRun(t, "two")

		done1 := c.start(ctx, "one", tok1, "loom_search", `{"query":"atlas"}`)
		within(t, measuring) // the first call's process has exited; it is measuring
		done2 := c.start(ctx, "two", tok2, "loom_search", `{"query":"atlas"}`)

		testkit.WaitFor(t, 5*time.Second, func() bool { return slots.Queued() == 1 })
		if n := len(c.fake.Calls()); n != 1 {
			t.Fatalf("loom ran %d times while the first call measured, want 1", n)
		}
		stillRunning(t, done2, "the second call, while the first measured,")
		close(finish)
		for _, ch := range []<-chan answer{done1, done2} {
			if a := within(t, ch); a.err != nil {
				t.Errorf("call: %v", a.err)
			}
		}
		if n := len(c.fake.Calls()); n != 2 {
			t.Errorf("loom ran %d times, want 2", n)
		}
		noSlotLeft(t, slots)
	})
	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		measuring, finish := make(chan struct{}, 2), release(t)
		c, slots := stageCore(t, 20*time.Millisecond, time.Minute, func(context.Context) {
			measuring <- struct{}{}
			<-finish
		})
		tok1, tok2 := c.createRun(t, "one"), c.createRun(t, "two")

		done1 := c.start(ctx, "one", tok1, "loom_search", `{"query":"atlas"}`)
		within(t, measuring)
		_, err := c.call(ctx, "two", tok2, "loom_search", `{"query":"atlas"}`)
		wantError(t, err, "busy", "two:loom_search:1")
		close(finish)
		if a := within(t, done1); a.err != nil {
			t.Errorf("first call: %v", a.err)
		}
		noSlotLeft(t, slots)
	})
}

// TestMeasurePastDeadline: a measurement that ends after CommandTimeout
// (counted from the slot, so the process's time counts) is refused
// command_failed, as a process timeout is; a run deleted while its output
// is measured is refused cancelled. Neither keeps its slot.
func TestMeasurePastDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		c, slots := stageCore(t, time.Second, 30*time.Millisecond, func(stage context.Context) {
			<-stage.Done() // measuring took all the time left
		})
		tok := c.createRun(t, "r")
		_, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
		wantError(t, err, "command_failed", "r:loom_search:1")
		noSlotLeft(t, slots)
		// Loom had exited: the deadline passed while its output was read.
		if f := c.callLog(t, "r")[0].Failure; f == nil || f.Reason != "stage_deadline" ||
			f.Detail != "loom had exited; reading its output passed the command timeout (30ms)" {
			t.Errorf("failure %+v, want stage_deadline", f)
		}
		// The slot is free again for the next call, which has time.
		c.setBeforeMeasure(nil)
		if _, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`); err != nil {
			t.Errorf("the next call: %v", err)
		}
		noSlotLeft(t, slots)
	})
	t.Run("run deleted", func(t *testing.T) {
		t.Parallel()
		var c *testCore
		c, slots := stageCore(t, time.Second, time.Minute, func(stage context.Context) {
			if err := c.DeleteRun(context.Background(), "r"); err != nil {
				t.Errorf("DeleteRun: %v", err)
			}
			<-stage.Done()
		})
		tok := c.createRun(t, "r")
		_, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
		wantError(t, err, "cancelled", "r:loom_search:1")
		noSlotLeft(t, slots)
		// The run's call log went with it: the audit record says why.
		audits := c.logRecords(t, "audit")
		if f, _ := audits[len(audits)-1]["failure"].(map[string]any); f["reason"] != "cancelled" || f["detail"] != "the run was deleted" {
			t.Errorf("audit failure %v, want cancelled: the run was deleted", f)
		}
	})
}
