package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// The trace tests run the gateway with tracing on, exporting over OTLP to
// the OpenTelemetry Collector scripts/otelcol.sh started (tools/otelcol:
// the OTLP receiver and the file exporter), and read the spans back from
// the file the collector writes. Each call carries a traceparent of its
// own, so a test finds its spans by trace id among the suite's.

// otelEnv is the environment of a gateway exporting to the suite's
// collector; the test is skipped when no collector runs.
func otelEnv(t *testing.T) []string {
	t.Helper()
	ep := os.Getenv("LOOM_GATEWAY_TEST_OTLP_ENDPOINT")
	if ep == "" || os.Getenv("LOOM_GATEWAY_TEST_OTEL_FILE") == "" {
		t.Skip("no collector: run eval \"$(scripts/otelcol.sh start)\" (scripts/test.sh does)")
	}
	return []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + ep,
		"OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=e2e",
	}
}

// span is one span as the collector wrote it (OTLP JSON), with its
// attributes flattened to text.
type span struct {
	TraceID, SpanID, Parent, Name string
	Kind                          int
	Attrs                         map[string]string
	Status                        struct {
		Code    int
		Message string
	}
	Service string
}

// otlpValue is an OTLP AnyValue.
type otlpValue struct {
	StringValue *string      `json:"stringValue"`
	IntValue    *json.Number `json:"intValue"`
	DoubleValue *float64     `json:"doubleValue"`
	BoolValue   *bool        `json:"boolValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
}

func (v otlpValue) text() string {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		return v.IntValue.String()
	case v.DoubleValue != nil:
		return fmt.Sprint(*v.DoubleValue)
	case v.BoolValue != nil:
		return fmt.Sprint(*v.BoolValue)
	case v.ArrayValue != nil:
		var parts []string
		for _, x := range v.ArrayValue.Values {
			parts = append(parts, x.text())
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return ""
}

type otlpAttr struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

func attrMap(list []otlpAttr) map[string]string {
	m := make(map[string]string, len(list))
	for _, a := range list {
		m[a.Key] = a.Value.text()
	}
	return m
}

// collectorSpans reads every span the collector has written so far.
func collectorSpans(t testing.TB) []span {
	t.Helper()
	data, err := os.ReadFile(os.Getenv("LOOM_GATEWAY_TEST_OTEL_FILE"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []span
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var doc struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []otlpAttr `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID      string     `json:"traceId"`
						SpanID       string     `json:"spanId"`
						ParentSpanID string     `json:"parentSpanId"`
						Name         string     `json:"name"`
						Kind         int        `json:"kind"`
						Attributes   []otlpAttr `json:"attributes"`
						Status       struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			continue // a line the collector is still writing
		}
		for _, rs := range doc.ResourceSpans {
			service := attrMap(rs.Resource.Attributes)["service.name"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := span{TraceID: s.TraceID, SpanID: s.SpanID, Parent: s.ParentSpanID, Name: s.Name, Kind: s.Kind, Attrs: attrMap(s.Attributes), Service: service}
					sp.Status.Code, sp.Status.Message = s.Status.Code, s.Status.Message
					out = append(out, sp)
				}
			}
		}
	}
	return out
}

// traceSpans waits until the collector holds, for traceID, spans with
// each of the names want, and returns all of the trace's spans.
func traceSpans(t testing.TB, traceID string, want ...string) []span {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got []span
		for _, s := range collectorSpans(t) {
			if s.TraceID == traceID {
				got = append(got, s)
			}
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(name string) bool {
			return slices.ContainsFunc(got, func(s span) bool { return s.Name == name })
		})
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: no span %q after 15s; it has:\n%s", traceID, missing, dumpSpans(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func dumpSpans(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s %s parent=%s kind=%d %v status=%d\n", s.SpanID, s.Name, s.Parent, s.Kind, s.Attrs, s.Status.Code)
	}
	return b.String()
}

// named returns the one span of spans named name.
func named(t testing.TB, spans []span, name string) span {
	t.Helper()
	var found []span
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1:\n%s", len(found), name, dumpSpans(spans))
	}
	return found[0]
}

