// Package otelsetup installs the gateway's tracer provider from the
// standard OTEL_* environment variables, with the OpenTelemetry Go SDK's
// own exporters (autoexport: otlp over HTTP or gRPC, console, none).
package otelsetup

import (
	"context"
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
	uninstall := telemetry.Install(tp)
	return func(ctx context.Context) error {
		uninstall()
		return tp.Shutdown(ctx)
	}, nil
}
