package gateway

import (
	"testing"
	"time"
)

// TestNotBeforeOneAsks: once a refusal at the run's rate has run its
// course, one claim asks the store for the call the bucket has refilled
// and the run's other claims are refused here meanwhile; its answer
// decides the rest. Before, every claim that came as the refusal ran out
// asked the store (a flood's workers, one EVALSHA each).
func TestNotBeforeOneAsks(t *testing.T) {
	const interval = 100 * time.Millisecond
	t0 := time.Unix(1000, 0)
	cl := ClaimOf("r1", "tok")
	stranger := ClaimOf("r1", "other")
	var n notBefore
	n.set(cl, t0, t0.Add(interval))

	if d, ok := n.wait(cl, t0.Add(50*time.Millisecond), interval); !ok || d != 50*time.Millisecond {
		t.Fatalf("within the refusal: wait = %v, %v; want refused for 50ms", d, ok)
	}
	if _, ok := n.wait(stranger, t0.Add(50*time.Millisecond), interval); ok {
		t.Fatal("another token is refused here; the store answers it")
	}
	end := t0.Add(interval)
	if _, ok := n.wait(cl, end, interval); ok {
		t.Fatal("the first claim as the refusal ends is refused; it should ask the store")
	}
	for i := range 7 {
		d, ok := n.wait(cl, end.Add(time.Duration(i)*time.Millisecond), interval)
		if !ok || d != interval-time.Duration(i)*time.Millisecond {
			t.Fatalf("claim %d while one asks: wait = %v, %v; want refused until the next call", i+2, d, ok)
		}
	}

	// The asker took the call: the others stay refused until the next.
	n.answered(cl, true, end.Add(10*time.Millisecond))
	if d, ok := n.wait(cl, end.Add(20*time.Millisecond), interval); !ok || d != 80*time.Millisecond {
		t.Fatalf("after the asker took the call: wait = %v, %v; want refused for 80ms", d, ok)
	}
	// The next call: again one asks.
	next := end.Add(interval)
	if _, ok := n.wait(cl, next, interval); ok {
		t.Fatal("the first claim at the next call is refused")
	}
	if _, ok := n.wait(cl, next.Add(time.Millisecond), interval); !ok {
		t.Fatal("a second claim while one asks goes on")
	}
	// The store refused the asker (another replica took the call): set.
	n.set(cl, next.Add(2*time.Millisecond), next.Add(interval))
	if d, ok := n.wait(cl, next.Add(3*time.Millisecond), interval); !ok || d != interval-3*time.Millisecond {
		t.Fatalf("after the store refused the asker: wait = %v, %v", d, ok)
	}

	// An answer that is not a call taken ends the entry: the next claim
	// asks the store.
	last := next.Add(interval)
	if _, ok := n.wait(cl, last, interval); ok {
		t.Fatal("the asker is refused")
	}
	n.answered(cl, false, last.Add(time.Millisecond))
	if _, ok := n.wait(cl, last.Add(2*time.Millisecond), interval); ok {
		t.Fatal("after an answer other than a call taken, a claim is still refused here")
	}

	// A refusal long past (the bucket has refilled more than one call):
	// every claim asks.
	var m notBefore
	m.set(cl, t0, t0.Add(interval))
	late := t0.Add(3 * interval)
	for i := range 3 {
		if _, ok := m.wait(cl, late.Add(time.Duration(i)), interval); ok {
			t.Fatalf("claim %d long after the refusal is refused here", i+1)
		}
	}
	// An asker that never answers holds the others for interval at most.
	var a notBefore
	a.set(cl, t0, t0.Add(interval))
	a.wait(cl, end, interval)
	if _, ok := a.wait(cl, end.Add(interval), interval); ok {
		t.Fatal("an asker that never answered holds the run past interval")
	}
}

// TestNotBeforeRecheck: a refusal longer than notBeforeMax is checked in
// the store after notBeforeMax by one claim; the others keep the
// store's until, not one call later.
func TestNotBeforeRecheck(t *testing.T) {
	const interval = 100 * time.Millisecond
	t0 := time.Unix(1000, 0)
	cl := ClaimOf("r1", "tok")
	var n notBefore
	until := t0.Add(10 * time.Second)
	n.set(cl, t0, until)
	check := t0.Add(notBeforeMax)
	if _, ok := n.wait(cl, check, interval); ok {
		t.Fatal("the claim due to check the store again is refused here")
	}
	if d, ok := n.wait(cl, check.Add(time.Millisecond), interval); !ok || d != until.Sub(check.Add(time.Millisecond)) {
		t.Fatalf("another claim while one checks: wait = %v, %v; want the store's until", d, ok)
	}
	// The store took the call after all (its bucket disagreed): the run
	// goes to the store again.
	n.answered(cl, true, check.Add(2*time.Millisecond))
	if _, ok := n.wait(cl, check.Add(3*time.Millisecond), interval); ok {
		t.Fatal("after the store took a re-checked call, a claim is refused here")
	}
}
