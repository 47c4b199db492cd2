package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// logRecords returns the JSON log records of g with message msg.
func logRecords(t *testing.T, g *testGateway, msg string) []map[string]any {
	t.Helper()
	return testkit.LogRecords(t, g.logs.String(), msg, false)
}

// keys returns the sorted keys of a log record.
func keys(rec map[string]any) []string {
	out := make([]string, 0, len(rec))
	for k := range rec {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// requestKeys are the keys of a request record; "code" only when a problem
// answered.
var requestKeys = []string{"bytes", "durationMs", "level", "listener", "method", "msg", "requestId", "route", "status", "time"}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{HostToken: "host-secret"})
	_, tok := g.createRun(t, `{"runId":"r"}`)

	tests := []struct {
		name     string
		h        http.Handler
		listener string
		method   string
		path     string
		token    string
		body     string
		route    string
		status   int
		code     string
	}{
		{"tool call", g.agent, "agent", "POST", "/v1/runs/r/loom_search?q=x", tok, `{"query":"atlas"}`, "/v1/runs/{runId}/loom_search", 200, ""},
		{"host read", g.host, "host", "GET", "/host/v1/runs/r/calls", "host-secret", "", "/host/v1/runs/{runId}/calls", 200, ""},
		{"healthz", g.host, "host", "GET", "/healthz", "", "", "/healthz", 200, ""},
		{"no token", g.agent, "agent", "POST", "/v1/runs/r/loom_search", "", `{"query":"atlas"}`, "/v1/runs/{runId}/loom_search", 401, "unauthorized"},
		{"unknown route", g.agent, "agent", "GET", "/v1/runs/r/nothing-here", tok, "", "unmatched", 404, "route_not_found"},
		{"odd method", g.host, "host", "BREW", "/host/v1/runs", "host-secret", "", "unmatched", 405, "method_not_allowed"},
		{"invalid input", g.agent, "agent", "POST", "/v1/runs/r/loom_search", tok, `{"query":7}`, "/v1/runs/{runId}/loom_search", 400, "invalid_input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(logRecords(t, g, "request"))
			rec := testkit.Serve(tt.h, tt.method, tt.path, tt.token, tt.body)
			wantStatus(t, rec, tt.status)
			recs := logRecords(t, g, "request")
			if len(recs) != before+1 {
				t.Fatalf("%d request records after one request, want %d", len(recs), before+1)
			}
			got := recs[len(recs)-1]
			want := map[string]any{
				"listener":  tt.listener,
				"method":    tt.method,
				"route":     tt.route,
				"status":    float64(tt.status),
				"requestId": rec.Header().Get("X-Request-Id"),
				"bytes":     float64(rec.Body.Len()),
			}
			if tt.method == "BREW" {
				want["method"] = "OTHER"
			}
			wantKeys := requestKeys
			if tt.code != "" {
				want["code"] = tt.code
				wantKeys = append(slices.Clone(requestKeys), "code")
				slices.Sort(wantKeys)
			}
			if diff := cmp.Diff(wantKeys, keys(got)); diff != "" {
				t.Errorf("request record keys (-want +got):\n%s", diff)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("request record %s = %v, want %v", k, got[k], v)
				}
			}
			if want["requestId"] == "" {
				t.Errorf("no X-Request-Id")
			}
		})
	}
}

// auditKeys are the keys every audit record has.
var auditKeys = []string{"admitted", "durationMs", "level", "msg", "omitted", "outputId", "requestId", "runId", "status", "time", "tool", "truncated", "withheld"}

// failingStore fails the named operation with err.
type failingStore struct {
	gateway.Store
	op  string
	err error
}

func (s failingStore) Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error) {
	if s.op == "observe" {
		return nil, s.err
	}
	return s.Store.Observe(ctx, id, conf)
}

func (s failingStore) Finish(ctx context.Context, id string, f store.Finish) ([]string, error) {
	if s.op == "finish" {
		return nil, s.err
	}
	return s.Store.Finish(ctx, id, f)
}

func (s failingStore) Ping(ctx context.Context) error {
	if s.op == "ping" {
		return s.err
	}
	return s.Store.Ping(ctx)
}

