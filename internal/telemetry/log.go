package telemetry

import (
	"context"
	"log/slog"
	"time"
)

// LogAttrs is l.LogAttrs without the caller's program counter: slog's
// Logger walks the stack for it on every record (runtime.Callers), for a
// source that only a handler with AddSource writes, and the gateway's
// handlers never do. The record is otherwise the one l.LogAttrs makes:
// the same time, level, message and attributes, dropped when l's handler
// is not enabled at level.
func LogAttrs(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	h := l.Handler()
	if ctx == nil {
		ctx = context.Background()
	}
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}
