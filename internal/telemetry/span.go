package telemetry

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the MCP and generative-AI conventions and of the
// gateway's own call outcome.
var (
	MCPMethodName      = semconv.McpMethodNameKey
	MCPProtocolVersion = semconv.McpProtocolVersionKey
	JSONRPCRequestID   = semconv.JSONRPCRequestIDKey
	GenAIToolName      = semconv.GenAIToolNameKey
	GenAIOperationName = semconv.GenAIOperationNameKey
	ErrorType          = semconv.ErrorTypeKey

	CallStatus    = attribute.Key("loom_gateway.call.status")
	CallCode      = attribute.Key("loom_gateway.call.code")
	CallHostCode  = attribute.Key("loom_gateway.call.host_code")
	CallOutputID  = attribute.Key("loom_gateway.call.output_id")
	CallAdmitted  = attribute.Key("loom_gateway.call.admitted")
	CallWithheld  = attribute.Key("loom_gateway.call.withheld")
	CallOmitted   = attribute.Key("loom_gateway.call.omitted")
	CallTruncated = attribute.Key("loom_gateway.call.truncated")
	CallArgs      = attribute.Key("loom_gateway.call.arguments")

	LoomCommand   = attribute.Key("loom.command")
	LoomExitCode  = attribute.Key("loom.exit_code")
	LoomBytesRead = attribute.Key("loom.stdout.bytes")
	LoomWallMs    = attribute.Key("loom.wall_time_ms")
	MeasureRows   = attribute.Key("loom_gateway.measure.rows")
	MeasureMore   = attribute.Key("loom_gateway.measure.more")
)

// HTTPServer returns the server-span middleware of a listener: one span
// per request, a child of the request's traceparent when it carries one,
// named "METHOD route" with the HTTP conventions' attributes (method,
// route, status, protocol version) and error.type set to the problem code
// the request was answered with (SetProblem) or, failing that, the status
// of a 5xx. route and method read the request after it was served (the
// route pattern; "OTHER" for a method outside the standard ones). Off, it
// returns next itself.
func HTTPServer(route, method func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if !Enabled() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// traceparent only: tracestate is free text the client chose.
			ctx := propagator.Extract(r.Context(), propagation.MapCarrier{"traceparent": r.Header.Get("traceparent")})
			m := method(r)
			ctx, span := tracer().Start(ctx, m, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					semconv.HTTPRequestMethodKey.String(m),
					semconv.URLScheme(scheme(r)),
					semconv.NetworkProtocolVersion(protocol(r)),
				))
			defer span.End()
			rec := &statusWriter{ResponseWriter: w}
			note := &problemNote{}
			r = r.WithContext(context.WithValue(ctx, problemKey{}, note))
			next.ServeHTTP(rec, r)
			rt := route(r)
			span.SetName(m + " " + rt)
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			span.SetAttributes(semconv.HTTPRoute(rt), semconv.HTTPResponseStatusCode(status))
			switch {
			case note.code != "":
				span.SetAttributes(ErrorType.String(note.code))
			case status >= 500:
				span.SetAttributes(ErrorType.String(strconv.Itoa(status)))
			}
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
		})
	}
}

// problemKey is the context key of a served request's *problemNote.
type problemKey struct{}

// problemNote is the problem code a request was answered with.
type problemNote struct{ code string }

// SetProblem records on the request's server span the problem code the
// request was answered with, as error.type.
func SetProblem(ctx context.Context, code string) {
	if !Enabled() || code == "" {
		return
	}
	if n, ok := ctx.Value(problemKey{}).(*problemNote); ok {
		n.code = code
	}
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func protocol(r *http.Request) string {
	switch r.ProtoMajor {
	case 2:
		return "2"
	case 3:
		return "3"
	}
	return "1.1"
}

// statusWriter records the status a handler wrote; it keeps the
// writer's Flusher and the http.ResponseController's Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
