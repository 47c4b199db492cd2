package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/reqid"
	"github.com/loom-gateway/gateway/internal/telemetry"
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
// in loom_gateway_http_requests_total. It goes right after reqid.Middleware.
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
				if d.Requests != nil {
					d.Requests.Request(listener, route, status, elapsed)
				}
				attrs := []slog.Attr{
					slog.String("listener", listener),
					slog.String("requestId", reqid.FromContext(r.Context())),
					slog.String("method", methodOf(r)),
					slog.String("route", route),
					slog.Int("status", status),
				}
				if note.code != "" {
					attrs = append(attrs, slog.String("code", note.code))
				}
				attrs = append(attrs,
					slog.Int("bytes", ww.BytesWritten()),
					slog.Float64("durationMs", gateway.Millis(elapsed)))
				telemetry.LogAttrs(r.Context(), d.logger(), requestLevel(listener, r, status), "request", attrs...)
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
