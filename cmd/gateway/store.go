package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/store"
)

var (
	_ gateway.Store         = (*store.Memory)(nil)
	_ gateway.Store         = (*store.Redis)(nil)
	_ gateway.DeleteWatcher = (*store.Redis)(nil)
)

// redisOptions parses a --store redis:// or rediss:// URL with go-redis.
// One or more addr=host:port parameters make it a Redis Cluster URL
// (redis.ParseClusterURL); the message never repeats the URL, which may
// hold a password.
func redisOptions(u string) (*redis.Options, *redis.ClusterOptions, error) {
	if !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		return nil, nil, errors.New(`want "memory", or a redis:// or rediss:// URL`)
	}
	if strings.Contains(u, "?addr=") || strings.Contains(u, "&addr=") {
		co, err := redis.ParseClusterURL(u)
		if err != nil {
			return nil, nil, errors.New("not a Redis Cluster URL go-redis accepts")
		}
		return nil, co, nil
	}
	ro, err := redis.ParseURL(u)
	if err != nil {
		return nil, nil, errors.New("not a Redis URL go-redis accepts")
	}
	return ro, nil, nil
}

// openStore builds the run store of --store (validated by buildDeps) and
// returns it with its close function. A Redis that does not answer yet is
// logged, not fatal: /readyz reports it until it does.
func openStore(o *options, log *slog.Logger) (gateway.Store, func()) {
	if o.storeURL == "memory" {
		return store.NewMemory(store.MemoryOptions{MaxRuns: o.maxRuns, MaxLabelClauses: o.maxLabelClauses}), func() {}
	}
	ro, co, _ := redisOptions(o.storeURL)
	redis.SetLogger(redisLog{log}) // go-redis logs process-wide; send it to ours
	var c redis.UniversalClient
	if co != nil {
		c = redis.NewClusterClient(co)
	} else {
		c = redis.NewClient(ro)
	}
	s := store.NewRedis(c, store.RedisOptions{MaxRuns: o.maxRuns, MaxLabelClauses: o.maxLabelClauses})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		log.Warn("redis store not reachable yet; /readyz answers 503 until it is", "err", err)
	}
	return s, func() { _ = c.Close() }
}

// redisLog writes go-redis's own messages (failed dials and the like) to the
// gateway's log at warn level.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
