package httptrace

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-gateway/gateway/internal/telemetry"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// record installs an SDK provider recording to memory for t.
func record(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(telemetry.Install(tp))
	return exp
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestOffPassesThrough(t *testing.T) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mw := HTTPServer(func(*http.Request) string { return "/r" }, func(r *http.Request) string { return r.Method })(next)
	if _, ok := mw.(http.HandlerFunc); !ok {
		t.Errorf("off, HTTPServer wrapped the handler")
	}
}

// TestHTTPServer: the server span is a child of the incoming traceparent,
// named by method and route, with the problem code as error.type; no
// header value or path reaches it.
func TestHTTPServer(t *testing.T) {
	exp := record(t)
	h := HTTPServer(func(*http.Request) string { return "/v1/runs/{runId}/loom_search" }, func(r *http.Request) string { return r.Method })(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			telemetry.SetProblem(r.Context(), "invalid_input")
			w.WriteHeader(http.StatusBadRequest)
		}))
	req := httptest.NewRequest(http.MethodPost, "/v1/runs/run-SECRET/loom_search", strings.NewReader(`{"query":"SECRET"}`))
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.Header.Set("Authorization", "Bearer SECRET")
	req.Header.Set("tracestate", "k=SECRET")
	h.ServeHTTP(httptest.NewRecorder(), req)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "POST /v1/runs/{runId}/loom_search" || s.SpanKind != trace.SpanKindServer {
		t.Errorf("span %q kind %v", s.Name, s.SpanKind)
	}
	if got := s.Parent.SpanID().String(); got != "00f067aa0ba902b7" || s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("parent %s trace %s, want the traceparent's", got, s.SpanContext.TraceID())
	}
	want := map[string]string{
		"http.request.method": "POST", "http.route": "/v1/runs/{runId}/loom_search", "http.response.status_code": "400",
		"url.scheme": "http", "network.protocol.version": "1.1", "error.type": "invalid_input",
	}
	if diff := cmp.Diff(want, attrs(s)); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	if ts := s.SpanContext.TraceState().String(); ts != "" {
		t.Errorf("trace state %q kept from the client", ts)
	}
}

// TestStartMCP: the MCP span takes params._meta.traceparent as its parent
// and the conventions' attributes, never the arguments; the body is left
// to read.
func TestStartMCP(t *testing.T) {
	exp := record(t)
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"name":"loom_search","arguments":{"query":"SECRET"}}}`
	req := httptest.NewRequest(http.MethodPost, "/v1/runs/r/mcp", strings.NewReader(body))
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req, span := StartMCP(req, func(s string) bool { return s == "loom_search" })
	rest, _ := io.ReadAll(req.Body)
	if string(rest) != body {
		t.Errorf("body after StartMCP = %s", rest)
	}
	if telemetry.TraceID(req.Context()) != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id %q", telemetry.TraceID(req.Context()))
	}
	telemetry.Fail(req.Context(), "busy")
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "tools/call loom_search" || s.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("span %q parent %s", s.Name, s.Parent.SpanID())
	}
	want := map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "3", "mcp.protocol.version": "2025-06-18",
		"gen_ai.tool.name": "loom_search", "gen_ai.operation.name": "execute_tool", "error.type": "busy",
	}
	if diff := cmp.Diff(want, attrs(s)); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	if s.Status.Description != "busy" {
		t.Errorf("status %+v, want busy", s.Status)
	}
}

// TestMCPResponse: a JSON-RPC error answer sets error.type to its code;
// a result does not.
func TestMCPResponse(t *testing.T) {
	exp := record(t)
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`, "-32602"},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`, ""},
	} {
		exp.Reset()
		_, span := telemetry.Start(context.Background(), "rpc")
		w := MCPResponse(httptest.NewRecorder(), span)
		// Written in two pieces, as a writer may.
		_, _ = w.Write([]byte(tc.body[:20]))
		_, _ = w.Write([]byte(tc.body[20:]))
		span.End()
		if got := attrs(exp.GetSpans()[0])["error.type"]; got != tc.want {
			t.Errorf("%s: error.type %q, want %q", tc.body, got, tc.want)
		}
	}
}

// TestStartMCPKeepsNoClientText: a method, tool, id or protocol version
// that could carry text the client chose is not in the span.
func TestStartMCPKeepsNoClientText(t *testing.T) {
	exp := record(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":"SECRET id","method":"tools/call","params":{"name":"SECRET","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SECRET/method","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"SECRET"}}`,
	} {
		exp.Reset()
		req := httptest.NewRequest(http.MethodPost, "/v1/runs/r/mcp", strings.NewReader(body))
		req.Header.Set("Mcp-Protocol-Version", "SECRET")
		_, span := StartMCP(req, func(s string) bool { return s == "loom_search" })
		span.End()
		s := exp.GetSpans()[0]
		if strings.Contains(s.Name, "SECRET") {
			t.Errorf("%s: span named %q", body, s.Name)
		}
		for k, v := range attrs(s) {
			if strings.Contains(v, "SECRET") {
				t.Errorf("%s: %s = %q", body, k, v)
			}
		}
	}
}

