package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// logRecords returns the gateway's JSON log records with message msg.
func (g *gateway) logRecords(t testing.TB, msg string) []map[string]any {
	t.Helper()
	// Lenient: a gateway started with text logs writes no records.
	return testkit.LogRecords(t, g.output.String(), msg, true)
}

// waitLogRecords waits until the gateway has logged n records with
// message msg (its output reaches the suite through a pipe).
func (g *gateway) waitLogRecords(t testing.TB, msg string, n int) []map[string]any {
	t.Helper()
	var recs []map[string]any
	testkit.Poll(10*time.Second, func() bool {
		recs = g.logRecords(t, msg)
		return len(recs) >= n
	})
	return recs
}

// TestObservability: over the binary, with JSON logs and
// --audit-arg-shape, each tool call leaves one audit record of counts and
// codes, each request one request record by route pattern, and the host
// listener serves the metrics (Go and process collectors included) behind
// the host token while the agent listener does not. The fake loom's stderr
// and stdout, the withheld row and the argument values are planted with
// markers and reach neither the log nor /metrics, but for the stderr
// tail of the failed call's audit record, which is the host's.
func TestObservability(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--log-format", "json", "--audit-arg-shape"}})
	g.setBehaviour(t, "search", behaviour{
		Stdout: fill(`{"schemaVersion":1,"query":"q","hits":[` +
			`{"id":"a1","title":"ADMITTED-ROW-TEXT","ifc":{"confidentiality":["{W}"]}},` +
			`{"id":"w1","body":"{X}","ifc":{"confidentiality":["{H}"]}}]}`),
		StderrBytes: 4096, StderrMarker: markerStderr,
	})
	g.setBehaviour(t, "case-fail", behaviour{Stdout: "Traceback " + markerStderr, StderrBytes: 4096, StderrMarker: markerStderr, Exit: 2})
	r := g.workRun(t)

	res := r.ok(t, "loom_search", `{"query":"`+markerInput+`","limit":3}`)
	if res.Admitted != 1 || res.Withheld != 1 {
		t.Fatalf("admitted %d withheld %d, want 1 and 1", res.Admitted, res.Withheld)
	}
	r.fails(t, "loom_search", `{"query":"case=fail `+markerInput+`"}`, http.StatusBadGateway, "command_failed")

	// The audit records: one per call, counts and codes only.
	audits := g.waitLogRecords(t, "audit", 2)
	if len(audits) != 2 {
		t.Fatalf("%d audit records, want 2:\n%s", len(audits), g.output.String())
	}
	for i, want := range []map[string]any{
		{"runId": r.ID, "tool": "loom_search", "outputId": r.ID + ":loom_search:1", "status": "ok", "admitted": 1.0, "withheld": 1.0, "omitted": 0.0, "truncated": false, "exitCode": 0.0},
		{"runId": r.ID, "tool": "loom_search", "outputId": r.ID + ":loom_search:2", "status": "error", "code": "command_failed", "admitted": 0.0, "withheld": 0.0, "exitCode": 2.0},
	} {
		a := audits[i]
		for k, v := range want {
			if a[k] != v {
				t.Errorf("audit %d: %s = %v, want %v", i, k, a[k], v)
			}
		}
		if ms, ok := a["loomMs"].(float64); !ok || ms <= 0 {
			t.Errorf("audit %d: loomMs = %v, want the process's wall time", i, a["loomMs"])
		}
		if _, ok := a["requestId"].(string); !ok {
			t.Errorf("audit %d: no requestId", i)
		}
	}
	if diff := cmp.Diff([]any{"limit", "query"}, audits[0]["args"]); diff != "" {
		t.Errorf("audit args (-want +got):\n%s", diff)
	}

	// /metrics on the host listener, behind the host token.
	resp, body := rawRequest(t, "GET", g.HostURL+"/metrics", g.HostToken, "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics on the host listener: %d %.300s", resp.StatusCode, body)
	}
	metrics := string(body)
	for _, want := range []string{
		`loom_gateway_tool_calls_total{code="ok",tool="loom_search"} 1`,
		`loom_gateway_tool_calls_total{code="command_failed",tool="loom_search"} 1`,
		`loom_gateway_loom_process_duration_seconds_count{tool="loom_search"} 2`,
		`loom_gateway_tool_call_duration_seconds_count{tool="loom_search"} 2`,
		`loom_gateway_rows_admitted_total{tool="loom_search"} 1`,
		`loom_gateway_rows_withheld_total{reason="cfc_ceiling_exceeded",tool="loom_search"} 1`,
		`loom_gateway_handles_minted_total 1`,
		`loom_gateway_runs_live 1`,
		`loom_gateway_loom_processes_in_flight 0`,
		`loom_gateway_loom_processes_queued 0`,
		`loom_gateway_http_requests_total{listener="agent",route="/v1/runs/{runId}/loom_search",status="200"} 1`,
		`loom_gateway_http_requests_total{listener="host",route="/host/v1/runs",status="201"} 1`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if resp, _ := rawRequest(t, "GET", g.HostURL+"/metrics", "", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics on the host listener without the host token: %d, want 401", resp.StatusCode)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{r.Token, http.StatusNotFound}, {"", http.StatusUnauthorized}, {g.HostToken, http.StatusUnauthorized}} {
		resp, body := rawRequest(t, "GET", g.AgentURL+"/metrics", tc.token, "", nil)
		if resp.StatusCode != tc.want || strings.Contains(string(body), "loom_gateway_") {
			t.Errorf("GET /metrics on the agent listener: %d %.200s, want %d and no metrics", resp.StatusCode, body, tc.want)
		}
	}

	// One request record per request, by route pattern.
	reqs := g.waitLogRecords(t, "request", 6)
	var agentCalls int
	for _, rec := range reqs {
		if rec["listener"] == "agent" && rec["route"] == "/v1/runs/{runId}/loom_search" {
			agentCalls++
		}
		if _, ok := rec["requestId"].(string); !ok {
			t.Errorf("request record without requestId: %v", rec)
		}
	}
	if agentCalls != 2 {
		t.Errorf("%d request records of the loom_search route, want 2", agentCalls)
	}

	// The failed call's audit record holds loom's stderr, for the host,
	// in its failure's stderrTail and nowhere else.
	f, _ := audits[1]["failure"].(map[string]any)
	if tail, _ := f["stderrTail"].(string); f["reason"] != "not_json" || f["detail"] != "stdout is not JSON at byte 0; exit status 2" || !strings.Contains(tail, markerStderr) {
		t.Errorf("audit 1: failure %.300v, want not_json with loom's stderr", f)
	}
	if audits[0]["failure"] != nil {
		t.Errorf("audit 0: a call that succeeded has a failure: %v", audits[0]["failure"])
	}
	if !strings.Contains(metrics, `loom_gateway_call_failures_total{reason="not_json",tool="loom_search"} 1`) {
		t.Errorf("/metrics lacks the failure's reason")
	}
	logs := withoutStderrTails(t, g.output.String())
	for _, m := range append(markers, r.Token, g.HostToken, "Traceback", "ADMITTED-ROW-TEXT", atomHealth) {
		if strings.Contains(logs, m) {
			t.Errorf("the gateway's log holds %q", m)
		}
		if strings.Contains(metrics, m) {
			t.Errorf("/metrics holds %q", m)
		}
	}
}

// withoutStderrTails is a JSON log less the stderrTail of each audit
// record's failure: what must hold no host text.
func withoutStderrTails(t *testing.T, logs string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "audit" {
			if f, ok := rec["failure"].(map[string]any); ok {
				delete(f, "stderrTail")
				out, err := json.Marshal(rec)
				if err != nil {
					t.Fatal(err)
				}
				line = string(out)
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