// timed wraps a RunFunc so its output reports a process wall time of d.
func timed(d time.Duration, f func(context.Context, []string, []string) (loomref.Output, error)) func(context.Context, []string, []string) (loomref.Output, error) {
	return func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		out, err := f(ctx, argv, env)
		out.Duration = d
		return out, err
	}
}

// TestAuditAndMetricsPerCode: every tool call, whatever its outcome, leaves
// exactly one audit record, counts once in tool_calls_total under its code
// and once in the duration histogram; a loom process that ran is timed.
func TestAuditAndMetricsPerCode(t *testing.T) {
	t.Parallel()
	const loomTime = 1500 * time.Millisecond
	tests := []struct {
		name     string
		opts     gatewayOptions
		run      string // the run's create body
		tool     loom.Tool
		body     string
		code     string // "" for ok
		hostCode string
		exitCode *int
		loomRan  bool
		storeOp  string // a store failure counted under this op
		reason   string // the failure's reason, "" for none
	}{
		{name: "ok", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Sample)}, run: `{"runId":"r","maxConfidentiality":["` + work + `"]}`, tool: loom.Search, body: `{"query":"a"}`, exitCode: ptr(0), loomRan: true},
		{name: "busy", opts: gatewayOptions{RunFunc: loomtest.Fail(loom.ErrBusy)}, tool: loom.Search, body: `{"query":"a"}`, code: "busy"},
		{name: "cancelled", opts: gatewayOptions{RunFunc: loomtest.Fail(loom.ErrCancelled)}, tool: loom.Search, body: `{"query":"a"}`, code: "cancelled", reason: "cancelled"},
		{name: "timeout", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Fail(loom.ErrTimeout))}, tool: loom.PageRead, body: `{"target":"x"}`, code: "command_failed", loomRan: true, reason: "timeout"},
		{name: "exit 2", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Reply("", 2))}, tool: loom.Search, body: `{"query":"a"}`, code: "command_failed", exitCode: ptr(2), loomRan: true, reason: "not_json"},
		{name: "host refused", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Reply(`{"ok":false,"code":"rate_limited","message":"slow down"}`, 0))}, tool: loom.Search, body: `{"query":"a"}`, code: "host_refused", hostCode: "rate_limited", exitCode: ptr(0), loomRan: true},
		{name: "not found", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Sample)}, tool: loom.People, body: `{"query":"nobody@example.com"}`, code: "not_found", exitCode: ptr(1), loomRan: true},
		{name: "contested", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Sample)}, tool: loom.People, body: `{"query":"team@example.com"}`, code: "contested", exitCode: ptr(3), loomRan: true},
		{name: "schema version", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Reply(`{"schemaVersion":2,"hits":[]}`, 0))}, tool: loom.Search, body: `{"query":"a"}`, code: "schema_version_mismatch", exitCode: ptr(0), loomRan: true, reason: "schema_version"},
		{name: "malformed payload", opts: gatewayOptions{RunFunc: timed(loomTime, loomtest.Reply(`{"hits":{}}`, 0))}, tool: loom.Search, body: `{"query":"a"}`, code: "malformed_payload", exitCode: ptr(0), loomRan: true, reason: "shape"},
		{name: "unclassified", opts: gatewayOptions{RunFunc: loomtest.Fail(errors.New("handlers test: unclassified"))}, tool: loom.Search, body: `{"query":"a"}`, code: "internal_error"},
		{name: "not configured", run: `{"runId":"r","tools":["loom_profile"]}`, tool: loom.Search, body: `{"query":"a"}`, code: "not_configured"},
		{name: "invalid input", tool: loom.Search, body: `{"query":"-x"}`, code: "invalid_input"},
		{name: "ceiling unavailable", opts: gatewayOptions{ReadCeilingFile: "/nonexistent/ceiling.json"}, tool: loom.Search, body: `{"query":"a"}`, code: "ceiling_unavailable"},
		{name: "handle limit", opts: gatewayOptions{MaxHandlesPerRun: 1}, tool: loom.Search, body: `{"query":"a"}`, code: "handle_limit_reached", exitCode: ptr(0), loomRan: true},
		{name: "store unavailable", opts: gatewayOptions{WrapStore: func(m *memstore.Store) gateway.Store {
			return failingStore{Store: m, op: "finish", err: fmt.Errorf("redis: %w", store.ErrStoreUnavailable)}
		}}, tool: loom.Search, body: `{"query":"a"}`, code: "store_unavailable", exitCode: ptr(0), loomRan: true, storeOp: "finish"},
		{name: "describe_handle", tool: "describe_handle", body: `{"token":"cfh:v:22222"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			opts := tt.opts
			opts.Registry = reg
			g := newTestGateway(t, opts)
			body := tt.run
			if body == "" {
				body = `{"runId":"r"}`
			}
			_, tok := g.createRun(t, body)
			rec := g.call("r", tok, string(tt.tool), tt.body)
			if tt.code == "" {
				wantStatus(t, rec, http.StatusOK)
			} else {
				wantProblem(t, rec, problem.Lookup(problem.Code(tt.code)).Status, tt.code)
			}

			audits := logRecords(t, g, "audit")
			if len(audits) != 1 {
				t.Fatalf("%d audit records, want 1: %s", len(audits), g.logs)
			}
			a := audits[0]
			want := map[string]any{
				"runId": "r", "tool": string(tt.tool), "outputId": "r:" + string(tt.tool) + ":1",
				"requestId": rec.Header().Get("X-Request-Id"), "status": "ok",
			}
			wantKeys := slices.Clone(auditKeys)
			if tt.code != "" {
				want["status"], want["code"] = "error", tt.code
				wantKeys = append(wantKeys, "code")
			}
			if tt.hostCode != "" {
				want["hostCode"] = tt.hostCode
				wantKeys = append(wantKeys, "hostCode")
			}
			if tt.exitCode != nil {
				want["exitCode"] = float64(*tt.exitCode)
				wantKeys = append(wantKeys, "exitCode")
			}
			if tt.loomRan {
				want["loomMs"] = float64(loomTime.Milliseconds())
				if tt.opts.RunFunc == nil { // the plain sample takes no time
					want["loomMs"] = float64(0)
				}
				wantKeys = append(wantKeys, "loomMs")
			}
			if tt.reason != "" {
				wantKeys = append(wantKeys, "failure")
				if f, _ := a["failure"].(map[string]any); f["reason"] != tt.reason {
					t.Errorf("audit failure %v, want reason %s", a["failure"], tt.reason)
				}
			}
			slices.Sort(wantKeys)
			if diff := cmp.Diff(wantKeys, keys(a)); diff != "" {
				t.Errorf("audit record keys (-want +got):\n%s\nrecord: %v", diff, a)
			}
			for k, v := range want {
				if a[k] != v {
					t.Errorf("audit %s = %v, want %v", k, a[k], v)
				}
			}

			// The audit record agrees with the host's call log.
			calls := g.calls(t, "r")
			if len(calls) != 1 {
				t.Fatalf("call log has %d records, want 1", len(calls))
			}
			c := calls[0]
			if a["admitted"] != float64(c.Admitted) || a["withheld"] != float64(c.Withheld) || a["omitted"] != float64(c.Omitted) || a["truncated"] != c.Truncated {
				t.Errorf("audit counts %v/%v/%v/%v, call log %d/%d/%d/%v", a["admitted"], a["withheld"], a["omitted"], a["truncated"], c.Admitted, c.Withheld, c.Omitted, c.Truncated)
			}

			if tt.reason == "" && c.Failure != nil || tt.reason != "" && (c.Failure == nil || string(c.Failure.Reason) != tt.reason) {
				t.Errorf("call log failure %+v, want reason %q", c.Failure, tt.reason)
			}
			wantFailures := 0.0
			if tt.reason != "" {
				wantFailures = 1
				if got := testkit.MetricValue(t, reg, "loom_gateway_call_failures_total", "tool", string(tt.tool), "reason", tt.reason); got != 1 {
					t.Errorf("call_failures_total{tool=%s,reason=%s} = %v, want 1", tt.tool, tt.reason, got)
				}
			}
			if got := testkit.MetricSum(t, reg, "loom_gateway_call_failures_total"); got != wantFailures {
				t.Errorf("call_failures_total over all labels = %v, want %v", got, wantFailures)
			}

			outcome := tt.code
			if outcome == "" {
				outcome = "ok"
			}
			if got := testkit.MetricValue(t, reg, "loom_gateway_tool_calls_total", "tool", string(tt.tool), "code", outcome); got != 1 {
				t.Errorf("tool_calls_total{tool=%s,code=%s} = %v, want 1", tt.tool, outcome, got)
			}
			if got := testkit.MetricSum(t, reg, "loom_gateway_tool_calls_total"); got != 1 {
				t.Errorf("tool_calls_total over all labels = %v, want 1", got)
			}
			if got := testkit.HistogramCount(t, reg, "loom_gateway_tool_call_duration_seconds", "tool", string(tt.tool)); got != 1 {
				t.Errorf("tool_call_duration_seconds count = %d, want 1", got)
			}
			wantProc := uint64(0)
			if tt.loomRan {
				wantProc = 1
			}
			if got := testkit.HistogramCount(t, reg, "loom_gateway_loom_process_duration_seconds", "tool", string(tt.tool)); got != wantProc {
				t.Errorf("loom_process_duration_seconds count = %d, want %d", got, wantProc)
			}
			wantStoreErrs := 0.0
			if tt.storeOp != "" {
				wantStoreErrs = 1
				if got := testkit.MetricValue(t, reg, "loom_gateway_store_errors_total", "op", tt.storeOp, "code", "store_unavailable"); got != 1 {
					t.Errorf("store_errors_total{op=%s} = %v, want 1", tt.storeOp, got)
				}
			}
			if got := testkit.MetricSum(t, reg, "loom_gateway_store_errors_total"); got != wantStoreErrs {
				t.Errorf("store_errors_total over all labels = %v, want %v", got, wantStoreErrs)
			}
			status := "200"
			if tt.code != "" {
				status = itoa(problem.Lookup(problem.Code(tt.code)).Status)
			}
			if got := testkit.MetricValue(t, reg, "loom_gateway_http_requests_total", "listener", "agent", "route", "/v1/runs/{runId}/"+string(tt.tool), "status", status); got != 1 {
				t.Errorf("http_requests_total{agent,%s,%s} = %v, want 1", tt.tool, status, got)
			}

			if tt.name == "ok" {
				// The sample's search under a work-only ceiling: rows of
				// both reasons, and a handle per admitted row.
				adm := testkit.MetricValue(t, reg, "loom_gateway_rows_admitted_total", "tool", "loom_search")
				if adm == 0 || adm != float64(c.Admitted) {
					t.Errorf("rows_admitted_total = %v, want %d (non-zero)", adm, c.Admitted)
				}
				if got := testkit.MetricValue(t, reg, "loom_gateway_handles_minted_total"); got != adm {
					t.Errorf("handles_minted_total = %v, want %v", got, adm)
				}
				wh := testkit.MetricValue(t, reg, "loom_gateway_rows_withheld_total", "tool", "loom_search", "reason", ifc.ReasonCeilingExceeded) +
					testkit.MetricValue(t, reg, "loom_gateway_rows_withheld_total", "tool", "loom_search", "reason", ifc.ReasonLabelReadFailed)
				if wh == 0 || wh != float64(c.Withheld) {
					t.Errorf("rows_withheld_total = %v, want %d (non-zero)", wh, c.Withheld)
				}
				if got := testkit.MetricValue(t, reg, "loom_gateway_rows_omitted_total", "tool", "loom_search"); got != float64(c.Omitted) {
					t.Errorf("rows_omitted_total = %v, want %d", got, c.Omitted)
				}
			} else if got := testkit.MetricSum(t, reg, "loom_gateway_handles_minted_total"); got != 0 && tt.storeOp == "" {
				// (A store failure after minting leaves the handles minted.)
				t.Errorf("handles_minted_total = %v after a failed call, want 0", got)
			}
		})
	}
}

func TestAuditArgShape(t *testing.T) {
	t.Parallel()
	const marker = "ARG-VALUE-MARKER-71c2"
	body := `{"query":"` + marker + `","limit":5,"sources":"mail"}`
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("arg shape ", on), func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{AuditArgShape: on})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			wantStatus(t, g.call("r", tok, "loom_search", body), http.StatusOK)
			audits := logRecords(t, g, "audit")
			if len(audits) != 1 {
				t.Fatalf("%d audit records, want 1", len(audits))
			}
			args, present := audits[0]["args"]
			if present != on {
				t.Fatalf("audit args present = %v, want %v: %v", present, on, audits[0])
			}
			if on {
				if diff := cmp.Diff([]any{"limit", "query", "sources"}, args); diff != "" {
					t.Errorf("audit args (-want +got):\n%s", diff)
				}
			}
			if strings.Contains(g.logs.String(), marker) {
				t.Errorf("the log holds an argument value: %s", g.logs)
			}
		})
	}
}

// Markers planted where the gateway must not let them out into its logs
// or metrics.
const (
	markAdmitted = "ADMITTED-ROW-MARK-2d4e"
	markWithheld = "WITHHELD-ROW-MARK-8a1f"
	markLabel    = "https://loom.example/facet/LABEL-MARK-6c3b"
	markStderr   = "STDERR-MARK-0e9d"
	markArg      = "ARG-MARK-4b7a"
	markHost     = "HOST-TEXT-MARK-5f2c"
	markQuery    = "QUERY-MARK-9e1d"
	markHeader   = "HEADER-MARK-3a8b"
)

// TestNoMarkersInLogsOrMetrics: row content (admitted and withheld), label
// atoms, loom's error and refusal text, argument values, query strings,
// headers and tokens never reach the log or /metrics.
func TestNoMarkersInLogsOrMetrics(t *testing.T) {
	t.Parallel()
	payload := `{"schemaVersion":1,"query":"q","hits":[` +
		`{"id":"a1","title":"` + markAdmitted + `","ifc":{"confidentiality":["` + work + `"]}},` +
		`{"id":"w1","body":"` + markWithheld + `","ifc":{"confidentiality":["` + health + `"]}},` +
		`{"id":"w2","body":"` + markWithheld + `","ifc":{"confidentiality":["` + markLabel + `"]}},` +
		`{"id":"w3","body":"` + markWithheld + `","ifc":"` + markLabel + `"}` +
		`]}`
	step := 0
	runner := func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		step++
		switch step {
		case 1:
			return loomref.Output{Stdout: []byte(payload), Duration: time.Millisecond}, nil
		case 2:
			return loomref.Output{ExitCode: -1, Duration: time.Second}, fmt.Errorf("loom: %s: %w", markStderr, loom.ErrTimeout)
		case 3:
			return loomref.Output{ExitCode: -1}, &loom.StartError{Err: errors.New("fork/exec /opt/" + markStderr + ": permission denied")}
		case 4:
			return loomref.Output{Stdout: []byte("Traceback " + markStderr), ExitCode: 2}, nil
		case 5:
			return loomref.Output{Stdout: []byte(`{"ok":false,"code":"denied","message":"` + markHost + `"}`)}, nil
		case 6:
			return loomref.Output{ExitCode: -1}, fmt.Errorf("%s: %w", markStderr, loom.ErrBusy)
		}
		return loomref.Output{Stdout: []byte(`{"hits":[]}`)}, nil
	}
	reg := prometheus.NewRegistry()
	g := newTestGateway(t, gatewayOptions{RunFunc: runner, Registry: reg, AuditArgShape: true, HostToken: "host-token-MARK-77"})
	_, tok := g.createRun(t, `{"runId":"r","maxConfidentiality":["`+work+`"]}`)

	first := g.call("r", tok, "loom_search?x="+markQuery, `{"query":"`+markArg+`","sources":"`+markArg+`"}`)
	wantStatus(t, first, http.StatusOK)
	var res toolResult
	decode(t, first, &res)
	if res.Admitted != 1 || res.Withheld != 3 || !strings.Contains(first.Body.String(), markAdmitted) {
		t.Fatalf("planted search: admitted %d withheld %d, want 1 and 3 with the admitted marker: %s", res.Admitted, res.Withheld, first.Body)
	}
	for range 5 {
		req := httptest.NewRequest("POST", "/v1/runs/r/loom_search?"+markQuery+"=1", strings.NewReader(`{"query":"`+markArg+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Marker", markHeader)
		req.Header.Set("User-Agent", markHeader)
		rec := httptest.NewRecorder()
		g.agent.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			t.Errorf("a failing call answered 200: %s", rec.Body)
		}
	}
	// An argument the argument builder refuses, a wrong token, and an
	// unknown route with marked segments.
	g.call("r", tok, "loom_search", `{"query":"-`+markArg+`"}`)
	g.call("r", "tok-"+markArg, "loom_search", `{"query":"a"}`)
	g.agentDo("GET", "/v1/runs/r/"+markQuery, tok, "")
	g.hostDo("GET", "/host/v1/runs/"+markQuery, "")
	// A handle described, so describe_handle's audit is covered too.
	g.call("r", tok, "describe_handle", `{"token":"cfh:v:`+"22222"+`"}`)

	metrics := scrape(t, reg)
	logs := g.logs.String()
	if len(logRecords(t, g, "audit")) != 8 || !strings.Contains(metrics, "loom_gateway_tool_calls_total") {
		t.Fatalf("expected 8 audit records and tool call metrics; log:\n%s", logs)
	}
	for _, m := range []string{markAdmitted, markWithheld, markLabel, markStderr, markArg, markHost, markQuery, markHeader, tok, "host-token-MARK-77", work, health, "/opt/", "Traceback"} {
		if strings.Contains(logs, m) {
			t.Errorf("the log holds %q:\n%s", m, logs)
		}
		if strings.Contains(metrics, m) {
			t.Errorf("/metrics holds %q", m)
		}
	}
}

