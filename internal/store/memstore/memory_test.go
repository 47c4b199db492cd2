package memstore_test

import (
	"testing"

	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) storetest.Store {
		return memstore.New(memstore.Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses, Now: cfg.Now})
	})
}

func TestMemoryRealTime(t *testing.T) {
	// The suite's wall-clock mode, as a Redis store with real TTLs runs it.
	storetest.RunOptions(t, storetest.Options{RealTime: true},
		func(t *testing.T, cfg storetest.Config) storetest.Store {
			if cfg.Now != nil {
				t.Fatal("RealTime: Config.Now is set")
			}
			return memstore.New(memstore.Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses})
		})
}
