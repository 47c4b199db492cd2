package handlers

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid"
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
)

// codeOf is the problem code of err: the face's own conditions, then the
// core's classification (gateway.CodeOf).
func codeOf(err error) problem.Code {
	switch {
	case errors.Is(err, errRouteNotFound):
		return agent.RouteNotFound
	case errors.Is(err, errMethodNotAllowed):
		return agent.MethodNotAllowed
	case errors.Is(err, errRequestTooLarge):
		return agent.RequestTooLarge
	case errors.Is(err, errUnsupportedMedia):
		return agent.UnsupportedMediaType
	case errors.Is(err, errRequestTimeout):
		return agent.RequestTimeout
	}
	return gateway.CodeOf(err)
}

// toProblem maps an error to the problem a client sees: the code's fixed
// text from the one table (package problem), plus the outputId, hostCode
// and input faults the error carries. It is the only place an error
// becomes a problem; unknown errors become internal_error.
func toProblem(err error) problem.Problem {
	p := problem.New(codeOf(err))
	if ie, ok := errors.AsType[*problem.InputError](err); ok {
		p = problem.Input(ie)
	}
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		p.OutputID, p.HostCode = ge.OutputID, ge.HostCode
	}
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
	p := toProblem(err)
	p.RequestID = reqid.FromContext(r.Context())
	noteProblem(r, string(p.Code))
	if p.Code == agent.InternalError && log != nil {
		log.ErrorContext(r.Context(), "unclassified error", "requestId", p.RequestID, "err", err)
	}
	if p.Status == http.StatusMethodNotAllowed {
		p.Allow = allowedMethods(r)
	}
	problem.Write(w, p)
}