// TestReadyzReflectsReality: /readyz fails while the store does not answer
// or the loom executable is missing or not executable, and the store
// failure is counted.
func TestReadyzReflectsReality(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "loom")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	down := func(m *memstore.Store) gateway.Store {
		return failingStore{Store: m, op: "ping", err: fmt.Errorf("dial: %w", store.ErrStoreUnavailable)}
	}
	for _, tt := range []struct {
		name     string
		wrap     func(*memstore.Store) gateway.Store
		loomPath string
		status   int
		checks   map[string]string
	}{
		{"all well", nil, exe, 200, map[string]string{"store": "ok", "loom": "ok"}},
		{"store unreachable", down, exe, 503, map[string]string{"store": "unreachable", "loom": "ok"}},
		{"loom missing", nil, filepath.Join(dir, "gone"), 503, map[string]string{"store": "ok", "loom": "missing"}},
		{"loom not executable", nil, plain, 503, map[string]string{"store": "ok", "loom": "missing"}},
		{"loom a directory", nil, dir, 503, map[string]string{"store": "ok", "loom": "missing"}},
		{"both", down, filepath.Join(dir, "gone"), 503, map[string]string{"store": "unreachable", "loom": "missing"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			g := newTestGateway(t, gatewayOptions{WrapStore: tt.wrap, Registry: reg})
			g.deps.LoomPath = tt.loomPath
			rec := testkit.Serve(g.host, http.MethodGet, "/readyz", "", "")
			wantStatus(t, rec, tt.status)
			var got struct {
				Status string
				Checks map[string]string
			}
			decode(t, rec, &got)
			if diff := cmp.Diff(tt.checks, got.Checks); diff != "" {
				t.Errorf("readyz checks (-want +got):\n%s", diff)
			}
			if strings.Contains(rec.Body.String(), dir) {
				t.Errorf("readyz names the path: %s", rec.Body)
			}
			wantErrs := 0.0
			if tt.wrap != nil {
				wantErrs = 1
			}
			if got := testkit.MetricValue(t, reg, "loom_gateway_store_errors_total", "op", "ping", "code", "store_unavailable"); got != wantErrs {
				t.Errorf("store_errors_total{op=ping} = %v, want %v", got, wantErrs)
			}
		})
	}
}

