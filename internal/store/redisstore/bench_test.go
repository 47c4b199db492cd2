package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/storetest"
)

// benchFinish is the end of a call that admitted rows first..first+n-1.
func benchFinish(first, n int) store.Finish {
	f := store.Finish{Call: store.Call{OutputID: "r:loom_search:1", Tool: "loom_search", Status: "ok", Admitted: n, StartedAt: time.Now()}}
	for i := range n {
		ref := storetest.Referent(first + i)
		f.Refs = append(f.Refs, ref)
		f.Call.Entries = append(f.Call.Entries, store.CallEntry{Status: "admitted", LabelSource: "row", Label: ifc.Disclose(ref.Label)})
	}
	f.Observed = f.Refs[0].Label.Confidentiality
	f.Base = f.Observed
	return f
}

// benchStore is a Redis store on LOOM_GATEWAY_TEST_REDIS under a prefix of
// its own, holding run "r" (token "t"), or the benchmark is skipped.
func benchStore(b *testing.B) *Store {
	b.Helper()
	s, _ := internalRedis(b)
	now := time.Now()
	if err := s.CreateRun(context.Background(), store.Run{ID: "r", TokenHash: store.HashToken("t"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCall is a tool call's store steps on Redis: Begin (the token,
// the rate bucket, the output number, the in-flight mark) and Finish of
// 48 admitted rows, which gives the mark back, as
// cmd/loadgen's 10 KB search at the work ceiling. held: the rows are held
// from an earlier call (the same query again); new: every call mints 48.
//
//	go test ./internal/store/redisstore -run '^$' -bench Call -benchmem
func BenchmarkCall(b *testing.B) {
	for _, held := range []bool{true, false} {
		name := "new"
		if held {
			name = "held"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			tok := store.HashToken("t")
			rate := store.Rate{PerSecond: 1e9, Burst: 1 << 30}
			b.ReportAllocs()
			n := 0
			f := benchFinish(0, 48)
			for b.Loop() {
				if !held {
					b.StopTimer()
					f = benchFinish(n*48, 48)
					b.StartTimer()
				}
				r, err := s.Begin(ctx, "r", store.Begin{Token: &tok, Rate: rate, MaxInFlight: 8, Lease: time.Minute})
				if err != nil || !r.Marked {
					b.Fatalf("Begin = Marked %v, %v", r.Marked, err)
				}
				f.Mark = r.Seq
				if _, err := s.Finish(ctx, "r", f); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}

// BenchmarkBegin is Begin alone: the token, the bucket and the number.
func BenchmarkBegin(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	tok := store.HashToken("t")
	rate := store.Rate{PerSecond: 1e9, Burst: 1 << 30}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Begin(ctx, "r", store.Begin{Token: &tok, Rate: rate}); err != nil {
			b.Fatal(err)
		}
	}
}
