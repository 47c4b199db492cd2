package memstore

import (
	"context"

	"github.com/loom-gateway/gateway/internal/store"
)

var _ store.Chains = (*Store)(nil)

// chain is a run's chain (store.Seal): its records and its tip.
type chain struct {
	records [][]byte
	tip     store.Tip
}

// seal makes the record of a finishing step under the store's lock,
// before it writes anything: seal nil is no record. tokens are the ones
// the step will mint.
func (r *memRun) seal(seal store.Seal, tokens func() []string) (*store.Sealed, error) {
	if seal == nil {
		return nil, nil
	}
	var toks []string
	if tokens != nil {
		toks = tokens()
	}
	s, err := seal(toks, r.chain.tip)
	if err != nil {
		return nil, err
	}
	if err := store.CheckSealed(s, r.chain.tip); err != nil {
		return nil, err
	}
	return &s, nil
}

// extend appends a sealed record (nil: none) to the run's chain.
func (r *memRun) extend(s *store.Sealed) {
	if s == nil {
		return
	}
	r.chain.records = append(r.chain.records, s.Record)
	r.chain.tip = s.Tip
}

// planned is the tokens mint(p) will return, read without writing.
func (r *memRun) planned(p mintPlan) []string {
	out := make([]string, len(p.idx))
	for i, j := range p.idx {
		if j >= 0 {
			out[i] = r.handles[j].Token
		} else {
			out[i] = store.ValueTokenPrefix + string(p.freshToken[-1-j][:])
		}
	}
	return out
}

// Chain returns the run's chain records, or ErrRunNotFound. A record is
// never written again, so the slice is copied under the lock and the
// records shared.
func (m *Store) Chain(_ context.Context, id string) ([][]byte, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return nil, err
	}
	return append([][]byte(nil), r.chain.records...), nil
}

// SweepEnded is Sweep that hands each run it removes, with its chain and
// its result (nil when none), to ended, after the lock is given back: so
// that a run that ends by expiring gets its receipt signed on the chain
// as it ended (no call can extend the chain of an expired run).
func (m *Store) SweepEnded(ended func(r store.Run, chain [][]byte, res *store.Result)) int {
	now := m.now()
	m.mu.Lock()
	var gone []*memRun
	for _, r := range m.runs {
		if expired(&r.run, now) {
			m.remove(r)
			gone = append(gone, r)
		}
	}
	m.mu.Unlock()
	for _, r := range gone {
		ended(r.run, r.chain.records, r.result)
	}
	return len(gone)
}
