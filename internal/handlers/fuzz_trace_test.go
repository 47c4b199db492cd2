package handlers

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loom-gateway/gateway/internal/telemetry"
)

// traceFuzz turns tracing on for a fuzz target, every span recorded to
// memory; it must run before the router is built.
func traceFuzz(f *testing.F) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	f.Cleanup(telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))))
	return exp
}

// spanLeak returns the first of markers that a span exp recorded carries
// (in its name, an attribute, an event, a link or its status) and that
// span's name, then forgets the spans.
func spanLeak(exp *tracetest.InMemoryExporter, markers []string) (marker, span string) {
	defer exp.Reset()
	for _, s := range exp.GetSpans() {
		texts := []string{s.Name, s.Status.Description}
		for _, kv := range s.Attributes {
			texts = append(texts, kv.Value.Emit())
		}
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, l := range s.Links {
			for _, kv := range l.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, t := range texts {
			for _, m := range markers {
				if strings.Contains(t, m) {
					return m, s.Name
				}
			}
		}
	}
	return "", ""
}