// wantAttrs checks attrs holds want (a value "*" only needs the key).
func wantAttrs(t testing.TB, s span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := s.Attrs[k]
		if !ok || v != "*" && got != v {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.Name, k, got, ok, v)
		}
	}
}

func wantParent(t testing.TB, child, parent span) {
	t.Helper()
	if child.Parent != parent.SpanID {
		t.Errorf("span %q's parent is %s, want %q (%s)", child.Name, child.Parent, parent.Name, parent.SpanID)
	}
}

// traceparent is a new sampled W3C traceparent and its trace and span ids.
func traceparent() (header, traceID, spanID string) {
	traceID, spanID = testkit.RandomHex(16), testkit.RandomHex(8)
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

// post sends body to path on the agent listener with the run's token and
// extra headers, and returns the status and body.
func (r *run) post(t testing.TB, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, r.g.AgentURL+"/v1/runs/"+r.ID+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.Token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := mcpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestTraceREST: a REST tool call given a traceparent is one trace under
// it: the server span (HTTP conventions), the core's call with its outcome,
// the loom process, whose environment carried the loom span's
// traceparent, and the measurement; the call log entry carries the trace
// id. No span carries a row, an argument value, a path or stderr.
func TestTraceREST(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Env: otelEnv(t)})
	g.setBehaviour(t, "search", behaviour{
		Stdout:       fill(`{"hits":[{"id":"w1","ifc":{"confidentiality":["{W}"]}},{"id":"h1","text":"{X}","ifc":{"confidentiality":["{H}"]}}]}`),
		StderrBytes:  1024,
		StderrMarker: markerStderr,
	})
	r := g.workRun(t)
	tp, traceID, parentID := traceparent()
	status, body := r.post(t, "/loom_search", `{"query":"`+markerInput+`","limit":5}`, map[string]string{"traceparent": tp})
	if status != http.StatusOK {
		t.Fatalf("status %d %s", status, body)
	}
	spans := traceSpans(t, traceID, "POST /v1/runs/{runId}/loom_search", "call loom_search", "loom search", "measure search")
	server := named(t, spans, "POST /v1/runs/{runId}/loom_search")
	if server.Parent != parentID || server.Kind != 2 {
		t.Errorf("server span: parent %s kind %d, want %s, 2 (server)", server.Parent, server.Kind, parentID)
	}
	if server.Service != "loom-gateway" {
		t.Errorf("service.name %q, want loom-gateway", server.Service)
	}
	wantAttrs(t, server, map[string]string{"http.request.method": "POST", "http.route": "/v1/runs/{runId}/loom_search", "http.response.status_code": "200", "url.scheme": "http"})
	call := named(t, spans, "call loom_search")
	wantParent(t, call, server)
	wantAttrs(t, call, map[string]string{"gen_ai.tool.name": "loom_search", "loom_gateway.call.status": "ok", "loom_gateway.call.admitted": "1", "loom_gateway.call.withheld": "1", "loom_gateway.call.omitted": "0", "loom_gateway.call.truncated": "false", "loom_gateway.call.output_id": "*"})
	proc := named(t, spans, "loom search")
	wantParent(t, proc, call)
	wantAttrs(t, proc, map[string]string{"loom.command": "search", "loom.exit_code": "0", "loom.stdout.bytes": "*", "loom.wall_time_ms": "*"})
	if proc.Kind != 3 {
		t.Errorf("loom span kind %d, want 3 (client)", proc.Kind)
	}
	wantParent(t, named(t, spans, "measure search"), call)

	// loom got the loom span's traceparent, and nothing else new.
	calls := g.loomCalls(t)
	if len(calls) != 1 {
		t.Fatalf("%d loom calls, want 1", len(calls))
	}
	want := append(g.wantEnv(), "TRACEPARENT=00-"+traceID+"-"+proc.SpanID+"-01")
	env := slices.Sorted(slices.Values(calls[0].Env))
	slices.Sort(want)
	if !slices.Equal(env, want) {
		t.Errorf("loom env %q, want %q", env, want)
	}

	// The call log entry carries the trace id.
	log := r.calls(t)
	if len(log) != 1 || log[0].TraceId == nil || *log[0].TraceId != traceID {
		t.Errorf("call log traceId %v, want %s", log, traceID)
	}

	// A traceparent whose sampled flag is 00 still names the trace and the
	// parent; the gateway's sampler (always on here) keeps the trace.
	unsampled, traceID, parentID := "", testkit.RandomHex(16), testkit.RandomHex(8)
	unsampled = "00-" + traceID + "-" + parentID + "-00"
	if status, body := r.post(t, "/loom_search", `{"query":"q"}`, map[string]string{"traceparent": unsampled}); status != http.StatusOK {
		t.Fatalf("status %d %s", status, body)
	}
	spans = traceSpans(t, traceID, "POST /v1/runs/{runId}/loom_search", "call loom_search", "loom search", "measure search")
	if server := named(t, spans, "POST /v1/runs/{runId}/loom_search"); server.Parent != parentID {
		t.Errorf("server span of an unsampled traceparent: parent %s, want %s", server.Parent, parentID)
	}
}

