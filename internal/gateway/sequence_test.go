package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentCalls runs calls of one run in parallel: each gets its own
// output number, and the log holds them all.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	c := newTestCore(t, coreOptions{})
	tok := c.createRun(t, "r")
	const n = 24
	ops := []struct{ op, input string }{
		{"loom_search", `{"query":"atlas"}`},
		{"loom_profile", `{}`},
		{"describe_handle", `{"token":"cfh:v:22222"}`},
		{"loom_calendar_list", `{"all":true}`},
	}
	var wg sync.WaitGroup
	answered := make([]string, n)
	for i := range n {
		wg.Go(func() {
			o := ops[i%len(ops)]
			body, err := c.call(context.Background(), "r", tok, o.op, o.input)
			var out struct {
				OutputID string `json:"outputId"`
			}
			if err != nil || json.Unmarshal(body, &out) != nil || !strings.HasPrefix(out.OutputID, "r:"+o.op+":") {
				t.Errorf("%s: %s %v", o.op, body, err)
			}
			answered[i] = out.OutputID
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, id := range answered {
		k, err := strconv.Atoi(id[strings.LastIndexByte(id, ':')+1:])
		if err != nil || seen[k] || k < 1 || k > n {
			t.Errorf("outputId %q repeats or is out of 1..%d", id, n)
		}
		seen[k] = true
	}
	if calls := c.callLog(t, "r"); len(calls) != n {
		t.Errorf("call log has %d records, want %d", len(calls), n)
	}
}
