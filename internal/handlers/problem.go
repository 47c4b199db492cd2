package handlers

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/problem/problemhttp"
	"github.com/loom-gateway/gateway/internal/reqid"
	"github.com/loom-gateway/gateway/internal/telemetry"
)

// Conditions of the core the handlers raise too.
var (
	errUnauthorized = gateway.ErrUnauthorized
	errRunNotFound  = gateway.ErrRunNotFound
	errCancelled    = gateway.ErrCancelled
)

// Errors only the HTTP face raises.
var (
	errRouteNotFound    = errors.New("handlers: route not found")
	errMethodNotAllowed = errors.New("handlers: method not allowed")
	errRequestTooLarge  = errors.New("handlers: request too large")
	errUnsupportedMedia = errors.New("handlers: unsupported media type")
	errRequestTimeout   = errors.New("handlers: request body timed out")
	errHostNotAllowed   = errors.New("handlers: host not allowed")
	errOriginNotAllowed = errors.New("handlers: origin not allowed")
)

// faceCode is the code of a condition only the HTTP face raises.
func faceCode(err error) (problem.Code, bool) {
	switch {
	case errors.Is(err, errRouteNotFound):
		return problem.RouteNotFound, true
	case errors.Is(err, errMethodNotAllowed):
		return problem.MethodNotAllowed, true
	case errors.Is(err, errRequestTooLarge):
		return problem.RequestTooLarge, true
	case errors.Is(err, errUnsupportedMedia):
		return problem.UnsupportedMediaType, true
	case errors.Is(err, errRequestTimeout):
		return problem.RequestTimeout, true
	case errors.Is(err, errHostNotAllowed):
		return problem.HostNotAllowed, true
	case errors.Is(err, errOriginNotAllowed):
		return problem.OriginNotAllowed, true
	}
	return "", false
}

// toProblem maps an error to the problem a client sees: the face's own
// conditions, then the core's (gateway.Problem: the fixed text from the
// one table, the outputId, hostCode and input faults the error carries).
// It is the only place an error becomes a problem on this face; unknown
// errors become internal_error.
func toProblem(err error) problem.Problem {
	code, ok := faceCode(err)
	if !ok {
		return gateway.Problem(err)
	}
	p := problem.New(code)
	if re, ok := errors.AsType[*routeError](err); ok {
		p.Choices = re.choices
	}
	return p
}

// routeError is route_not_found on a run's path: choices are the tools
// the run may call.
type routeError struct{ choices []string }

func (e *routeError) Error() string { return errRouteNotFound.Error() }
func (e *routeError) Unwrap() error { return errRouteNotFound }

// writeProblem renders err as application/problem+json. Unclassified errors
// are logged with the request id; their text never reaches the client.
func writeProblem(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	pending, claimed := claimFrom(r.Context())
	if claimed {
		err = pending.settle(r.Context(), err)
	}
	p := toProblem(err)
	if claimed && p.Code == problem.Unauthorized {
		w.Header().Set("WWW-Authenticate", invalidToken)
	}
	p.RequestID = reqid.FromContext(r.Context())
	noteProblem(r, string(p.Code))
	telemetry.SetProblem(r.Context(), string(p.Code))
	if p.Code == problem.InternalError && log != nil {
		log.ErrorContext(r.Context(), "unclassified error", "requestId", p.RequestID, "err", err)
	}
	if p.Status == http.StatusMethodNotAllowed {
		p.Allow = allowedMethods(r)
	}
	problemhttp.Write(w, p)
}
