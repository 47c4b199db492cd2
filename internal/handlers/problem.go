package handlers

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
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

// inputError is invalid input found by the HTTP face itself (the
// validator, the JSON reader). Pointer is a JSON pointer or parameter
// name; it never holds the rejected value.
type inputError struct {
	Pointer string
	Choices []string
}

func (e *inputError) Error() string { return "handlers: invalid input at " + e.Pointer }

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
	if _, ok := errors.AsType[*inputError](err); ok {
		return agent.InvalidInput
	}
	return gateway.CodeOf(err)
}

// toProblem maps an error to the problem a client sees: the code's fixed
// text from the one table (package problem), plus the outputId, hostCode,
// pointer and choices the error carries. It is the only place an error
// becomes a problem; unknown errors become internal_error.
func toProblem(err error) problem.Problem {
	p := problem.New(codeOf(err))
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		p.OutputID, p.HostCode = ge.OutputID, ge.HostCode
	}
	if ie, ok := errors.AsType[*inputError](err); ok {
		p.Pointer, p.Choices = boundPointer(ie.Pointer), ie.Choices // bounded however it was built
	}
	if ie, ok := errors.AsType[*gateway.InputError](err); ok {
		p.Pointer, p.Choices = boundPointer(ie.Pointer), ie.Choices
	}
	if ie, ok := errors.AsType[*loom.InputError](err); ok {
		p.Choices = ie.Choices
		if ie.Field != "" { // "" refuses the input as a whole: no pointer
			p.Pointer = jsonPointer([]string{ie.Field})
		}
	}
	return p
}

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
