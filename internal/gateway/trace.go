package gateway

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
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
	attrs := []attribute.KeyValue{
		telemetry.CallStatus.String(rec.Status),
		telemetry.CallAdmitted.Int(rec.Admitted),
		telemetry.CallWithheld.Int(rec.Withheld),
		telemetry.CallOmitted.Int(rec.Omitted),
		telemetry.CallTruncated.Bool(rec.Truncated),
	}
	if c.outputID != "" {
		attrs = append(attrs, telemetry.CallOutputID.String(c.outputID))
	}
	if rec.HostCode != "" {
		attrs = append(attrs, telemetry.CallHostCode.String(rec.HostCode))
	}
	if c.argNames != nil {
		attrs = append(attrs, telemetry.CallArgs.StringSlice(c.argNames))
	}
	telemetry.Set(ctx, attrs...)
	if rec.Code != "" {
		telemetry.Set(ctx, telemetry.CallCode.String(rec.Code))
		telemetry.Fail(ctx, rec.Code)
	}
}

// noSpan is the span that records nothing, for when tracing is off.
var noSpan = trace.SpanFromContext(context.Background())

// startCall starts the span of a call of tool. Off, it costs one atomic
// load, and the names below are not even built.
func startCall(ctx context.Context, tool string) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, noSpan
	}
	return telemetry.Start(ctx, "call "+tool, telemetry.GenAIToolName.String(tool))
}

// startLoom starts the span of a tool's loom process.
func startLoom(ctx context.Context, tool loom.Tool) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, noSpan
	}
	return telemetry.StartKind(ctx, "loom "+tool.Kind(), trace.SpanKindClient, telemetry.LoomCommand.String(tool.Kind()))
}

// startMeasure starts the span of the reading and measurement of a tool's
// output.
func startMeasure(ctx context.Context, tool loom.Tool) trace.Span {
	if !telemetry.Enabled() {
		return noSpan
	}
	_, span := telemetry.Start(ctx, "measure "+tool.Kind())
	return span
}

// endLoom ends the process span with its exit code, the bytes of stdout
// read and its wall time; a process that did not end with an exit gets
// the code of its error.
func endLoom(span trace.Span, out loom.Output, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	read := int64(len(out.Stdout))
	if out.Condensed != nil {
		read = out.Condensed.Read
	}
	span.SetAttributes(telemetry.LoomWallMs.Float64(Millis(out.Duration)), telemetry.LoomBytesRead.Int64(read))
	if err != nil {
		telemetry.FailSpan(span, string(CodeOf(err)))
		return
	}
	span.SetAttributes(telemetry.LoomExitCode.Int(out.ExitCode))
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
