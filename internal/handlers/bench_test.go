package handlers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// BenchmarkToolCall is the gateway's own work for one loom_search call,
// everything cmd/loadgen's gateway does but the process and the network:
// the agent router with its middleware (request id, request log, auth,
// body checks, contract validation), the strict handler, Condense reading
// stdout, Decide, measure, handle minting, the call log, the response
// and the audit record, at info level into io.Discard. The loom
// answers at once with cmd/loadgen's 10 KB fake payload; the run has the
// work-only ceiling, so its 48 hits are admitted, withheld and unreadable
// in turns.
//
//	go test ./internal/handlers -run '^$' -bench ToolCall -benchmem
func BenchmarkToolCall(b *testing.B) { benchToolCall(b, benchdata.Search10K()) }

// BenchmarkToolCallLarge is BenchmarkToolCall with search payloads of
// 1 MB and 5 MB, as cmd/loadgen --payload-bytes prints them: the rows
// past the measured ones are read and counted, never kept.
//
//	go test ./internal/handlers -run '^$' -bench ToolCallLarge -benchmem
func BenchmarkToolCallLarge(b *testing.B) {
	for _, size := range []int{1 << 20, 5 << 20} {
		payload := benchdata.Search(size)
		b.Run(fmt.Sprintf("search-%dMB", size>>20), func(b *testing.B) { benchToolCall(b, payload) })
	}
}

func benchToolCall(b *testing.B, payload []byte) {
	g := newTestGateway(b, gatewayOptions{MaxHandlesPerRun: 1 << 30})
	benchSearch(b, g, payload, "")
}

// benchSearch times loom_search calls through g's agent router, its loom
// answering payload at once and its log at info level into io.Discard;
// traceparent, when not empty, is sent with each request.
func benchSearch(b *testing.B, g *testGateway, payload []byte, traceparent string) {
	g.deps.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	g.deps.Runner = runnerFunc(func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		return loomref.Output{Stdout: payload}, nil
	})
	id, token := g.createRun(b, `{"maxConfidentiality":["https://loom.example/facet/work"],"ttlSeconds":3600}`)
	path := "/v1/runs/" + id + "/loom_search"
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	cpu0 := testkit.ProcessCPU()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"query":"atlas"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		rec := httptest.NewRecorder()
		g.agent.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("loom_search = %d %s", rec.Code, rec.Body)
		}
	}
	// The process's CPU time per call, the collector's included: steadier
	// than ns/op on a shared machine, where the wall clock also counts
	// time the benchmark spent waiting for a core.
	b.ReportMetric(float64(testkit.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

type runnerFunc func(ctx context.Context, argv, env []string) (loomref.Output, error)

func (f runnerFunc) RunTool(ctx context.Context, tool loom.Tool, argv, env []string) (loom.Output, error) {
	out, err := f(ctx, argv, env)
	if err != nil {
		return loom.Output{ExitCode: out.ExitCode, Duration: out.Duration}, err
	}
	return loomtest.Condensed(tool, out), nil
}
