package otelsetup

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestConfigured(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing", nil, false},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{"metrics only", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Configured(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("Configured(%v) = %v, want %v", tc.env, got, tc.want)
			}
		})
	}
}

// TestSampler: an agent's traceparent gives the trace its id and the span
// its parent, and the gateway's sampler decides whether it is kept: a
// sampled flag of 00 does not turn tracing off, nor 01 turn it on past
// the gateway's own always_off or ratio; a child of the gateway's own span
// follows it.
func TestSampler(t *testing.T) {
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := func(flags trace.TraceFlags) context.Context {
		return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: traceID, SpanID: spanID, TraceFlags: flags, Remote: true,
		}))
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		parent  context.Context
		sampled bool
	}{
		{"default, remote 00", nil, remote(0), true},
		{"default, remote 01", nil, remote(trace.FlagsSampled), true},
		{"default, no parent", nil, context.Background(), true},
		{"parentbased_always_on, remote 00", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_on"}, remote(0), true},
		{"always_off, remote 01", map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, remote(trace.FlagsSampled), false},
		{"parentbased_always_off, remote 01", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, remote(trace.FlagsSampled), false},
		{"traceidratio 0, remote 01", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, remote(trace.FlagsSampled), false},
		{"traceidratio 1, remote 00", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1"}, remote(0), true},
		{"unknown sampler, remote 00", map[string]string{"OTEL_TRACES_SAMPLER": "jaeger_remote"}, remote(0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(Sampler(func(k string) string { return tc.env[k] })))
			ctx, server := tp.Tracer("t").Start(tc.parent, "server")
			_, child := tp.Tracer("t").Start(ctx, "child")
			child.End()
			server.End()
			if got := server.SpanContext().IsSampled(); got != tc.sampled {
				t.Fatalf("server span sampled %v, want %v", got, tc.sampled)
			}
			if child.SpanContext().IsSampled() != server.SpanContext().IsSampled() {
				t.Errorf("the child's sampling is not its parent's")
			}
			spans := exp.GetSpans()
			if !tc.sampled {
				if len(spans) != 0 {
					t.Errorf("%d spans exported, want none", len(spans))
				}
				return
			}
			if len(spans) != 2 {
				t.Fatalf("%d spans exported, want 2", len(spans))
			}
			if tc.parent != context.Background() {
				s := spans[1]
				if s.Name != "server" || s.SpanContext.TraceID() != traceID || s.Parent.SpanID() != spanID || !s.Parent.IsRemote() {
					t.Errorf("server span %q trace %s parent %s, want the traceparent's trace and parent", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
				}
			}
		})
	}
}
