// Package testkit holds the helpers the gateway's tests share: polling
// for a condition, random names, the heap in use and JSON log records.
// Only tests import it; production code must not (the architecture test,
// internal/archtest, holds that).
package testkit

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test when it does not hold within the given time.
func WaitFor(t testing.TB, within time.Duration, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("condition not reached within %v", within)
	}
}

// Poll polls cond every few milliseconds until it holds or the given time
// has passed, and reports whether it held.
func Poll(within time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return cond()
		}
	}
	return true
}

// RandomHex returns n random bytes, hex-encoded (2n characters).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// heapObjects is the runtime metric of the bytes held by heap objects,
// live or not yet swept.
const heapObjects = "/memory/classes/heap/objects:bytes"

// HeapInUse returns the bytes of heap objects now, without a collection:
// cheap enough to sample while something runs.
func HeapInUse() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// LiveHeap returns the live heap after two full collections.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return HeapInUse()
}

// PeakHeap runs f while a goroutine samples HeapInUse every interval, and
// returns it before f and its peak: the highest sample, or the reading
// after f when that is higher. It collects nothing first (a caller that
// wants the live heap as the base collects), and sampling allocates
// nothing.
func PeakHeap(interval time.Duration, f func()) (before, peak uint64) {
	sample := []metrics.Sample{{Name: heapObjects}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	before = read()
	stop := make(chan struct{})
	done := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: heapObjects}}
		top := before
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			metrics.Read(s)
			top = max(top, s[0].Value.Uint64())
			select {
			case <-stop:
				done <- top
				return
			case <-tick.C:
			}
		}
	}()
	f()
	last := read()
	close(stop)
	return before, max(<-done, last)
}

// LogRecords returns the JSON log records (one a line, as slog's
// JSONHandler writes them) of logs whose "msg" is msg. Lines that are not
// JSON objects are skipped when lenient, and fail the test otherwise.
func LogRecords(t testing.TB, logs string, msg string, lenient bool) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			if lenient {
				continue
			}
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Bytes())
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
