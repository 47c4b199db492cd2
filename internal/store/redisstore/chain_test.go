package redisstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
	"github.com/loom-gateway/gateway/internal/store/storetest"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// tamperer makes stores on one client and rewrites their chains in Redis
// with plain commands, as anyone who can write to Redis can.
type tamperer struct {
	c        redis.Cmdable
	mu       sync.Mutex
	prefixes map[store.Store]string
}

func (tm *tamperer) newStore(prefix string, cfg storetest.Config) *redisstore.Store {
	s := redisstore.New(tm.c.(redis.UniversalClient), redisstore.Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses, Now: cfg.Now, Prefix: prefix})
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.prefixes == nil {
		tm.prefixes = map[store.Store]string{}
	}
	tm.prefixes[s] = prefix
	return s
}

func (tm *tamperer) set(t *testing.T, s store.Store, id string, recs [][]byte) {
	tm.mu.Lock()
	key := tm.prefixes[s] + "chain:{" + id + "}"
	tm.mu.Unlock()
	ctx := context.Background()
	args := make([]any, len(recs))
	for i, r := range recs {
		args[i] = r
	}
	if _, err := tm.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		if len(args) > 0 {
			p.RPush(ctx, key, args...)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRedisTamper runs the tampering suite with the chain's list
// rewritten in Redis.
func TestRedisTamper(t *testing.T) {
	url := redisURL(t)
	c := redisClient(t, url)
	tm := &tamperer{c: c}
	prefix := testPrefix(t, c)
	storetest.RunTamper(t, func(t *testing.T, cfg storetest.Config) storetest.Store { return tm.newStore(prefix, cfg) }, tm.set)
}

// TestRedisClusterTamper runs it on a Redis Cluster.
func TestRedisClusterTamper(t *testing.T) {
	url := redisClusterURL(t)
	c := redisClusterClient(t, url)
	tm := &tamperer{c: c}
	prefix := "loom-gateway-test:" + testkit.RandomHex(6) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		_ = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			it := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for it.Next(ctx) {
				_ = node.Unlink(ctx, it.Val()).Err()
			}
			return it.Err()
		})
	})
	storetest.RunTamper(t, func(t *testing.T, cfg storetest.Config) storetest.Store { return tm.newStore(prefix, cfg) }, tm.set)
}
