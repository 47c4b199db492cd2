package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
)

// ownCostStore is the store of the handlers loadgen serves in its own
// process (--own-cost, --cpuprofile, --trace): memory, or a Redis, so
// that the gateway's own cost per call can be compared on both without a
// loom process in the way. Pass the same Redis to the gateway binary with
// --gateway-arg=--store=redis://... to compare the whole call too.
var ownCostStore = flag.String("own-cost-store", "memory", "store of the in-process handlers (--own-cost, --cpuprofile, --trace): memory, or `redis://host:port/db` (a plain Redis; keys under a prefix of each in-process gateway, expiring with its runs)")

// inProcessStore is the store ownCostStore names.
func inProcessStore() (gateway.Store, error) {
	if *ownCostStore == "" || *ownCostStore == "memory" {
		return memstore.New(memstore.Options{MaxRuns: 10000}), nil
	}
	opt, err := redis.ParseURL(*ownCostStore)
	if err != nil {
		return nil, fmt.Errorf("--own-cost-store: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "loadgen-" + hex.EncodeToString(b[:]) + ":" // one per in-process gateway
	return redisstore.New(redis.NewClient(opt), redisstore.Options{MaxRuns: 10000, Prefix: prefix}), nil
}

// storeFloor returns a function that makes two EVALSHA round trips of a
// script that does nothing to the Redis at url: what a call's two store
// steps (Begin, Finish) cost there before any work of their own.
func storeFloor(ctx context.Context, url string) (func(context.Context) error, func(), error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("--store-floor: %w", err)
	}
	rc := redis.NewClient(opt)
	script := redis.NewScript("return 1")
	if err := script.Load(ctx, rc).Err(); err != nil {
		rc.Close()
		return nil, nil, fmt.Errorf("--store-floor: %w", err)
	}
	f := func(ctx context.Context) error {
		for range 2 {
			if err := script.EvalSha(ctx, rc, []string{"loadgen-floor"}).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	return f, func() { rc.Close() }, nil
}
