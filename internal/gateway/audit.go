package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/reqid/reqctx"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/telemetry"
)

// audit writes the "audit" log record of one tool call and counts it. It
// carries counts and codes, and for a failed call its failure without
// argv: no row, label or argument value.
func (s *Service) audit(ctx context.Context, c *call, rec store.Call) {
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.Call(c.tool, rec, c.loomTime)
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("requestId", reqctx.FromContext(ctx)),
		slog.String("runId", c.run.ID),
		slog.String("tool", c.tool))
	if c.outputID != "" { // none for call_limit_reached
		attrs = append(attrs, slog.String("outputId", c.outputID))
	}
	attrs = append(attrs, slog.String("status", rec.Status))
	if rec.Code != "" {
		attrs = append(attrs, slog.String("code", rec.Code))
	}
	if rec.HostCode != "" {
		attrs = append(attrs, slog.String("hostCode", rec.HostCode))
	}
	attrs = append(attrs,
		slog.Int("admitted", rec.Admitted),
		slog.Int("withheld", rec.Withheld),
		slog.Int("omitted", rec.Omitted),
		slog.Bool("truncated", rec.Truncated))
	if rec.ExitCode != nil {
		attrs = append(attrs, slog.Int("exitCode", *rec.ExitCode))
	}
	attrs = append(attrs, slog.Float64("durationMs", Millis(rec.Duration)))
	if c.loomTime != nil {
		attrs = append(attrs, slog.Float64("loomMs", Millis(*c.loomTime)))
	}
	if c.argNames != nil {
		attrs = append(attrs, slog.Any("args", c.argNames))
	}
	if rec.TraceID != "" {
		attrs = append(attrs, slog.String("traceId", rec.TraceID))
	}
	if f := rec.Failure; f != nil {
		attrs = append(attrs, failureAttr(f))
	}
	attrs = chainAttrs(attrs, c.chain)
	traceOutcome(ctx, c, rec)
	telemetry.LogAttrs(ctx, s.log, slog.LevelInfo, "audit", attrs...)
}

// Millis is d in milliseconds, to the microsecond, as the logs write
// durations.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// argNames returns the sorted member names of the top-level object of a
// tool's input, never a value (AuditArgShape). The contract has refused
// names the tool does not declare; a name that is not a plain identifier
// is still shown only as "?".
func argNames(input []byte) []string {
	names := []string{}
	dec := jsontext.NewDecoder(bytes.NewReader(input))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return names
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		name := tok.String()
		if !plainName(name) {
			name = "?"
		}
		names = append(names, name)
		if dec.SkipValue() != nil {
			break
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// plainName reports whether s is an ASCII identifier of at most 64 bytes.
func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// failureAttr is the failure of an audit record: its reason, detail and
// stderr tail, never argv (an argument value would be in it).
func failureAttr(f *store.Failure) slog.Attr {
	attrs := make([]any, 1, 3)
	attrs[0] = slog.String("reason", f.Reason)
	if f.Detail != "" {
		attrs = append(attrs, slog.String("detail", f.Detail))
	}
	if f.StderrTail != "" {
		attrs = append(attrs, slog.String("stderrTail", f.StderrTail))
	}
	return slog.Group("failure", attrs...)
}
