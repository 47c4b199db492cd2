package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/store/storetest"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

func benchRefs(n int) []store.Referent {
	rs := make([]store.Referent, n)
	for i := range rs {
		rs[i] = storetest.Referent(i)
	}
	return rs
}

func benchRun(b *testing.B, m *memstore.Store, id string) {
	b.Helper()
	now := time.Now()
	err := m.CreateRun(context.Background(), store.Run{
		ID:        id,
		TokenHash: store.HashToken("token-" + id),
		CreatedAt: now,
		ExpiresAt: now.Add(time.Hour),
		Ceiling:   ifc.CeilingOf(ifc.Confidentiality{ifc.Clause(`{"type":"https://commonfabric.org/cfc/atom/Space","space":"work"}`)}),
	})
	if err != nil {
		b.Fatal(err)
	}
}

// filled returns a store holding one run with the first n of rs minted, in
// batches of 50, and the tokens.
func filled(b *testing.B, rs []store.Referent) (*memstore.Store, []string) {
	b.Helper()
	m := memstore.New(memstore.Options{})
	benchRun(b, m, "run-1")
	toks := make([]string, 0, len(rs))
	for i := 0; i < len(rs); i += 50 {
		t, err := m.Mint(context.Background(), "run-1", rs[i:min(i+50, len(rs))], store.MintLimits{})
		if err != nil {
			b.Fatal(err)
		}
		toks = append(toks, t...)
	}
	return m, toks
}

var sizes = []struct {
	name string
	n    int
}{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}}

// BenchmarkMint: fill mints n new referents into an empty run in batches of
// 50 (one op = the whole table; ns/handle is the figure); remint mints a
// batch of 50 held referents into a table of n (the dedupe path of a
// repeated search).
func BenchmarkMint(b *testing.B) {
	ctx := context.Background()
	for _, sz := range sizes {
		rs := benchRefs(sz.n)
		b.Run("fill="+sz.name, func(b *testing.B) {
			for b.Loop() {
				filled(b, rs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sz.n), "ns/handle")
		})
		b.Run("remint="+sz.name, func(b *testing.B) {
			m, _ := filled(b, rs)
			i := 0
			for b.Loop() {
				lo := i % (sz.n - 50)
				if _, err := m.Mint(ctx, "run-1", rs[lo:lo+50], store.MintLimits{}); err != nil {
					b.Fatal(err)
				}
				i += 50
			}
		})
	}
}

func BenchmarkHandleLookup(b *testing.B) {
	ctx := context.Background()
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			m, toks := filled(b, benchRefs(sz.n))
			i := 0
			for b.Loop() {
				if _, ok, err := m.Handle(ctx, "run-1", toks[i%len(toks)]); !ok || err != nil {
					b.Fatalf("Handle = %v, %v", ok, err)
				}
				i++
			}
		})
	}
}

// BenchmarkMemoryPerRun reports the heap held per idle run (no calls, no
// handles, a one-clause ceiling) with 10,000 runs in the store.
func BenchmarkMemoryPerRun(b *testing.B) {
	const runs = 10_000
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("run-%026d", i) // the width of a ULID
	}
	var total float64
	for b.Loop() {
		before := testkit.LiveHeap()
		m := memstore.New(memstore.Options{})
		for _, id := range ids {
			benchRun(b, m, id)
		}
		after := testkit.LiveHeap()
		runtime.KeepAlive(m)
		total += float64(after-before) / runs
	}
	b.ReportMetric(total/float64(b.N), "B/run")
}

// BenchmarkMemoryPerHandle reports the heap held per referent with 100,000
// referents in one run, and the referent's own bytes (value and label
// texts) for comparison.
func BenchmarkMemoryPerHandle(b *testing.B) {
	const handles = 100_000
	rs := benchRefs(handles)
	payload := 0
	for _, r := range rs {
		payload += len(r.Value) + len(r.Label.Confidentiality[0]) + len(r.Label.Integrity[0])
	}
	var total float64
	for b.Loop() {
		before := testkit.LiveHeap()
		m, toks := filled(b, rs)
		toks = nil
		after := testkit.LiveHeap()
		runtime.KeepAlive(m)
		runtime.KeepAlive(rs)
		_ = toks
		total += float64(after-before) / handles
	}
	b.ReportMetric(total/float64(b.N), "B/handle")
	b.ReportMetric(float64(payload)/handles, "payload-B/handle")
}

// BenchmarkMemoryPerCall reports the heap held per call record with
// 10,000 calls in one run (the default --max-calls-per-run), each shaped
// as cmd/loadgen's 10 KB loom_search answer under the work ceiling: 48
// entries, 16 admitted with a one-clause label and a handle, 32 withheld.
func BenchmarkMemoryPerCall(b *testing.B) {
	const calls = 10_000
	c := store.Call{OutputID: "out-000001", Tool: "loom_search", Status: "ok", Admitted: 16, Withheld: 32,
		Observed: ifc.Confidentiality{[]byte(`["https://loom.example/facet/work"]`)}, Duration: 7 * time.Millisecond,
		StartedAt: time.Now()}
	for i := range 48 {
		if i%3 == 0 {
			c.Entries = append(c.Entries, store.CallEntry{Status: "admitted", LabelSource: "row",
				Label:  ifc.Disclosed{Confidentiality: [][]string{{"https://loom.example/facet/work"}}, Integrity: []string{}},
				Handle: fmt.Sprintf("cfh:v:%05d", i)})
		} else {
			c.Entries = append(c.Entries, store.CallEntry{Status: "withheld", ReasonCode: "cfc_ceiling_exceeded"})
		}
	}
	ctx := context.Background()
	var total float64
	for b.Loop() {
		before := testkit.LiveHeap()
		m := memstore.New(memstore.Options{})
		benchRun(b, m, "run-call-log")
		for range calls {
			if err := m.AppendCall(ctx, "run-call-log", c); err != nil {
				b.Fatal(err)
			}
		}
		after := testkit.LiveHeap()
		runtime.KeepAlive(m)
		total += float64(after-before) / calls
	}
	b.ReportMetric(total/float64(b.N), "B/call")
}
