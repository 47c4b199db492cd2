package mcpface_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// BenchmarkMCPFace is the gateway's own work for one request on each
// face, through the whole agent router (request id, auth, body checks,
// the MCP face or the REST route), side by side: an MCP ping, tools/list
// and describe_handle against a REST describe_handle and GET .../tools,
// and loom_search on both faces over cmd/loadgen's 10 KB payload. MCP
// speaks 2025-06-18, as cmd/loadgen --mcp does. BENCHMARKS.md's target:
// an MCP ping and describe_handle at most 1.5x the CPU of a REST
// describe_handle.
//
//	go test ./internal/mcpface -run '^$' -bench MCPFace -benchmem -count 6
func BenchmarkMCPFace(b *testing.B) {
	g := newMCPGateway(b, gatewayOptions{MaxHandlesPerRun: 1 << 30}, false, func(d *testDeps) {
		d.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
		payload := benchdata.Search10K()
		d.Runner = runnerFunc(func(ctx context.Context, argv, env []string) (loomref.Output, error) {
			return loomref.Output{Stdout: payload}, nil
		})
	})
	g.run(b, "r", `,"maxConfidentiality":["https://loom.example/facet/work"],"ttlSeconds":3600`)
	token := g.tokens["r"]
	rec := g.call("r", token, "loom_search", `{"query":"atlas"}`)
	handle := handleText.FindString(rec.Body.String())
	if rec.Code != http.StatusOK || handle == "" {
		b.Fatalf("loom_search = %d %s", rec.Code, rec.Body)
	}
	mcp := func(body string) func() *httptest.ResponseRecorder {
		return func() *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/v1/runs/r/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			g.agent.ServeHTTP(rec, req)
			return rec
		}
	}
	rest := func(method, op, body string) func() *httptest.ResponseRecorder {
		return func() *httptest.ResponseRecorder {
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			req := httptest.NewRequest(method, "/v1/runs/r/"+op, rd)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			g.agent.ServeHTTP(rec, req)
			return rec
		}
	}
	for _, bc := range []struct {
		name string
		do   func() *httptest.ResponseRecorder
	}{
		{"rest_describe_handle", rest(http.MethodPost, "describe_handle", `{"token":"`+handle+`"}`)},
		{"mcp_ping", mcp(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)},
		{"mcp_describe_handle", mcp(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_handle","arguments":{"token":"` + handle + `"}}}`)},
		{"rest_tools", rest(http.MethodGet, "tools", "")},
		{"mcp_tools_list", mcp(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)},
		{"rest_loom_search", rest(http.MethodPost, "loom_search", `{"query":"atlas"}`)},
		{"mcp_loom_search", mcp(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas"}}}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := testkit.ProcessCPU()
			for b.Loop() {
				if rec := bc.do(); rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"isError":true`)) {
					b.Fatalf("%s = %d %s", bc.name, rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(testkit.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
