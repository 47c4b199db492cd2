// Package redistrace is the go-redis hook that gives every Redis command
// of the shared store a client span: named by the command (EVALSHA, GET,
// PIPELINE), with db.system.name redis and db.operation.name, and never a
// key, an argument or a reply, since keys carry run ids and tokens' hashes.
package redistrace

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-gateway/gateway/internal/telemetry"
)

// Hook is the tracing hook; add it with AddHook. It traces a command only
// while tracing is on (telemetry.Install, which otelsetup.Setup calls):
// with tracing off it adds nothing to a command.
type Hook struct{}

var _ redis.Hook = Hook{}

// DialHook leaves dialing as it is.
func (Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook gives each command a client span.
func (Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	if !telemetry.Enabled() {
		return next
	}
	return func(ctx context.Context, cmd redis.Cmder) error {
		o := opOf(cmd.Name())
		ctx, span := telemetry.StartWith(ctx, o.name, o.opts...)
		defer span.End()
		err := next(ctx, cmd)
		fail(span, err)
		return err
	}
}

// op is a command's span name and start options.
type op struct {
	name string
	opts []trace.SpanStartOption
}

func newOp(name string) *op {
	return &op{name, []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBSystemNameRedis, semconv.DBOperationName(name))}}
}

// ops holds the op of each command the shared store sends, by the
// lower-case name go-redis gives it, built once so that a command's span
// starts without building its name or options.
var ops = func() map[string]*op {
	m := map[string]*op{}
	for _, name := range []string{"evalsha", "eval", "script", "get", "set", "del", "exists", "keys", "scan",
		"ping", "hget", "hset", "hgetall", "expire", "pexpire", "subscribe", "publish", "hello", "client"} {
		m[name] = newOp(strings.ToUpper(name))
	}
	return m
}()

// opOf returns the op of the command go-redis names name.
func opOf(name string) *op {
	if o, ok := ops[name]; ok {
		return o
	}
	return newOp(strings.ToUpper(name))
}

// ProcessPipelineHook gives each pipeline (or transaction) one client
// span, with the number of commands it sent.
func (Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	if !telemetry.Enabled() {
		return next
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, span := telemetry.StartKind(ctx, "PIPELINE", trace.SpanKindClient,
			semconv.DBSystemNameRedis, semconv.DBOperationName("PIPELINE"),
			attribute.Int("db.operation.batch.size", len(cmds)))
		defer span.End()
		err := next(ctx, cmds)
		fail(span, err)
		return err
	}
}

// fail marks span failed with a fixed error type: a reply's error
// prefix (WRONGTYPE, ERR, ...), never its text, which may quote what the
// command carried. NOSCRIPT is no failure: a script's first EVALSHA on a
// server is answered so, and go-redis sends it again as EVAL.
func fail(span trace.Span, err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		return
	}
	kind := "redis_error"
	if re, ok := errors.AsType[redis.Error](err); ok {
		prefix, _, _ := strings.Cut(re.Error(), " ")
		if prefix == "NOSCRIPT" {
			return
		}
		if code(prefix) {
			kind = prefix
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		kind = "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	default:
		if _, ok := errors.AsType[net.Error](err); ok {
			kind = "network"
		}
	}
	telemetry.FailSpan(span, kind)
}

// code reports whether s is an error prefix as Redis writes them: 1 to 32
// capital letters.
func code(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
