package handlers

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/store"
)

// What the request log and the audit record carry is chosen field by
// field: the route pattern (never the path or its query), the status, the
// problem code, sizes, durations and ids. Never a body, a header, a token,
// an argument value, row content, a label, or loom's output.

// requestNote is what the handlers tell the request log about a request
// they answered: the problem code, when they answered one.
type requestNote struct{ code string }

// requestNoteKey is the context key of a request's *requestNote.
type requestNoteKey struct{}

// noteProblem tells the request log which problem code r was answered
// with.
func noteProblem(r *http.Request, code string) {
	if n, ok := r.Context().Value(requestNoteKey{}).(*requestNote); ok {
		n.code = code
	}
}

// logRequests writes one "request" log record per request and counts it
// in loom_gateway_http_requests_total. It goes right after withRequestID.
func (d *Deps) logRequests(listener string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			note := &requestNote{}
			ww := chimw.NewWrapResponseWriter(w, r.ProtoMajor)
			r = r.WithContext(context.WithValue(r.Context(), requestNoteKey{}, note))
			defer func() {
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK // nothing written: net/http sends 200
				}
				route := routeOf(r)
				elapsed := time.Since(start)
				d.Metrics.request(listener, route, status, elapsed)
				attrs := []slog.Attr{
					slog.String("listener", listener),
					slog.String("requestId", requestID(r.Context())),
					slog.String("method", methodOf(r)),
					slog.String("route", route),
					slog.Int("status", status),
				}
				if note.code != "" {
					attrs = append(attrs, slog.String("code", note.code))
				}
				attrs = append(attrs,
					slog.Int("bytes", ww.BytesWritten()),
					slog.Float64("durationMs", millis(elapsed)))
				d.logger().LogAttrs(r.Context(), requestLevel(listener, r, status), "request", attrs...)
			}()
			next.ServeHTTP(ww, r)
		})
	}
}

// ConsolePollHeader marks the operator console's polling reads
// ("X-Loom-Console: poll"): each open console tab reads the host API every
// 2 s, which would otherwise be some 120 info records a minute per tab.
const ConsolePollHeader = "X-Loom-Console"

// requestLevel is the level of a request record: debug for a console
// poll that succeeded (a GET on the host listener with
// ConsolePollHeader "poll", answered 2xx or 304), info for everything
// else, errors and every other method included.
func requestLevel(listener string, r *http.Request, status int) slog.Level {
	if listener == "host" && r.Method == http.MethodGet &&
		r.Header.Get(ConsolePollHeader) == "poll" &&
		(status >= 200 && status < 300 || status == http.StatusNotModified) {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// routeOf is the chi route pattern that served r, "unmatched" when none
// did: the raw path may hold anything a client sent.
func routeOf(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" && p != "/*" {
			return p
		}
	}
	return "unmatched"
}

// methodOf is r's method when it is a standard one; a client may send any
// token as a method.
func methodOf(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return r.Method
	}
	return "OTHER"
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// audit writes the "audit" log record of one tool call and counts it in
// the metrics. It carries counts and codes only: no row, label, argument
// value, stderr or argv.
func (d *Deps) audit(ctx context.Context, c *call, rec store.Call) {
	d.Metrics.call(c, rec)
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("requestId", requestID(ctx)),
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
	attrs = append(attrs, slog.Float64("durationMs", millis(rec.Duration)))
	if c.loomTime != nil {
		attrs = append(attrs, slog.Float64("loomMs", millis(*c.loomTime)))
	}
	if c.argNames != nil {
		attrs = append(attrs, slog.Any("args", c.argNames))
	}
	d.logger().LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}

// argNames returns the sorted member names of the top-level object of a
// tool's input, never a value (--audit-arg-shape). The validator has
// refused names the tool does not declare; a name that is not a plain
// identifier is still shown only as "?".
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
