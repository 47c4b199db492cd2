package replicas

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// TestRateLimitShared: two replicas on one store share each run's rate
// bucket. With a burst of 4 and a rate that refills nothing within the
// test, four calls split across A and B get through and the fifth answers
// 429 rate_limited on either replica, with Retry-After and no outputId;
// describe_handle counts too, and another run has a bucket of its own.
func TestRateLimitShared(t *testing.T) { eachStore(t, testRateLimitShared) }

func testRateLimitShared(t *testing.T, url string) {
	e := setUp(t)
	flags := []string{"--run-rate", "0.001", "--run-burst", "4"}
	a := e.start(t, "replica A", url, flags...)
	b := e.start(t, "replica B", url, flags...)
	rn := e.newRun(t, a)
	t.Cleanup(func() { do(t, "DELETE", a.host+"/host/v1/runs/"+rn.id, e.hostToken, nil) })

	search := map[string]any{"query": "atlas"}
	a.call(t, rn, "loom_search", search)
	b.call(t, rn, "loom_search", search)
	b.describe(t, rn, "cfh:v:22222")
	a.call(t, rn, "loom_search", search)
	for _, r := range []*replica{a, b} {
		status, body := do(t, "POST", r.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, search)
		var p struct {
			Code       string  `json:"code"`
			OutputID   *string `json:"outputId"`
			RetryAfter int     `json:"retryAfter"`
		}
		expect(t, r.name+": a fifth call", status, body, http.StatusTooManyRequests, &p)
		if p.Code != "rate_limited" || p.OutputID != nil || p.RetryAfter < 1 {
			t.Errorf("%s: fifth call answered %s, want rate_limited with retryAfter and no outputId", r.name, body)
		}
	}
	resp := post(t, b.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, search)
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || err != nil || ra < 1 {
		t.Errorf("B: %d with Retry-After %q, want 429 and whole seconds", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// The refused calls took no output number and left no record.
	status, body := do(t, "GET", a.host+"/host/v1/runs/"+rn.id+"/calls", e.hostToken, nil)
	var log struct{ Calls []json.RawMessage }
	expect(t, "A: call log", status, body, http.StatusOK, &log)
	if len(log.Calls) != 4 {
		t.Errorf("call log holds %d records, want the 4 calls let through", len(log.Calls))
	}

	other := e.newRun(t, b)
	t.Cleanup(func() { do(t, "DELETE", b.host+"/host/v1/runs/"+other.id, e.hostToken, nil) })
	if res := a.call(t, other, "loom_search", search); seq(t, res.OutputID) != 1 {
		t.Errorf("another run's first call = %s, want :1", res.OutputID)
	}
}

// post sends a JSON POST and returns the response, its body read and
// closed.
func post(t *testing.T, url, token string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestRateLimitedRefusalsCostLittle: two replicas on a Redis of the
// test's own; once the bucket has refused a run on a replica, that
// replica refuses the run's calls without asking Redis until the bucket
// holds a call again (asking again after at most a second), so a flood
// of refused calls across both costs Redis about one EVALSHA per replica
// per second, not one or two per call.
func TestRateLimitedRefusalsCostLittle(t *testing.T) {
	url, rc := redistest.Start(t)
	e := setUp(t)
	flags := []string{"--run-rate", "0.001", "--run-burst", "2"}
	a := e.start(t, "replica A", url, flags...)
	b := e.start(t, "replica B", url, flags...)
	rn := e.newRun(t, a)
	search := map[string]any{"query": "atlas"}
	a.call(t, rn, "loom_search", search)
	b.call(t, rn, "loom_search", search)

	evalsha := func() int {
		info, err := rc.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _, _ := strings.Cut(rest, ",")
				v, _ := strconv.Atoi(n)
				return v
			}
		}
		return 0
	}
	const calls = 20
	before, start := evalsha(), time.Now()
	for i := range calls {
		r := []*replica{a, b}[i%2]
		status, body := do(t, "POST", r.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, search)
		if status != http.StatusTooManyRequests {
			t.Fatalf("%s: refused call %d = %d %s, want 429", r.name, i+1, status, body)
		}
	}
	asks := 2 * (1 + int(time.Since(start)/time.Second))
	if got := evalsha() - before; got < 2 || got > asks {
		t.Errorf("%d refused calls across two replicas ran %d EVALSHA, want 2 (one per replica; at most %d)", calls, got, asks)
	}
}
