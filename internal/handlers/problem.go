package handlers

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/result"
	"github.com/loom-gateway/gateway/internal/store"
)

// problem is an RFC 9457 problem with the gateway's typed code. Its text is
// chosen per code (codes below), never taken from an error string.
type problem struct {
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	Status     int      `json:"status"`
	Detail     string   `json:"detail,omitempty"`
	Code       string   `json:"code"`
	OutputID   string   `json:"outputId,omitempty"`
	HostCode   string   `json:"hostCode,omitempty"`
	Pointer    string   `json:"pointer,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	RequestID  string   `json:"requestId,omitempty"`
	retryAfter int
}

// codeInfo is the fixed status, title and detail of one code.
type codeInfo struct {
	status int
	title  string
	detail string
}

// codes is DESIGN.md's error table plus the gateway's own codes
// (docs/ERRORS.md). Nothing else reaches a client.
var codes = map[string]codeInfo{
	"invalid_input":           {400, "Invalid input", "The request does not match what the operation takes."},
	"unauthorized":            {401, "Unauthorized", "A valid bearer token is required."},
	"run_not_found":           {404, "Run not found", "No such run."},
	"route_not_found":         {404, "Not found", "No such route."},
	"not_configured":          {404, "Tool not configured", "This tool is not offered for this run."},
	"result_not_found":        {404, "Result not found", "This run has no result yet."},
	"not_found":               {404, "Person not found", "Loom resolved no live person for the lookup."},
	"method_not_allowed":      {405, "Method not allowed", "The route does not take this method."},
	"request_timeout":         {408, "Request timeout", "The request body did not arrive in time."},
	"contested":               {409, "Person contested", "Loom resolved more than one live person for the lookup."},
	"run_exists":              {409, "Run exists", "A run with this id exists."},
	"result_exists":           {409, "Result exists", "This run already has a result."},
	"handle_limit_reached":    {409, "Handle limit reached", "The run's handles would pass its cap on handles or on their bytes."},
	"call_limit_reached":      {409, "Call limit reached", "The run's call log holds the maximum number of calls."},
	"label_limit_reached":     {409, "Label limit reached", "The run's model-context label would pass its cap on clauses."},
	"request_too_large":       {413, "Request too large", "The request body is larger than the gateway accepts."},
	"unsupported_media_type":  {415, "Unsupported media type", "The request body must be application/json."},
	"unheld_handle":           {422, "Unheld handle", "The result names a handle this run does not hold."},
	"busy":                    {429, "Busy", "The gateway or this run has as many loom calls in flight as it may; retry after Retry-After seconds."},
	"run_limit_reached":       {429, "Run limit reached", "The gateway holds the maximum number of runs."},
	"cancelled":               {499, "Cancelled", "The call was cancelled before it completed."},
	"internal_error":          {500, "Internal error", "The gateway failed; the request id identifies the failure in its log."},
	"command_failed":          {502, "Command failed", "The loom command failed."},
	"host_refused":            {502, "Host refused", "The loom host refused the request."},
	"schema_version_mismatch": {502, "Schema version mismatch", "The loom payload states a schema version the gateway does not read."},
	"malformed_payload":       {502, "Malformed payload", "The loom payload does not have the shape the command returns."},
	"ceiling_unavailable":     {503, "Ceiling unavailable", "The run's read-ceiling record cannot be read."},
	"store_unavailable":       {503, "Store unavailable", "The run store cannot be reached."},
}

// Errors the handlers raise themselves.
var (
	errUnauthorized     = errors.New("handlers: unauthorized")
	errRunNotFound      = errors.New("handlers: run not found")
	errRouteNotFound    = errors.New("handlers: route not found")
	errMethodNotAllowed = errors.New("handlers: method not allowed")
	errNotConfigured    = errors.New("handlers: tool not configured")
	errCancelled        = errors.New("handlers: cancelled")
	errRequestTooLarge  = errors.New("handlers: request too large")
	errUnsupportedMedia = errors.New("handlers: unsupported media type")
	errRequestTimeout   = errors.New("handlers: request body timed out")
	errCallLimit        = errors.New("handlers: call limit reached")
)

// inputError is invalid input found by the gateway itself (the validator,
// the JSON reader, a host field). Pointer is a JSON pointer or parameter
// name; it never holds the rejected value.
type inputError struct {
	Pointer string
	Choices []string
}

func (e *inputError) Error() string { return "handlers: invalid input at " + e.Pointer }

// callError carries the outputId of a tool call to its problem.
type callError struct {
	OutputID string
	Err      error
}

func (e *callError) Error() string { return e.Err.Error() }
func (e *callError) Unwrap() error { return e.Err }

// retryAfterSeconds is what a busy answer tells the client to wait.
const retryAfterSeconds = 1

// toProblem maps an error to the problem a client sees. It is the only
// place an error becomes a response; unknown errors become internal_error.
func toProblem(err error) problem {
	p := problem{Code: codeOf(err)}
	if ce, ok := errors.AsType[*callError](err); ok {
		p.OutputID = ce.OutputID
	}
	if ie, ok := errors.AsType[*inputError](err); ok {
		p.Pointer, p.Choices = boundPointer(ie.Pointer), ie.Choices // bounded however it was built
	}
	if ie, ok := errors.AsType[*loom.InputError](err); ok {
		p.Choices = ie.Choices
		if ie.Field != "" { // "" refuses the input as a whole: no pointer
			p.Pointer = jsonPointer([]string{ie.Field})
		}
	}
	if hr, ok := errors.AsType[*loom.HostRefusedError](err); ok && hr.HasHostCode {
		p.HostCode = hr.HostCode
	}
	if p.Code == "busy" {
		p.retryAfter = retryAfterSeconds
	}
	info := codes[p.Code]
	p.Type = "https://loom-gateway.dev/problems/" + p.Code
	p.Title, p.Status, p.Detail = info.title, info.status, info.detail
	return p
}

// codeOf is DESIGN.md's code table as an errors.Is/As switch.
func codeOf(err error) string {
	switch {
	case errors.Is(err, errUnauthorized):
		return "unauthorized"
	case errors.Is(err, errRunNotFound), errors.Is(err, store.ErrRunNotFound):
		return "run_not_found"
	case errors.Is(err, errNoResult):
		return "result_not_found"
	case errors.Is(err, errRouteNotFound):
		return "route_not_found"
	case errors.Is(err, errMethodNotAllowed):
		return "method_not_allowed"
	case errors.Is(err, errNotConfigured):
		return "not_configured"
	case errors.Is(err, errRequestTooLarge):
		return "request_too_large"
	case errors.Is(err, errUnsupportedMedia):
		return "unsupported_media_type"
	case errors.Is(err, errRequestTimeout):
		return "request_timeout"
	case errors.Is(err, store.ErrRunExists):
		return "run_exists"
	case errors.Is(err, store.ErrResultExists):
		return "result_exists"
	case errors.Is(err, store.ErrHandleLimit):
		return "handle_limit_reached"
	case errors.Is(err, errCallLimit):
		return "call_limit_reached"
	case errors.Is(err, store.ErrLabelLimit):
		return "label_limit_reached"
	case errors.Is(err, store.ErrRunLimit):
		return "run_limit_reached"
	case errors.Is(err, store.ErrStoreUnavailable):
		return "store_unavailable"
	case errors.Is(err, result.ErrUnheldHandle):
		return "unheld_handle"
	case errors.Is(err, result.ErrInvalidValue), errors.Is(err, result.ErrTooDeep):
		return "invalid_input"
	case errors.Is(err, errCancelled), errors.Is(err, loom.ErrCancelled):
		return "cancelled"
	case errors.Is(err, loom.ErrBusy):
		return "busy"
	case errors.Is(err, loom.ErrNotFound):
		return "not_found"
	case errors.Is(err, loom.ErrContested):
		return "contested"
	case errors.Is(err, loom.ErrSchemaVersion):
		return "schema_version_mismatch"
	case errors.Is(err, loom.ErrMalformedPayload):
		return "malformed_payload"
	case errors.Is(err, loom.ErrCommandFailed), errors.Is(err, loom.ErrStart),
		errors.Is(err, loom.ErrTimeout), errors.Is(err, loom.ErrStdoutLimit):
		return "command_failed"
	}
	if _, ok := errors.AsType[*loom.HostRefusedError](err); ok {
		return "host_refused"
	}
	if _, ok := errors.AsType[*loom.CeilingUnavailableError](err); ok {
		return "ceiling_unavailable"
	}
	if _, ok := errors.AsType[*loom.InputError](err); ok {
		return "invalid_input"
	}
	if _, ok := errors.AsType[*inputError](err); ok {
		return "invalid_input"
	}
	return "internal_error"
}

// writeProblem renders err as application/problem+json. Unclassified errors
// are logged with the request id; their text never reaches the client.
func writeProblem(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	p := toProblem(err)
	p.RequestID = requestID(r.Context())
	noteProblem(r, p.Code)
	if p.Code == "internal_error" && log != nil {
		log.ErrorContext(r.Context(), "unclassified error", "requestId", p.RequestID, "err", err)
	}
	body, merr := json.Marshal(p)
	if merr != nil {
		body = []byte(`{"type":"about:blank","title":"Internal error","status":500,"code":"internal_error"}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer") // RFC 9110 11.6.1: a 401 names its scheme
	}
	if p.Status == http.StatusMethodNotAllowed {
		h.Set("Allow", strings.Join(allowedMethods(r), ", ")) // RFC 9110 15.5.6: a 405 lists the route's methods
	}
	if p.Status == http.StatusRequestTimeout {
		h.Set("Connection", "close") // RFC 9110 15.5.9: the body's remains cannot be read
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
