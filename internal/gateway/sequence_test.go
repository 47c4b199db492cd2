package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestOutputSequence: every output of a run, errors and describe_handle
// included, takes the next number of one run-wide sequence; the result
// writer takes none; another run counts on its own; the call log holds
// every output.
func TestOutputSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCore(t, coreOptions{})
	tok, tokOther := c.createRun(t, "r"), c.createRun(t, "other")
	steps := []struct {
		op, input string
		code      string // "" for an answer
		outputID  string // "" for no output
	}{
		{"loom_search", `{"query":"atlas"}`, "", "r:loom_search:1"},
		{"loom_search", `{"query":"-x"}`, "invalid_input", "r:loom_search:2"}, // builder refusal
		{"describe_handle", `{"token":"cfh:v:22222"}`, "", "r:describe_handle:3"},
		{"loom_people", `{"query":"nobody@example.com"}`, "not_found", "r:loom_people:4"}, // loom error
		{"result", `"done"`, "", ""}, // the result writer is not an output
		{"loom_profile", `{}`, "", "r:loom_profile:5"},
	}
	for _, s := range steps {
		body, err := c.call(ctx, "r", tok, s.op, s.input)
		if s.code != "" {
			wantError(t, err, s.code, s.outputID)
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", s.op, s.input, err)
		}
		var got struct {
			OutputID string `json:"outputId"`
		}
		if err := json.Unmarshal(body, &got); err != nil || got.OutputID != s.outputID {
			t.Errorf("%s %s: outputId %q (%v), want %q", s.op, s.input, got.OutputID, err, s.outputID)
		}
	}
	if _, err := c.call(ctx, "other", tokOther, "loom_profile", `{}`); err != nil {
		t.Fatal(err)
	}
	if calls := c.callLog(t, "other"); len(calls) != 1 || calls[0].OutputID != "other:loom_profile:1" {
		t.Errorf("another run's call log: %+v", calls)
	}

	var ids []string
	for _, rec := range c.callLog(t, "r") {
		ids = append(ids, rec.OutputID)
	}
	want := []string{"r:loom_search:1", "r:loom_search:2", "r:describe_handle:3", "r:loom_people:4", "r:loom_profile:5"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("call log outputIds mismatch (-want +got):\n%s", diff)
	}
	if n := c.run(t, "r").Calls; n != len(want) {
		t.Errorf("run counts %d calls, want %d", n, len(want))
	}
}
