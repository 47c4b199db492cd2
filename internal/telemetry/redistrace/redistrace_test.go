package redistrace

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-gateway/gateway/internal/telemetry"
)

// replyError is a Redis error reply, as go-redis returns one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

// TestProcessHook: each command is a client span named by the command,
// with db.system.name and db.operation.name, never a key or an argument;
// a failed command's error.type is the reply's prefix, never its text; a
// NOSCRIPT reply and a nil answer are no failure.
func TestProcessHook(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	t.Cleanup(telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))))
	tests := []struct {
		name    string
		err     error
		errType string
	}{
		{"ok", nil, ""},
		{"nil", redis.Nil, ""},
		{"noscript", replyError("NOSCRIPT No matching script. Please use EVAL."), ""},
		{"wrongtype", replyError("WRONGTYPE Operation against a key loom-gateway:run:SECRET"), "WRONGTYPE"},
		{"free text", replyError("user script:1: SECRET"), "redis_error"},
		{"cancelled", context.Canceled, "cancelled"},
		{"other", errors.New("SECRET"), "redis_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			hook := Hook{}.ProcessHook(func(context.Context, redis.Cmder) error { return tc.err })
			cmd := redis.NewStringCmd(context.Background(), "get", "loom-gateway:run:SECRET")
			if err := hook(context.Background(), cmd); !errors.Is(err, tc.err) {
				t.Fatalf("hook returned %v, want %v", err, tc.err)
			}
			spans := exp.GetSpans()
			if len(spans) != 1 || spans[0].Name != "GET" {
				t.Fatalf("spans %v, want one named GET", spans)
			}
			got := map[string]string{}
			for _, kv := range spans[0].Attributes {
				got[string(kv.Key)] = kv.Value.Emit()
			}
			if got["db.system.name"] != "redis" || got["db.operation.name"] != "GET" || got["error.type"] != tc.errType {
				t.Errorf("attributes %v, want redis, GET and error.type %q", got, tc.errType)
			}
			if len(got) != 2+min(len(tc.errType), 1) {
				t.Errorf("attributes %v: more than the system, operation and error type", got)
			}
			if d := spans[0].Status.Description; d != tc.errType {
				t.Errorf("status %q, want %q", d, tc.errType)
			}
		})
	}
}

// TestProcessHookAllocations: a command's span starts from a name and
// options built once: nothing is allocated beyond the SDK's span.
func TestProcessHookAllocations(t *testing.T) {
	tp := sdktrace.NewTracerProvider() // spans record, nothing exports
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	t.Cleanup(telemetry.Install(tp))
	hook := Hook{}.ProcessHook(func(context.Context, redis.Cmder) error { return nil })
	cmd := redis.NewCmd(context.Background(), "evalsha", "0123456789abcdef", 1, "loom-gateway:run:SECRET")
	ctx := context.Background()
	span := testing.AllocsPerRun(200, func() {
		_, s := telemetry.Tracer().Start(ctx, "x", trace.WithSpanKind(trace.SpanKindClient))
		s.SetAttributes(semconv.DBSystemNameRedis, semconv.DBOperationName("EVALSHA"))
		s.End()
	})
	all := testing.AllocsPerRun(200, func() { _ = hook(ctx, cmd) })
	if all > span {
		t.Errorf("a command's span allocates %v, a bare span with its attributes %v", all, span)
	}
}
