package loomref

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
)

func TestSplitContext(t *testing.T) {
	t.Parallel()
	const n = 3*checkRows + 1
	rows := strings.Repeat(`{"id":1},`, n-1) + `{"id":1}`
	payloads := map[loom.Tool]string{
		loom.Search:       `{"hits":[` + rows + `]}`,
		loom.PageDiscover: `{"pages":[` + rows + `]}`,
		loom.CalendarList: `[` + rows + `]`,
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
		if _, _, _, err := SplitContext(context.Background(), tool, []byte(p[:len(p)-1]), 10); !errors.Is(err, loom.ErrMalformedPayload) {
			t.Errorf("SplitContext(%s, truncated) = %v, want ErrMalformedPayload", tool, err)
		}
	}
	// A repeated list member replaces the rows and the count.
	got, more, _, err := SplitContext(context.Background(), loom.Search, []byte(`{"hits":[1,2,3],"hits":[4,5]}`), 1)
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
	rows, more, _, err := SplitContext(context.Background(), loom.CalendarList, payload, ifc.MaxMeasuredRows)
	runtime.ReadMemStats(&after)
	if err != nil || len(rows) != ifc.MaxMeasuredRows || more != 4_000_001-ifc.MaxMeasuredRows {
		t.Fatalf("SplitContext = %d rows + %d, %v", len(rows), more, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("SplitContext allocated %d bytes, want < 1 MiB", n)
	}
}
