package handlers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/benchdata"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
)

// BenchmarkToolCallRedis is BenchmarkToolCall on the Redis store of
// LOOM_GATEWAY_TEST_REDIS (under a key prefix of its own): the gateway's
// own work for one loom_search call with its store steps.
//
//	go test ./internal/handlers -run '^$' -bench ToolCallRedis -benchmem
func BenchmarkToolCallRedis(b *testing.B) {
	url := os.Getenv("LOOM_GATEWAY_TEST_REDIS")
	if url == "" {
		b.Skip("LOOM_GATEWAY_TEST_REDIS is not set")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	c := redis.NewClient(opt)
	prefix := fmt.Sprintf("loom-gateway-hbench:%d:", time.Now().UnixNano())
	b.Cleanup(func() {
		ctx := context.Background()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
		c.Close()
	})
	var g *testGateway
	g = newTestGateway(b, gatewayOptions{MaxHandlesPerRun: 1 << 30, WrapStore: func(*memstore.Store) gateway.Store {
		// The gateway's clock, so that runs expire by it.
		return redisstore.New(c, redisstore.Options{Prefix: prefix, Now: func() time.Time { return g.clock.Now() }})
	}})
	g.clock.now = time.Now() // Redis expires keys by the wall clock
	g.deps.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	payload := benchdata.Search10K()
	g.deps.Runner = runnerFunc(func(ctx context.Context, argv, env []string) (loom.Output, error) {
		return loom.Output{Stdout: payload}, nil
	})
	id, token := g.createRun(b, `{"maxConfidentiality":["https://loom.example/facet/work"],"ttlSeconds":3600}`)
	path := "/v1/runs/" + id + "/loom_search"
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"query":"atlas"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		g.agent.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("loom_search = %d %s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
