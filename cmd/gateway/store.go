package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
	"github.com/loom-gateway/gateway/internal/telemetry/redistrace"
)

var _ gateway.DeleteWatcher = (*redisstore.Store)(nil)

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

// Redis timeouts where the URL is silent. go-redis's own (5 s dial, 3 s
// read and write, 4 s for a pooled connection, three retries with backoff)
// hold a call 10 to 20 s on a Redis that accepts connections but does not
// answer; these answer store_unavailable within about 2 s. A URL parameter
// of the same name (dial_timeout, read_timeout, write_timeout,
// pool_timeout, max_retries) keeps its value.
const (
	redisDialTimeout  = time.Second
	redisReadTimeout  = time.Second
	redisWriteTimeout = time.Second
	redisPoolTimeout  = time.Second
	redisMaxRetries   = 1
)

// redisDefaults sets the timeouts and retries the URL u does not name on
// whichever of ro and co is not nil.
func redisDefaults(u string, ro *redis.Options, co *redis.ClusterOptions) {
	named := map[string]bool{}
	if parsed, err := url.Parse(u); err == nil {
		for k := range parsed.Query() {
			named[k] = true
		}
	}
	set := func(key string, field *time.Duration, d time.Duration) {
		if !named[key] {
			*field = d
		}
	}
	switch {
	case ro != nil:
		set("dial_timeout", &ro.DialTimeout, redisDialTimeout)
		set("read_timeout", &ro.ReadTimeout, redisReadTimeout)
		set("write_timeout", &ro.WriteTimeout, redisWriteTimeout)
		set("pool_timeout", &ro.PoolTimeout, redisPoolTimeout)
		if !named["max_retries"] {
			ro.MaxRetries = redisMaxRetries
		}
	case co != nil:
		set("dial_timeout", &co.DialTimeout, redisDialTimeout)
		set("read_timeout", &co.ReadTimeout, redisReadTimeout)
		set("write_timeout", &co.WriteTimeout, redisWriteTimeout)
		set("pool_timeout", &co.PoolTimeout, redisPoolTimeout)
		if !named["max_retries"] {
			co.MaxRetries = redisMaxRetries
		}
	}
}

// openStore builds the run store of --store (validated by buildDeps) and
// returns it with its close function. A Redis that does not answer yet is
// logged, not fatal: /readyz reports it until it does.
func openStore(o *options, log *slog.Logger) (store.Store, func()) {
	if o.storeURL == "memory" {
		return memstore.New(memstore.Options{MaxRuns: o.maxRuns, MaxLabelClauses: o.maxLabelClauses}), func() {}
	}
	ro, co, _ := redisOptions(o.storeURL)
	redisDefaults(o.storeURL, ro, co)
	redis.SetLogger(redisLog{log}) // go-redis logs process-wide; send it to ours
	var c redis.UniversalClient
	if co != nil {
		c = redis.NewClusterClient(co)
	} else {
		c = redis.NewClient(ro)
	}
	c.AddHook(redistrace.Hook{}) // a span per command when tracing is on
	s := redisstore.New(c, redisstore.Options{MaxRuns: o.maxRuns, MaxLabelClauses: o.maxLabelClauses})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		log.Warn("redis store not reachable yet; /readyz answers 503 until it is", "err", err)
	}
	return s, func() { _ = c.Close() }
}

// redisLog writes go-redis's own messages (failed dials and the like) to the
// gateway's log at warn level, each starting "redis: " once (most of
// go-redis's already do).
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if !strings.HasPrefix(msg, "redis: ") {
		msg = "redis: " + msg
	}
	l.log.WarnContext(ctx, msg)
}
