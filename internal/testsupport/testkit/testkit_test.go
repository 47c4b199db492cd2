package testkit

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	if !Poll(time.Second, func() bool { return n.Add(1) == 3 }) {
		t.Error("Poll gave up on a condition that came to hold")
	}
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Error("Poll reported a condition that never held")
	}
}

func TestRandomHex(t *testing.T) {
	a, b := RandomHex(8), RandomHex(8)
	if len(a) != 16 || a == b {
		t.Errorf("RandomHex(8) = %q, %q", a, b)
	}
}

func TestLogRecords(t *testing.T) {
	logs := `{"msg":"audit","n":1}` + "\n" + `{"msg":"request"}` + "\n" + `text line` + "\n" + `{"msg":"audit","n":2}` + "\n"
	recs := LogRecords(t, logs, "audit", true)
	if len(recs) != 2 || recs[0]["n"] != float64(1) || recs[1]["n"] != float64(2) {
		t.Errorf("LogRecords = %v", recs)
	}
}

func TestHeapInUse(t *testing.T) {
	if HeapInUse() == 0 || LiveHeap() == 0 {
		t.Error("no heap in use")
	}
}

// TestPeakHeap: a buffer held while f runs, and dropped before it returns,
// is in the peak.
var held []byte

func TestPeakHeap(t *testing.T) {
	runtime.GC()
	before, peak := PeakHeap(20*time.Microsecond, func() {
		held = make([]byte, 8<<20)
		time.Sleep(5 * time.Millisecond)
		held = nil
	})
	if peak < before+8<<20 {
		t.Errorf("PeakHeap = %d, %d: want a peak 8 MiB above", before, peak)
	}
}