// TestRunLifecycleLogged: creating and deleting a run each leave a log
// record naming the run and the request, never the token.
func TestRunLifecycleLogged(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r-logged"}`)
	wantStatus(t, g.hostDo(http.MethodDelete, "/host/v1/runs/r-logged", ""), http.StatusNoContent)
	for _, msg := range []string{"run created", "run deleted"} {
		recs := logRecords(t, g, msg)
		if len(recs) != 1 || recs[0]["runId"] != "r-logged" || recs[0]["requestId"] == "" {
			t.Errorf("%q records: %v, want one naming run r-logged and its request", msg, recs)
		}
	}
	if recs := logRecords(t, g, "run created"); len(recs) == 1 && recs[0]["expiresAt"] == nil {
		t.Errorf("run created record has no expiresAt: %v", recs[0])
	}
	if strings.Contains(g.logs.String(), tok) {
		t.Error("the run token is in the log")
	}
}

// TestConsolePollLogsAtDebug: a successful GET the console's poll marks
// with X-Loom-Console: poll on the host listener logs its request record
// at debug; the same GET unmarked, a marked GET that fails, a marked
// non-GET and a marked GET on the agent listener log at info.
func TestConsolePollLogsAtDebug(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{HostToken: "host-secret"})
	_, tok := g.createRun(t, `{"runId":"r"}`)

	tests := []struct {
		name   string
		h      http.Handler
		method string
		path   string
		token  string
		body   string
		poll   string
		status int
		level  string
	}{
		{"console poll", g.host, "GET", "/host/v1/runs/r/calls", "host-secret", "", "poll", 200, "DEBUG"},
		{"console poll of the runs", g.host, "GET", "/host/v1/runs", "host-secret", "", "poll", 200, "DEBUG"},
		{"normal GET", g.host, "GET", "/host/v1/runs/r/calls", "host-secret", "", "", 200, "INFO"},
		{"other header value", g.host, "GET", "/host/v1/runs/r/calls", "host-secret", "", "yes", 200, "INFO"},
		{"console poll that fails", g.host, "GET", "/host/v1/runs/nope/calls", "host-secret", "", "poll", 404, "INFO"},
		{"console poll without the token", g.host, "GET", "/host/v1/runs", "", "", "poll", 401, "INFO"},
		{"marked POST", g.host, "POST", "/host/v1/runs", "host-secret", `{"runId":"r2"}`, "poll", 201, "INFO"},
		{"marked GET on the agent listener", g.agent, "GET", "/openapi.yaml", "", "", "poll", 200, "INFO"},
		{"marked tool call", g.agent, "POST", "/v1/runs/r/loom_search", tok, `{"query":"atlas"}`, "poll", 200, "INFO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(logRecords(t, g, "request"))
			var rd *strings.Reader
			if tt.body != "" {
				rd = strings.NewReader(tt.body)
			} else {
				rd = strings.NewReader("")
			}
			req := httptest.NewRequest(tt.method, tt.path, rd)
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.poll != "" {
				req.Header.Set(ConsolePollHeader, tt.poll)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			wantStatus(t, rec, tt.status)
			recs := logRecords(t, g, "request")
			if len(recs) != before+1 {
				t.Fatalf("%d request records after one request, want %d", len(recs), before+1)
			}
			if got := recs[len(recs)-1]["level"]; got != tt.level {
				t.Errorf("request record level %v, want %s", got, tt.level)
			}
		})
	}
}

