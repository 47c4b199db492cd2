package tests

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/api/client"
)

// TestRateLimit: a run that calls faster than --run-rate past a burst of
// --run-burst is refused 429 rate_limited with Retry-After (and
// retryAfter in the body), without an outputId, a loom process or a call
// log record; the refusal has an audit record and counts in the metrics;
// on MCP it is an isError result that says when to retry. Another run
// has a bucket of its own, and the run calls again once its bucket
// refills.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	// 2 calls a second: half a second refills one call.
	g := startGateway(t, gwOptions{Flags: []string{"--log-format", "json", "--run-rate", "2", "--run-burst", "4"}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":1}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	start := time.Now()
	// The MCP session's start (server/discover, under the revision the
	// SDK speaks) spends a call of the run's budget, as every request an
	// agent sends does.
	s, err := mcpSession(t, g, r.ID, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	r.ok(t, "loom_search", `{"query":"q"}`)
	if rep := r.call(t, "describe_handle", `{"token":"cfh:v:22222"}`); rep.Status != http.StatusOK {
		t.Fatalf("describe_handle: %d %s, want 200", rep.Status, rep.Body)
	}
	r.ok(t, "loom_search", `{"query":"q"}`)
	if time.Since(start) > 400*time.Millisecond {
		t.Skip("four requests took longer than the bucket takes to refill one")
	}
	loomRuns := len(g.loomCalls(t))

	rep := r.call(t, "loom_search", `{"query":"q"}`)
	p := wantProblem(t, rep, http.StatusTooManyRequests, "rate_limited")
	if p.OutputId != nil {
		t.Errorf("outputId = %q on a refused call, want none", *p.OutputId)
	}
	ra, err := strconv.Atoi(rep.Header.Get("Retry-After"))
	if err != nil || ra != 1 {
		t.Errorf("Retry-After = %q, want 1 (half a second, rounded up)", rep.Header.Get("Retry-After"))
	}
	var body struct{ RetryAfter int }
	if err := json.Unmarshal(rep.Body, &body); err != nil || body.RetryAfter != ra {
		t.Errorf("retryAfter in the body = %d, want %d: %s", body.RetryAfter, ra, rep.Body)
	}
	wantProblem(t, r.call(t, "describe_handle", `{"token":"cfh:v:22222"}`), http.StatusTooManyRequests, "rate_limited")

	// On MCP: an isError result carrying the problem and when to retry.
	res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: json.RawMessage(`{"query":"q"}`)})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var mp struct {
		Code       string
		RetryAfter int
		OutputID   *string `json:"outputId"`
	}
	if err := json.Unmarshal([]byte(text), &mp); err != nil || !res.IsError || mp.Code != "rate_limited" || mp.RetryAfter < 1 || mp.OutputID != nil {
		t.Errorf("MCP call past the rate: isError %v, %s", res.IsError, text)
	}

	if n := len(g.loomCalls(t)); n != loomRuns {
		t.Errorf("loom ran %d more times for refused calls", n-loomRuns)
	}
	if calls := r.calls(t); len(calls) != 3 {
		t.Errorf("call log holds %d calls, want the 3 let through", len(calls))
	}
	audits := g.waitLogRecords(t, "audit", 6)
	limited := 0
	for _, a := range audits {
		if a["code"] == "rate_limited" {
			limited++
			if _, ok := a["outputId"]; ok || a["runId"] != r.ID {
				t.Errorf("audit of a refused call: %v", a)
			}
		}
	}
	if limited != 3 {
		t.Errorf("%d audit records of rate_limited, want 3", limited)
	}
	if got := g.metric(t, `loom_gateway_tool_calls_total{code="rate_limited",tool="loom_search"}`); got != 2 {
		t.Errorf("tool_calls_total{rate_limited, loom_search} = %v, want 2", got)
	}

	other := g.newRun(t, client.CreateRunInput{})
	if res := other.ok(t, "loom_search", `{"query":"q"}`); !strings.HasSuffix(res.OutputId, ":1") {
		t.Errorf("another run's outputId = %q, want its first", res.OutputId)
	}

	time.Sleep(time.Duration(ra) * time.Second)
	if res := r.ok(t, "loom_search", `{"query":"q"}`); res.OutputId != r.ID+":loom_search:4" {
		t.Errorf("after Retry-After: outputId %q, want %s:loom_search:4 (the refused calls took no number)", res.OutputId, r.ID)
	}
}

// TestRunRateFloor: a --run-rate below one call a day is refused at
// startup, naming the floor (1e-300 used to be taken, its refusals saying
// Retry-After: 1 of a bucket that never refills); at the floor a refused
// call's Retry-After is the day the bucket takes to refill.
func TestRunRateFloor(t *testing.T) {
	t.Parallel()
	listen := []string{"--listen", "127.0.0.1:0", "--host-listen", "unix:" + filepath.Join(newScenarioDir(t), "host.sock")}
	for _, rate := range []string{"1e-300", "0.00001", "0.000011574"} {
		code, out := runGateway(t, nil, append([]string{"--run-rate", rate}, listen...)...)
		if code != 2 {
			t.Errorf("--run-rate %s: exit %d, want 2\n%s", rate, code, out)
		}
		for _, w := range []string{"--run-rate ", "one call a day", "0.0000115741"} {
			if !strings.Contains(out, w) {
				t.Errorf("--run-rate %s: the refusal does not say %q:\n%s", rate, w, out)
			}
		}
	}

	g := startGateway(t, gwOptions{Flags: []string{"--run-rate", "0.0000115741", "--run-burst", "1"}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":1}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"q"}`)
	rep := r.call(t, "loom_search", `{"query":"q"}`)
	wantProblem(t, rep, http.StatusTooManyRequests, "rate_limited")
	if ra, err := strconv.Atoi(rep.Header.Get("Retry-After")); err != nil || ra < 86390 || ra > 86400 {
		t.Errorf("Retry-After = %q at one call a day with an empty bucket, want the day it takes to refill (86400 s)", rep.Header.Get("Retry-After"))
	}
}
