package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// record installs an SDK provider recording to memory for t.
func record(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(Install(tp))
	return exp
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestOffCostsNothing(t *testing.T) {
	ctx, span := Start(context.Background(), "x")
	if span.IsRecording() || ctx != context.Background() {
		t.Errorf("off, Start made a span")
	}
	if TraceID(ctx) != "" || Traceparent(ctx) != "" {
		t.Errorf("off, a trace id")
	}
}

func TestTraceparent(t *testing.T) {
	record(t)
	ctx, span := Start(context.Background(), "x")
	defer span.End()
	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got := Traceparent(ctx); got != want {
		t.Errorf("Traceparent = %q, want %q", got, want)
	}
}

// TestTraceIDsAllocateOnce: the trace id and the traceparent, asked for on
// every traced call, are each built in one allocation (the string).
func TestTraceIDsAllocateOnce(t *testing.T) {
	record(t)
	ctx, span := Start(context.Background(), "x")
	defer span.End()
	if got := TraceID(ctx); got != span.SpanContext().TraceID().String() {
		t.Errorf("TraceID = %q, want %q", got, span.SpanContext().TraceID())
	}
	for name, f := range map[string]func(context.Context) string{"TraceID": TraceID, "Traceparent": Traceparent} {
		if n := testing.AllocsPerRun(100, func() { _ = f(ctx) }); n > 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
	}
}
