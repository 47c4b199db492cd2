// Package telemetry is the gateway's OpenTelemetry tracing as the core
// sees it: the tracer Install turns on, the W3C traceparent handed to
// loom, and the small span helpers the core and the stores use. It links
// no HTTP package: the exporters and their set-up from the OTEL_*
// environment are package otelsetup's, the listeners' server spans
// package httptrace's.
//
// Tracing is off unless the environment asks for it; off, the global
// tracer provider stays OpenTelemetry's no-op one, every helper here
// returns at once and no trace context is read or written. What a span
// carries is chosen attribute by attribute: route patterns, methods,
// status and problem codes, tool and command names, counts, exit codes and
// durations; never a body, a header value, a token, an argument value, row
// content, a label, a host path, argv or loom's stderr.
package telemetry

import (
	"context"
	"encoding/hex"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span the gateway makes.
const ScopeName = "github.com/loom-gateway/gateway"

// enabled is set by Install (otelsetup.Setup calls it with an exporting
// tracer provider);
// the helpers read it to cost nothing when tracing is off.
var enabled atomic.Bool

// Enabled reports whether a tracer provider is installed.
func Enabled() bool { return enabled.Load() }

// Install makes tp the gateway's tracer provider and turns the helpers
// on; uninstall turns them off. otelsetup.Setup uses it; tests install an
// SDK provider recording to memory.
func Install(tp trace.TracerProvider) (uninstall func()) {
	tr := tp.Tracer(ScopeName)
	installed.Store(&tr)
	enabled.Store(true)
	return func() {
		enabled.Store(false)
		installed.Store(nil)
	}
}

// installed is the tracer of the provider Install installed.
var installed atomic.Pointer[trace.Tracer]

// Tracer is the gateway's tracer: the installed provider's, else one
// that records nothing.
func Tracer() trace.Tracer {
	if tr := installed.Load(); tr != nil {
		return *tr
	}
	return noSpan.TracerProvider().Tracer(ScopeName)
}

// noSpan is the span the helpers return when tracing is off.
var noSpan = trace.SpanFromContext(context.Background())

// NoSpan is a span that records nothing.
func NoSpan() trace.Span { return noSpan }

// Start starts an internal span named name under ctx's span. Off, it
// returns ctx and a span that records nothing.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, noSpan
	}
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// StartWith starts a span named name under ctx's span with opts as they
// are: a caller that starts many spans alike passes one slice of options
// built once, so that starting a span builds none. Off, it returns ctx
// and a span that records nothing.
func StartWith(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, noSpan
	}
	return Tracer().Start(ctx, name, opts...)
}

// StartKind is Start with a span kind (client for a store command).
func StartKind(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, noSpan
	}
	return Tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Set adds attrs to ctx's span when it records.
func Set(ctx context.Context, attrs ...attribute.KeyValue) {
	if !Enabled() {
		return
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(attrs...)
	}
}

// Fail marks ctx's span as failed with errorType, a fixed code (a problem
// code, "timeout"): error.type and an Error status whose description is
// the code itself, never an error's text.
func Fail(ctx context.Context, errorType string) {
	if !Enabled() || errorType == "" {
		return
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		FailSpan(s, errorType)
	}
}

// FailSpan is Fail on span.
func FailSpan(span trace.Span, errorType string) {
	span.SetAttributes(semconv.ErrorTypeKey.String(errorType))
	span.SetStatus(codes.Error, errorType)
}

// TraceID is the trace id of ctx's span, "" when tracing is off or ctx
// has none.
func TraceID(ctx context.Context) string {
	if !Enabled() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	var b [32]byte
	id := sc.TraceID()
	hex.Encode(b[:], id[:])
	return string(b[:])
}

// Traceparent is the W3C traceparent of ctx's span, "" when tracing is
// off or ctx has no span.
func Traceparent(ctx context.Context) string {
	if !Enabled() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	// 00-<trace id>-<span id>-<flags>, built in one buffer.
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// Attribute keys of the MCP and generative-AI conventions and of the
// gateway's own call outcome.
var (
	MCPMethodName      = semconv.McpMethodNameKey
	MCPProtocolVersion = semconv.McpProtocolVersionKey
	JSONRPCRequestID   = semconv.JSONRPCRequestIDKey
	GenAIToolName      = semconv.GenAIToolNameKey
	GenAIOperationName = semconv.GenAIOperationNameKey
	ErrorType          = semconv.ErrorTypeKey

	CallStatus    = attribute.Key("loom_gateway.call.status")
	CallCode      = attribute.Key("loom_gateway.call.code")
	CallHostCode  = attribute.Key("loom_gateway.call.host_code")
	CallOutputID  = attribute.Key("loom_gateway.call.output_id")
	CallAdmitted  = attribute.Key("loom_gateway.call.admitted")
	CallWithheld  = attribute.Key("loom_gateway.call.withheld")
	CallOmitted   = attribute.Key("loom_gateway.call.omitted")
	CallTruncated = attribute.Key("loom_gateway.call.truncated")
	CallArgs      = attribute.Key("loom_gateway.call.arguments")

	LoomCommand   = attribute.Key("loom.command")
	LoomExitCode  = attribute.Key("loom.exit_code")
	LoomBytesRead = attribute.Key("loom.stdout.bytes")
	LoomWallMs    = attribute.Key("loom.wall_time_ms")
	MeasureRows   = attribute.Key("loom_gateway.measure.rows")
	MeasureMore   = attribute.Key("loom_gateway.measure.more")
)

// problemKey is the context key of a served request's *ProblemNote.
type problemKey struct{}

// ProblemNote holds the problem code a request was answered with; the
// server-span middleware keeps one per request (httptrace.HTTPServer).
type ProblemNote struct{ code string }

// Code is the problem code SetProblem recorded, "" when none.
func (n *ProblemNote) Code() string { return n.code }

// SetProblem records on the request's server span the problem code the
// request was answered with, as error.type (httptrace.HTTPServer reads
// it through the ProblemNote it put in the request's context).
func SetProblem(ctx context.Context, code string) {
	if !Enabled() || code == "" {
		return
	}
	if n, ok := ctx.Value(problemKey{}).(*ProblemNote); ok {
		n.code = code
	}
}

// WithProblemNote returns ctx with n ready for SetProblem.
func WithProblemNote(ctx context.Context, n *ProblemNote) context.Context {
	return context.WithValue(ctx, problemKey{}, n)
}
