package handlers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loom-gateway/gateway/internal/benchdata"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/telemetry"
)

// BenchmarkToolCallTraced is BenchmarkToolCall with tracing on: every
// span sampled and batched to an exporter that drops them, so the figure
// is the spans' cost without the network. Each request carries a
// traceparent, as a traced harness would send.
//
//	go test ./internal/handlers -run '^$' -bench 'ToolCall(Traced)?$' -benchmem -count 6
func BenchmarkToolCallTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b.Cleanup(telemetry.Install(tp))
	g := newTestGateway(b, gatewayOptions{MaxHandlesPerRun: 1 << 30})
	g.deps.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	payload := benchdata.Search10K()
	g.deps.Runner = runnerFunc(func(ctx context.Context, argv, env []string) (loom.Output, error) {
		return loom.Output{Stdout: payload}, nil
	})
	id, token := g.createRun(b, `{"maxConfidentiality":["https://loom.example/facet/work"],"ttlSeconds":3600}`)
	path := "/v1/runs/" + id + "/loom_search"
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	cpu0 := processCPU()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"query":"atlas"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		rec := httptest.NewRecorder()
		g.agent.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("loom_search = %d %s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
