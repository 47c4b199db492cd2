package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

// BenchmarkCallReceipts is one loom_search call of the core over the
// memory store, its loom answering cmd/loadgen's 10 KB payload at once,
// with receipts off and on (the chain sealed in Finish, the response
// digested, the audit record's chain fields): what the chain adds to a
// call, in bytes and allocations (the machine's load makes its time
// figures worth little).
//
//	go test ./internal/gateway -run '^$' -bench CallReceipts -benchmem
func BenchmarkCallReceipts(b *testing.B) {
	payload := benchdata.Search10K()
	for _, on := range []bool{false, true} {
		name := "off"
		o := coreOptions{RunFunc: func(ctx context.Context, argv, env []string) (loomref.Output, error) {
			return loomref.Output{Stdout: payload}, nil
		}}
		if on {
			name = "on"
			o.Receipts = &Receipts{Version: "bench"}
		}
		b.Run(name, func(b *testing.B) {
			c := newTestCore(b, o)
			c.log = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
			ctx := context.Background()
			id := "bench"
			created, err := c.CreateRun(ctx, RunSpec{ID: &id, MaxConfidentiality: []byte(`["https://loom.example/facet/work"]`)})
			if err != nil {
				b.Fatal(err)
			}
			run, err := c.Authenticate(ctx, id, created.Token)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				if _, err := c.Call(ctx, run, loom.Search, []byte(`{"query":"atlas"}`)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
