package redisstore_test

import (
	"testing"

	"github.com/loom-gateway/gateway/internal/store/redisstore"
	"github.com/loom-gateway/gateway/internal/store/storetest"
)

func TestRedisTombstones(t *testing.T) {
	url := redisURL(t)
	storetest.Tombstones(t, func(t *testing.T, cfg storetest.Config) storetest.Store {
		c := redisClient(t, url)
		return redisstore.New(c, redisstore.Options{Prefix: testPrefix(t, c)})
	})
}
