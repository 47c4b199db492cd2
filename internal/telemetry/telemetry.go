// Package telemetry is the gateway's OpenTelemetry tracing: the tracer
// provider the standard OTEL_* environment variables configure (Setup),
// the W3C trace context read from a request and handed to loom, and the
// small span helpers the listeners, the core and the stores use.
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
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span the gateway makes.
const ScopeName = "github.com/loom-gateway/gateway"

// ServiceName is the service.name of the gateway's resource unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "loom-gateway"

// enabled is set by Setup when it installs an exporting tracer provider;
// the helpers read it to cost nothing when tracing is off.
var enabled atomic.Bool

// Enabled reports whether Setup installed an exporting tracer provider.
func Enabled() bool { return enabled.Load() }

// Configured reports whether getenv asks for traces: OTEL_TRACES_EXPORTER
// names an exporter other than none, or an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); and
// OTEL_SDK_DISABLED is not true.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exp != "" {
		return exp != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs, when getenv configures tracing (Configured), a tracer
// provider exporting through autoexport (otlp over http/protobuf or grpc,
// console, none, as OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_* say),
// batching, sampled as OTEL_TRACES_SAMPLER says (every span by default),
// with a resource naming the service (service.name, service.version,
// OTEL_RESOURCE_ATTRIBUTES). The autoexport and SDK read the process
// environment, so getenv should be os.Getenv's view of it. shutdown
// flushes the spans still held and stops the exporter; when tracing is
// off it does nothing. Setup returns the exporter's or resource's error.
// It is not safe to call concurrently and is meant to be called once.
func Setup(ctx context.Context, getenv func(string) string, version string) (shutdown func(context.Context) error, err error) {
	nothing := func(context.Context) error { return nil }
	if !Configured(getenv) {
		return nothing, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nothing, err
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return nothing, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceVersion(version)))
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nothing, err
	}
	if getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(ServiceName)))
		if err != nil {
			_ = exp.Shutdown(ctx)
			return nothing, err
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	uninstall := Install(tp)
	return func(ctx context.Context) error {
		uninstall()
		return tp.Shutdown(ctx)
	}, nil
}

// Install makes tp the global tracer provider and turns the helpers on;
// uninstall turns them off and restores the no-op provider. Setup uses
// it; tests install an SDK provider recording to memory.
func Install(tp trace.TracerProvider) (uninstall func()) {
	otel.SetTracerProvider(tp)
	tr := tp.Tracer(ScopeName)
	installed.Store(&tr)
	enabled.Store(true)
	return func() {
		enabled.Store(false)
		otel.SetTracerProvider(noopTP)
		installed.Store(nil)
	}
}

// installed is the tracer of the provider Install installed.
var installed atomic.Pointer[trace.Tracer]

// noopTP is OpenTelemetry's no-op provider.
var noopTP = noop.NewTracerProvider()

// tracer is the gateway's tracer: the installed provider's, else the
// global provider's.
func tracer() trace.Tracer {
	if tr := installed.Load(); tr != nil {
		return *tr
	}
	return otel.Tracer(ScopeName)
}

// noSpan is the span the helpers return when tracing is off.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts an internal span named name under ctx's span. Off, it
// returns ctx and a span that records nothing.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, noSpan
	}
	return tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// StartKind is Start with a span kind (client for a store command).
func StartKind(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, noSpan
	}
	return tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
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
	return sc.TraceID().String()
}

// propagator reads and writes W3C trace context (traceparent,
// tracestate).
var propagator = propagation.TraceContext{}

// Extract returns ctx with the remote span context carrier holds
// (traceparent, tracestate) as the parent of the next span. Off, it
// returns ctx.
func Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	if !Enabled() {
		return ctx
	}
	return propagator.Extract(ctx, carrier)
}

// Traceparent is the W3C traceparent of ctx's span, "" when tracing is
// off or ctx has no span.
func Traceparent(ctx context.Context) string {
	if !Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c.Get("traceparent")
}