// TestHTTPServerAllocations bounds what the server span adds to a request
// beyond the SDK's own span: the request's copy with the span's context,
// the status writer (with the problem note in it), the span's name and
// its end attributes; the traceparent is read without building a map and
// the start options are built once.
func TestHTTPServerAllocations(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	tp := sdktrace.NewTracerProvider() // spans record, nothing exports
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	t.Cleanup(telemetry.Install(tp))
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.SetProblem(r.Context(), "bad_request")
		w.WriteHeader(http.StatusBadRequest)
	})
	mw := HTTPServer(func(*http.Request) string { return "/v1/runs/{runId}/loom_search" }, func(r *http.Request) string { return r.Method })(next)
	req := httptest.NewRequest(http.MethodPost, "/v1/runs/r/loom_search", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	w := httptest.NewRecorder()
	span := testing.AllocsPerRun(200, func() {
		_, s := telemetry.Tracer().Start(context.Background(), "x")
		s.End()
	})
	all := testing.AllocsPerRun(200, func() { mw.ServeHTTP(w, req) })
	// WithContext, the span's context (2), the status writer, the problem
	// note's context, the name, the end attributes and what the SDK keeps
	// of them, the remote parent's context (2).
	if extra := all - span; extra > 11 {
		t.Errorf("a traced request allocates %v beyond its span's %v, want at most 11", extra, span)
	}
}

// TestStartMCPOtherMeta: a _meta holding values that are not strings (a
// numeric progressToken, as MCP clients send) still gets the MCP span,
// under the message's traceparent; a traceparent that is not a string is
// no parent.
func TestStartMCPOtherMeta(t *testing.T) {
	exp := record(t)
	for _, tc := range []struct{ meta, parent string }{
		{`{"progressToken":7,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, "00f067aa0ba902b7"},
		{`{"progressToken":{"a":[1]}}`, ""},
		{`{"traceparent":12}`, ""},
	} {
		exp.Reset()
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":` + tc.meta + `,"name":"loom_search","arguments":{}}}`
		req := httptest.NewRequest(http.MethodPost, "/v1/runs/r/mcp", strings.NewReader(body))
		_, span := StartMCP(req, func(s string) bool { return s == "loom_search" })
		span.End()
		spans := exp.GetSpans()
		if len(spans) != 1 || spans[0].Name != "tools/call loom_search" {
			t.Errorf("_meta %s: spans %v, want tools/call loom_search", tc.meta, spans)
			continue
		}
		parent := ""
		if spans[0].Parent.IsValid() {
			parent = spans[0].Parent.SpanID().String()
		}
		if parent != tc.parent {
			t.Errorf("_meta %s: parent %q, want %q", tc.meta, parent, tc.parent)
		}
	}
}
