package memstore_test

import (
	"testing"

	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/storetest"
)

func TestMemoryTombstones(t *testing.T) {
	storetest.Tombstones(t, func(t *testing.T, cfg storetest.Config) storetest.Store {
		return memstore.New(memstore.Options{})
	})
}