// macOf is this process's MAC of a forwarded request id.
func macOf(id string) string {
	h := http.Header{}
	reqid.Forward(h, id)
	_, mac, _ := strings.Cut(h.Get(reqid.ForwardedHeader), ".")
	return mac
}

// TestForwardedRequestID: the agent listener takes the request id of a
// request the console's proxy forwards (ForwardRequestID), and only
// with this process's MAC: a client cannot choose its request id.
func TestForwardedRequestID(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{HostToken: "host-secret"})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	const outer = "0123456789abcdef01234567"
	send := func(set func(http.Header)) string {
		req := httptest.NewRequest("POST", "/v1/runs/r/loom_search", strings.NewReader(`{"query":"atlas"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		set(req.Header)
		rec := httptest.NewRecorder()
		g.agent.ServeHTTP(rec, req)
		wantStatus(t, rec, 200)
		return rec.Header().Get("X-Request-Id")
	}
	if got := send(func(h http.Header) { reqid.Forward(h, outer) }); got != outer {
		t.Errorf("forwarded request id %q, want %q", got, outer)
	}
	audits := logRecords(t, g, "audit")
	if len(audits) == 0 || audits[len(audits)-1]["requestId"] != outer {
		t.Errorf("the audit record does not carry the forwarded id")
	}
	for name, set := range map[string]func(http.Header){
		"no MAC":       func(h http.Header) { h.Set(reqid.ForwardedHeader, outer) },
		"wrong MAC":    func(h http.Header) { h.Set(reqid.ForwardedHeader, outer+"."+strings.Repeat("0", 64)) },
		"X-Request-Id": func(h http.Header) { h.Set("X-Request-Id", outer) },
		"MAC of other": func(h http.Header) { h.Set(reqid.ForwardedHeader, outer+"."+macOf("ab")) },
	} {
		if got := send(set); got == outer || got == "" || got == "XYZ" {
			t.Errorf("%s: request id %q, want a fresh one", name, got)
		}
	}
}
