package handlers

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
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
	benchSearch(b, g, benchdata.Search10K(), "")
}
