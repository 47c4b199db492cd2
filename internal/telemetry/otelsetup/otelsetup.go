// Package otelsetup installs the gateway's tracer provider from the
// standard OTEL_* environment variables, with the OpenTelemetry Go SDK's
// own exporters (autoexport: otlp over HTTP or gRPC, console, none).
package otelsetup

import (
	"context"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/loom-gateway/gateway/internal/telemetry"
)

// ServiceName is the service.name of the gateway's resource unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "loom-gateway"

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
// batching, sampled by Sampler (every trace by default),
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
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(Sampler(getenv)))
	uninstall := telemetry.Install(tp)
	return func(ctx context.Context) error {
		uninstall()
		return tp.Shutdown(ctx)
	}, nil
}

// Sampler is the gateway's sampler: the root sampler OTEL_TRACES_SAMPLER
// names (always_on, the default; always_off; traceidratio with
// OTEL_TRACES_SAMPLER_ARG, 1 by default; each parentbased_ form names the
// same root) decides every trace that reaches the gateway, whether or not
// the request carries a traceparent. An agent's traceparent gives the
// trace its id and the server span its parent, never the decision: its
// sampled flag is the agent's to set, and 00 must not turn tracing off for
// the agent's calls (nor 01 turn it on past the gateway's ratio). A span
// whose parent is the gateway's own follows that parent, so a trace is
// kept or dropped whole. An unknown sampler name is always_on.
func Sampler(getenv func(string) string) sdktrace.Sampler {
	root := rootSampler(getenv)
	return sdktrace.ParentBased(root, sdktrace.WithRemoteParentSampled(root), sdktrace.WithRemoteParentNotSampled(root))
}

// rootSampler is the sampler OTEL_TRACES_SAMPLER names, its parentbased_
// prefix aside.
func rootSampler(getenv func(string) string) sdktrace.Sampler {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	switch strings.TrimPrefix(name, "parentbased_") {
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		ratio, err := strconv.ParseFloat(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")), 64)
		if err != nil || ratio < 0 || ratio > 1 {
			ratio = 1
		}
		return sdktrace.TraceIDRatioBased(ratio)
	}
	return sdktrace.AlwaysSample()
}
