// Package httptrace is the server span of each request on either
// listener: the HTTP conventions for REST, the MCP conventions for the MCP
// face, the request's W3C traceparent (and an MCP message's
// params._meta.traceparent) as its parent.
package httptrace

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-gateway/gateway/internal/telemetry"
)

// propagator reads W3C trace context: traceparent only, since tracestate
// is free text the client chose.
var propagator = propagation.TraceContext{}

// traceparent is a carrier holding one traceparent value, read without
// building a map.
type traceparent string

func (t traceparent) Get(key string) string {
	if key == "traceparent" {
		return string(t)
	}
	return ""
}

func (traceparent) Set(string, string) {}

func (traceparent) Keys() []string { return []string{"traceparent"} }

// withTraceparent returns ctx with the remote parent tp names, or ctx as
// it is when tp is empty or not a valid traceparent.
func withTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagator.Extract(ctx, traceparent(tp))
}

// serverStart holds the start options of a server span with the HTTP
// attributes known before the request is served, built once for each
// standard method (and "OTHER"), scheme and protocol version, so that
// starting a server span builds none.
var serverStart = func() map[string]*[2][3][]trace.SpanStartOption {
	m := map[string]*[2][3][]trace.SpanStartOption{}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace, "OTHER"} {
		var o [2][3][]trace.SpanStartOption
		for s := range o {
			for p := range o[s] {
				o[s][p] = newServerOptions(method, schemes[s], protocols[p])
			}
		}
		m[method] = &o
	}
	return m
}()

var (
	schemes   = [2]string{"http", "https"}
	protocols = [3]string{"1.1", "2", "3"}
)

func newServerOptions(method, scheme, protocol string) []trace.SpanStartOption {
	return []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(method),
		semconv.URLScheme(scheme),
		semconv.NetworkProtocolVersion(protocol),
	)}
}

// serverOptions returns the start options of r's server span, method
// being r's method as the listener names it.
func serverOptions(r *http.Request, method string) []trace.SpanStartOption {
	s, p := 0, 0
	if r.TLS != nil {
		s = 1
	}
	switch r.ProtoMajor {
	case 2:
		p = 1
	case 3:
		p = 2
	}
	if o, ok := serverStart[method]; ok {
		return o[s][p]
	}
	return newServerOptions(method, schemes[s], protocols[p])
}

// HTTPServer returns the server-span middleware of a listener: one span
// per request, a child of the request's traceparent when it carries one,
// named "METHOD route" with the HTTP conventions' attributes (method,
// route, status, protocol version) and error.type set to the problem code
// the request was answered with (SetProblem) or, failing that, the status
// of a 5xx. route and method read the request after it was served (the
// route pattern; "OTHER" for a method outside the standard ones). Off, it
// returns next itself.
func HTTPServer(route, method func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if !telemetry.Enabled() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// traceparent only: tracestate is free text the client chose.
			var tp string
			if v := r.Header["Traceparent"]; len(v) > 0 {
				tp = v[0]
			}
			m := method(r)
			ctx, span := telemetry.StartWith(withTraceparent(r.Context(), tp), m,
				serverOptions(r, m)...)
			defer span.End()
			rec := &statusWriter{ResponseWriter: w}
			r = r.WithContext(telemetry.WithProblemNote(ctx, &rec.problem))
			next.ServeHTTP(rec, r)
			rt := route(r)
			span.SetName(m + " " + rt)
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			attrs := make([]attribute.KeyValue, 2, 3)
			attrs[0], attrs[1] = semconv.HTTPRoute(rt), semconv.HTTPResponseStatusCode(status)
			switch code := rec.problem.Code(); {
			case code != "":
				attrs = append(attrs, telemetry.ErrorType.String(code))
			case status >= 500:
				attrs = append(attrs, telemetry.ErrorType.String(strconv.Itoa(status)))
			}
			span.SetAttributes(attrs...)
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
		})
	}
}

// statusWriter records the status a handler wrote; it keeps the
// writer's Flusher and the http.ResponseController's Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status  int
	problem telemetry.ProblemNote
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mcpMessage is what an MCP span reads of a JSON-RPC request: never the
// arguments, and of _meta only the traceparent (its other members, a
// numeric progressToken say, are any JSON).
type mcpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string `json:"name"`
		ProtocolVersion string `json:"protocolVersion"`
		Meta            struct {
			Traceparent json.RawMessage `json:"traceparent"`
		} `json:"_meta"`
	} `json:"params"`
}

