package gateway

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/telemetry"
)

// A call's spans: "call <tool>" (the whole use case, with its outcome),
// "loom <command>" (the process) and "measure <command>" (the reading and
// measurement of its output). They carry codes, counts, names and
// durations only, as the audit record does.

// traceOutcome sets a call's outcome on ctx's span: its status, problem
// code (as error.type too), counts and the argument names.
func traceOutcome(ctx context.Context, c *call, rec store.Call) {
	if !telemetry.Enabled() {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 5, 10)
	attrs[0] = telemetry.CallStatus.String(rec.Status)
	attrs[1] = telemetry.CallAdmitted.Int(rec.Admitted)
	attrs[2] = telemetry.CallWithheld.Int(rec.Withheld)
	attrs[3] = telemetry.CallOmitted.Int(rec.Omitted)
	attrs[4] = telemetry.CallTruncated.Bool(rec.Truncated)
	if c.outputID != "" {
		attrs = append(attrs, telemetry.CallOutputID.String(c.outputID))
	}
	if rec.HostCode != "" {
		attrs = append(attrs, telemetry.CallHostCode.String(rec.HostCode))
	}
	if c.argNames != nil {
		attrs = append(attrs, telemetry.CallArgs.StringSlice(c.argNames))
	}
	if rec.Code != "" {
		attrs = append(attrs, telemetry.CallCode.String(rec.Code), telemetry.ErrorType.String(rec.Code))
	}
	span.SetAttributes(attrs...)
	if rec.Code != "" {
		span.SetStatus(codes.Error, rec.Code)
	}
}

// noSpan is the span that records nothing, for when tracing is off.
var noSpan = trace.SpanFromContext(context.Background())

// toolSpans is what a tool's spans start with: their names and start
// options, built once per tool so that starting them builds nothing.
type toolSpans struct {
	call, loom, measure             string
	callOpts, loomOpts, measureOpts []trace.SpanStartOption
}

func newToolSpans(tool, kind string) *toolSpans {
	return &toolSpans{
		call:        "call " + tool,
		loom:        "loom " + kind,
		measure:     "measure " + kind,
		callOpts:    []trace.SpanStartOption{trace.WithAttributes(telemetry.GenAIToolName.String(tool))},
		loomOpts:    []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(telemetry.LoomCommand.String(kind))},
		measureOpts: nil,
	}
}

// spansOf holds the toolSpans of the eight tools and describe_handle.
var spansOf = func() map[string]*toolSpans {
	m := map[string]*toolSpans{"describe_handle": newToolSpans("describe_handle", "")}
	for _, t := range loom.Tools {
		m[string(t)] = newToolSpans(string(t), t.Command())
	}
	return m
}()

// spans returns tool's toolSpans.
func spans(tool string) *toolSpans {
	if s, ok := spansOf[tool]; ok {
		return s
	}
	return newToolSpans(tool, loom.Tool(tool).Command())
}

// startCall starts the span of a call of tool. Off, it costs one atomic
// load, and the names below are not even looked up.
func startCall(ctx context.Context, tool string) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, noSpan
	}
	s := spans(tool)
	return telemetry.StartWith(ctx, s.call, s.callOpts...)
}

// startLoom starts the span of a tool's loom process.
func startLoom(ctx context.Context, tool loom.Tool) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, noSpan
	}
	s := spans(string(tool))
	return telemetry.StartWith(ctx, s.loom, s.loomOpts...)
}

// startMeasure starts the span of the reading and measurement of a tool's
// output.
func startMeasure(ctx context.Context, tool loom.Tool) trace.Span {
	if !telemetry.Enabled() {
		return noSpan
	}
	s := spans(string(tool))
	_, span := telemetry.StartWith(ctx, s.measure, s.measureOpts...)
	return span
}

// endLoom ends the process span with its exit code, the bytes of stdout
// read and its wall time; a process that did not end with an exit gets
// the code of its error.
func endLoom(span trace.Span, out *loom.Output, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	attrs := make([]attribute.KeyValue, 2, 3)
	attrs[0], attrs[1] = telemetry.LoomWallMs.Float64(Millis(out.Duration)), telemetry.LoomBytesRead.Int64(out.Condensed.Read)
	if err != nil {
		code := string(CodeOf(err))
		span.SetAttributes(append(attrs, telemetry.ErrorType.String(code))...)
		span.SetStatus(codes.Error, code)
		return
	}
	span.SetAttributes(append(attrs, telemetry.LoomExitCode.Int(out.ExitCode))...)
}

// endMeasure ends the measurement span with the rows measured and those
// past them.
func endMeasure(span trace.Span, rows, more int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(telemetry.MeasureRows.Int(rows), telemetry.MeasureMore.Int(more))
	span.End()
}