// TestTraceMCP: an MCP tools/call whose params._meta carries a traceparent
// is a server span of the MCP conventions under it, the core's call
// beneath; a refused call sets error.type to its problem code.
func TestTraceMCP(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Env: otelEnv(t)})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[{"id":"w1","ifc":{"confidentiality":["{W}"]}}]}`)})
	g.setBehaviour(t, "case-fails", behaviour{StderrBytes: 4096, StderrMarker: markerStderr, Stdout: `{"ok":false,"code":"facet_denied","message":"` + markerStderr + `"}`})
	r := g.workRun(t)
	mcpHeader := map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18"}

	tp, traceID, parentID := traceparent()
	msg := `{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `"},"name":"loom_search","arguments":{"query":"` + markerInput + `"}}}`
	if status, body := r.post(t, "/mcp", msg, mcpHeader); status != http.StatusOK || bytes.Contains(body, []byte(`"isError":true`)) {
		t.Fatalf("tools/call: %d %s", status, body)
	}
	spans := traceSpans(t, traceID, "tools/call loom_search", "call loom_search", "loom search")
	server := named(t, spans, "tools/call loom_search")
	if server.Parent != parentID || server.Kind != 2 {
		t.Errorf("MCP span: parent %s kind %d, want %s, 2 (server)", server.Parent, server.Kind, parentID)
	}
	wantAttrs(t, server, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "loom_search", "gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "req-7", "mcp.protocol.version": "2025-06-18"})
	if _, ok := server.Attrs["error.type"]; ok {
		t.Errorf("a call that succeeded has error.type %q", server.Attrs["error.type"])
	}
	wantParent(t, named(t, spans, "call loom_search"), server)

	// Refused: loom answered host_refused.
	tp, traceID, _ = traceparent()
	msg = `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `"},"name":"loom_search","arguments":{"query":"case=fails"}}}`
	if status, body := r.post(t, "/mcp", msg, mcpHeader); status != http.StatusOK || !bytes.Contains(body, []byte(`"isError":true`)) {
		t.Fatalf("refused tools/call: %d %s", status, body)
	}
	spans = traceSpans(t, traceID, "tools/call loom_search", "call loom_search")
	server = named(t, spans, "tools/call loom_search")
	wantAttrs(t, server, map[string]string{"error.type": "host_refused", "jsonrpc.request.id": "8"})
	if server.Status.Code != 2 || server.Status.Message != "host_refused" {
		t.Errorf("MCP span status %+v, want error host_refused", server.Status)
	}
	wantAttrs(t, named(t, spans, "call loom_search"), map[string]string{"error.type": "host_refused", "loom_gateway.call.code": "host_refused", "loom_gateway.call.host_code": "facet_denied", "loom_gateway.call.status": "error"})

	// A JSON-RPC error: a tool the run does not have.
	tp, traceID, _ = traceparent()
	msg = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `"},"name":"no_such_tool","arguments":{}}}`
	if status, body := r.post(t, "/mcp", msg, mcpHeader); status != http.StatusOK || !bytes.Contains(body, []byte(`"error":{"code":`)) {
		t.Fatalf("tools/call of no tool: %d %s", status, body)
	}
	server = named(t, traceSpans(t, traceID, "tools/call _OTHER"), "tools/call _OTHER")
	if code := server.Attrs["error.type"]; code == "" || code[0] != '-' {
		t.Errorf("JSON-RPC error: error.type %q, want its (negative) code", code)
	}
}

// TestTraceRefused: a REST call the contract refuses is a server span with
// error.type the problem code, and no loom span; the argument's value is in
// no span.
func TestTraceRefused(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Env: otelEnv(t)})
	r := g.workRun(t)
	tp, traceID, _ := traceparent()
	status, body := r.post(t, "/loom_search", `{"query":"-`+markerInput+`"}`, map[string]string{"traceparent": tp})
	if status != http.StatusBadRequest {
		t.Fatalf("status %d %s, want 400", status, body)
	}
	spans := traceSpans(t, traceID, "POST /v1/runs/{runId}/loom_search", "call loom_search")
	server := named(t, spans, "POST /v1/runs/{runId}/loom_search")
	wantAttrs(t, server, map[string]string{"error.type": "invalid_input", "http.response.status_code": "400"})
	wantAttrs(t, named(t, spans, "call loom_search"), map[string]string{"error.type": "invalid_input", "loom_gateway.call.status": "error"})
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "loom ") {
			t.Errorf("a refused call has a loom span %q", s.Name)
		}
	}
	if calls := g.loomCalls(t); len(calls) != 0 {
		t.Errorf("%d loom calls, want none", len(calls))
	}
}

