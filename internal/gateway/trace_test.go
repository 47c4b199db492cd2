package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/telemetry"
)

// TestCallTraced: with tracing on, a call is a "call" span with the loom
// process and the measurement beneath it; loom's environment gets the
// loom span's traceparent, and the call log entry and the audit record
// the trace id. Not parallel: it installs the global tracer provider.
func TestCallTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	t.Cleanup(telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))))

	var mu sync.Mutex
	var gotEnv []string
	s, st, tok := newCore(t, func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		mu.Lock()
		gotEnv = env
		mu.Unlock()
		return loomtest.Sample(ctx, argv, env)
	})
	var logs bytes.Buffer
	s.log = slog.New(slog.NewJSONHandler(&logs, nil))
	ctx := context.Background()
	run, err := s.Authenticate(ctx, "r", tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, run, loom.Search, []byte(`{"query":"SECRET-ARG"}`)); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		byName[sp.Name] = sp
	}
	call, proc, measure := byName["call loom_search"], byName["loom search"], byName["measure search"]
	if !call.SpanContext.IsValid() || !proc.SpanContext.IsValid() || !measure.SpanContext.IsValid() {
		t.Fatalf("spans %v, want call, loom and measure", slices.Collect(func(yield func(string) bool) {
			for _, sp := range spans {
				yield(sp.Name)
			}
		}))
	}
	if proc.Parent.SpanID() != call.SpanContext.SpanID() || measure.Parent.SpanID() != call.SpanContext.SpanID() {
		t.Errorf("loom and measure spans are not the call's children")
	}
	traceID := call.SpanContext.TraceID().String()
	want := "TRACEPARENT=00-" + traceID + "-" + proc.SpanContext.SpanID().String() + "-01"
	mu.Lock()
	if !slices.Contains(gotEnv, want) || len(gotEnv) != len(s.cfg.Env)+1 {
		t.Errorf("loom env %q, want the configured env and %s", gotEnv, want)
	}
	mu.Unlock()
	calls, _, err := st.CallsPage(ctx, "r", 0, 0)
	if err != nil || len(calls) != 1 || calls[0].TraceID != traceID {
		t.Errorf("call log %+v, %v: want one record with trace id %s", calls, err, traceID)
	}
	if !strings.Contains(logs.String(), `"traceId":"`+traceID+`"`) {
		t.Errorf("audit record without traceId %s:\n%s", traceID, logs.String())
	}
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			if strings.Contains(kv.Value.Emit(), "SECRET-ARG") || strings.Contains(kv.Value.Emit(), "/srv/loom") {
				t.Errorf("span %q attribute %s = %s", sp.Name, kv.Key, kv.Value.Emit())
			}
		}
	}
}

// TestCallUntraced: with tracing off, loom's environment is the
// configured one and no record carries a trace id.
func TestCallUntraced(t *testing.T) {
	var gotEnv []string
	s, st, tok := newCore(t, func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		gotEnv = env
		return loomtest.Sample(ctx, argv, env)
	})
	ctx := context.Background()
	run, err := s.Authenticate(ctx, "r", tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, run, loom.Search, []byte(`{"query":"q"}`)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotEnv, s.cfg.Env) {
		t.Errorf("loom env %q, want %q", gotEnv, s.cfg.Env)
	}
	calls, _, _ := st.CallsPage(ctx, "r", 0, 0)
	if len(calls) != 1 || calls[0].TraceID != "" {
		t.Errorf("call log %+v: want one record without a trace id", calls)
	}
}
