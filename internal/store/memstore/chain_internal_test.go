package memstore

import (
	"testing"

	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/storetest"
)

// TestMemoryTamper runs the tampering suite with the chain changed in the
// store's own map.
func TestMemoryTamper(t *testing.T) {
	storetest.RunTamper(t, func(t *testing.T, cfg storetest.Config) storetest.Store {
		return New(Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses, Now: cfg.Now})
	}, func(t *testing.T, s store.Store, id string, recs [][]byte) {
		m := s.(*Store)
		m.mu.Lock()
		defer m.mu.Unlock()
		r, err := m.live(id, m.now())
		if err != nil {
			t.Fatal(err)
		}
		r.chain.records = append([][]byte(nil), recs...)
	})
}