// TestTraceRedis: on the Redis store, each store command of a call is a
// client span (db.system.name redis, the operation) in the call's trace,
// naming no key.
func TestTraceRedis(t *testing.T) {
	t.Parallel()
	env := otelEnv(t)
	url := os.Getenv("LOOM_GATEWAY_TEST_REDIS")
	if url == "" {
		t.Skip("no Redis: run eval \"$(scripts/redis.sh start)\" (scripts/test.sh does)")
	}
	g := startGateway(t, gwOptions{Env: env, Flags: []string{"--store", url}})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[{"id":"w1","ifc":{"confidentiality":["{W}"]}}]}`)})
	r := g.workRun(t)
	tp, traceID, _ := traceparent()
	if status, body := r.post(t, "/loom_search", `{"query":"q"}`, map[string]string{"traceparent": tp}); status != http.StatusOK {
		t.Fatalf("status %d %s", status, body)
	}
	spans := traceSpans(t, traceID, "POST /v1/runs/{runId}/loom_search", "call loom_search")
	var store []span
	for _, s := range spans {
		if s.Attrs["db.system.name"] == "redis" {
			store = append(store, s)
		}
	}
	if len(store) == 0 {
		t.Fatalf("no Redis span in the call's trace:\n%s", dumpSpans(spans))
	}
	for _, s := range store {
		if s.Kind != 3 || s.Attrs["db.operation.name"] == "" || s.Attrs["db.operation.name"] != s.Name {
			t.Errorf("store span %q kind %d attrs %v: want a client span named by db.operation.name", s.Name, s.Kind, s.Attrs)
		}
		for _, v := range s.Attrs {
			if strings.Contains(v, r.ID) || strings.Contains(v, "loom-gateway:") {
				t.Errorf("store span %q names a key: %v", s.Name, s.Attrs)
			}
		}
	}
}

// spanLeaks names every span the collector received that carries a
// planted marker, in its name, an
// attribute or its status: run after the suite by TestMain.
func spanLeaks() []string {
	path := os.Getenv("LOOM_GATEWAY_TEST_OTEL_FILE")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, mk := range markers {
		if bytes.Contains(data, []byte(mk)) {
			out = append(out, fmt.Sprintf("  a span the collector received carries %s", mk))
		}
	}
	return out
}
