package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"testing"
)

// TestLogAttrsWritesWhatLoggerDoes holds LogAttrs to slog's own
// LogAttrs: the same line but for the time, and nothing below the
// handler's level.
func TestLogAttrsWritesWhatLoggerDoes(t *testing.T) {
	var a, b bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	la := slog.New(slog.NewJSONHandler(&a, opts)).With("listener", "agent")
	lb := slog.New(slog.NewJSONHandler(&b, opts)).With("listener", "agent")
	ctx := context.Background()
	attrs := []slog.Attr{slog.String("runId", "r1"), slog.Int("admitted", 3), slog.Any("args", []string{"query"})}
	la.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
	LogAttrs(ctx, lb, slog.LevelInfo, "audit", attrs...)
	la.LogAttrs(ctx, slog.LevelDebug, "hidden", attrs...)
	LogAttrs(ctx, lb, slog.LevelDebug, "hidden", attrs...)
	noTime := regexp.MustCompile(`"time":"[^"]*",`)
	got, want := noTime.ReplaceAllString(b.String(), ""), noTime.ReplaceAllString(a.String(), "")
	if got != want || want == "" {
		t.Errorf("LogAttrs wrote\n%s\nslog's LogAttrs\n%s", got, want)
	}
}
