package handlers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loom-gateway/gateway/internal/telemetry"
	"github.com/loom-gateway/gateway/internal/telemetry/otelsetup"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

// BenchmarkToolCallTraced is BenchmarkToolCall with tracing on: every
// span sampled and batched to an exporter that drops them, so the figure
// is the spans' cost without the encoding and the network. Each request
// carries a traceparent, as a traced harness would send.
//
//	go test ./internal/handlers -run '^$' -bench 'ToolCall(Traced|Exported)?$' -benchmem -count 6
func BenchmarkToolCallTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b.Cleanup(telemetry.Install(tp))
	benchTracedCall(b)
}

// BenchmarkToolCallExported is BenchmarkToolCall with tracing on as the
// gateway turns it on (otelsetup.Setup from OTEL_EXPORTER_OTLP_ENDPOINT,
// with its defaults): every span sampled, batched, encoded as OTLP
// protobuf and sent over HTTP to an in-process sink that reads each
// export and discards it. cpu-ns/op counts the batching, the encoding,
// the HTTP client and the sink's read, all in this process.
func BenchmarkToolCallExported(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(sink.Close)
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_TRACES_SAMPLER", "OTEL_SDK_DISABLED"} {
		b.Setenv(k, "")
	}
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	shutdown, err := otelsetup.Setup(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return sink.URL
		}
		return ""
	}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = shutdown(context.Background()) })
	if !telemetry.Enabled() {
		b.Fatal("otelsetup.Setup did not turn tracing on")
	}
	benchTracedCall(b)
}

// benchTracedCall is BenchmarkToolCall's loop with a traceparent on each
// request, under whatever tracer provider the benchmark installed.
func benchTracedCall(b *testing.B) {
	g := newTestGateway(b, gatewayOptions{MaxHandlesPerRun: 1 << 30})
	benchSearch(b, g, benchdata.Search10K(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
}