// StartMCP starts the MCP server span of a Streamable HTTP request whose
// body is one JSON-RPC message, by the MCP conventions: named
// "tools/call loom_search" (the method, and the tool a tools/call names),
// with mcp.method.name, jsonrpc.request.id, mcp.protocol.version (the
// Mcp-Protocol-Version header, or what initialize asks for), and for a
// tools/call gen_ai.tool.name and gen_ai.operation.name execute_tool. Its
// parent is the message's params._meta.traceparent (linked to the HTTP
// span) when it has one, else the HTTP request's span. It returns r with
// the span in its context and the body still to read. Off, or for a body
// that is not one JSON-RPC request, it returns r and a span that records
// nothing.
//
// What the client chose is kept only where it cannot carry text: a method
// that is not one of the protocol's is "_OTHER", a tool that known does not
// accept is "_OTHER", an id that is not a number or a short plain string
// and a protocol version that is not a date are left out.
func StartMCP(r *http.Request, known func(tool string) bool) (*http.Request, trace.Span) {
	if !telemetry.Enabled() || r.Body == nil {
		return r, telemetry.NoSpan()
	}
	return startMCP(r, known)
}

// mcpMethods are the methods of the Model Context Protocol (2025-06-18)
// a client sends.
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/read": true,
	"resources/templates/list": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/roots/list_changed": true,
}

// plainID reports whether a JSON-RPC id (a string's text) is short and
// plain: 1 to 64 letters, digits or "_.:-".
func plainID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// protocolDate reports whether v reads as an MCP protocol version
// (YYYY-MM-DD).
func protocolDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range []byte(v) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// MCPResponse returns a writer that notes, on span, a JSON-RPC error the
// answer written through w carries: error.type is its code (-32602, ...)
// and the span's status an Error. Off, or for a span that does not
// record, it returns w.
func MCPResponse(w http.ResponseWriter, span trace.Span) http.ResponseWriter {
	if !span.IsRecording() {
		return w
	}
	return &rpcWriter{ResponseWriter: w, span: span}
}

// rpcWriter reads the head of a JSON-RPC answer for its error code.
type rpcWriter struct {
	http.ResponseWriter
	span trace.Span
	head []byte
	done bool
}

// rpcErrorHead is how the SDK's answer to a failed request begins after
// its id.
var rpcErrorHead = []byte(`"error":{"code":`)

func (w *rpcWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.head = append(w.head, b[:min(len(b), 512-len(w.head))]...)
		if len(w.head) >= 512 || bytes.Contains(w.head, rpcErrorHead) {
			w.note()
		}
	}
	return w.ResponseWriter.Write(b)
}

// note sets error.type from the head read so far, once.
func (w *rpcWriter) note() {
	w.done = true
	_, rest, ok := bytes.Cut(w.head, rpcErrorHead)
	if !ok {
		return
	}
	n := 0
	for n < len(rest) && n < 12 && (rest[n] == '-' || rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	if n > 0 && n < len(rest) {
		telemetry.FailSpan(w.span, string(rest[:n]))
	}
}

func (w *rpcWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *rpcWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func startMCP(r *http.Request, known func(string) bool) (*http.Request, trace.Span) {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m mcpMessage
	if err != nil || json.Unmarshal(body, &m) != nil || m.Method == "" {
		return r, telemetry.NoSpan()
	}
	ctx := r.Context()
	opts := make([]trace.SpanStartOption, 1, 3)
	opts[0] = trace.WithSpanKind(trace.SpanKindServer)
	var tp string // not tracestate: free text
	if json.Unmarshal(m.Params.Meta.Traceparent, &tp) == nil && tp != "" {
		if remote := trace.SpanContextFromContext(withTraceparent(ctx, tp)); remote.IsValid() {
			opts = append(opts, trace.WithLinks(trace.LinkFromContext(ctx)))
			ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
		}
	}
	method := m.Method
	if !mcpMethods[method] {
		method = "_OTHER"
	}
	name := method
	attrs := make([]attribute.KeyValue, 1, 5)
	attrs[0] = telemetry.MCPMethodName.String(method)
	var id string
	if json.Unmarshal(m.ID, &id) != nil {
		var n json.Number
		if json.Unmarshal(m.ID, &n) == nil {
			id = n.String()
		}
	}
	if plainID(id) {
		attrs = append(attrs, telemetry.JSONRPCRequestID.String(id))
	}
	version := r.Header.Get("Mcp-Protocol-Version")
	if version == "" && method == "initialize" {
		version = m.Params.ProtocolVersion
	}
	if protocolDate(version) {
		attrs = append(attrs, telemetry.MCPProtocolVersion.String(version))
	}
	if method == "tools/call" {
		tool := m.Params.Name
		if known == nil || !known(tool) {
			tool = "_OTHER"
		}
		name += " " + tool
		attrs = append(attrs, telemetry.GenAIToolName.String(tool), telemetry.GenAIOperationName.String("execute_tool"))
	}
	ctx, span := telemetry.StartWith(ctx, name, append(opts, trace.WithAttributes(attrs...))...)
	return r.WithContext(ctx), span
}
