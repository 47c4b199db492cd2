package gateway

import (
	"errors"
	"strings"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/result"
	"github.com/loom-gateway/gateway/internal/store"
)

// Conditions the core raises itself.
var (
	// ErrUnauthorized: no token, or one that opens no run (401).
	ErrUnauthorized = errors.New("gateway: unauthorized")
	// ErrRunNotFound: a valid token of another run (404).
	ErrRunNotFound = errors.New("gateway: run not found")
	// ErrNotConfigured: the gateway or the run does not offer the tool.
	ErrNotConfigured = errors.New("gateway: tool not configured")
	// ErrCancelled: the client went away, or the run was deleted,
	// before the call completed. It is also the cancel cause of the
	// calls of a deleted run: the one cancellation cause of the core.
	ErrCancelled = errors.New("gateway: cancelled")
	// ErrCallLimit: the run's call log is full (call_limit_reached).
	ErrCallLimit = errors.New("gateway: call limit reached")
	// ErrNoResult: the run has no result yet (result_not_found).
	ErrNoResult = errors.New("gateway: no result")
)

// Error is an error the core has classified: its problem code, the
// outputId of the call it ended (when the call took one), and the host's
// code for host_refused. Err is the cause, for the log; its text never
// reaches a client.
type Error struct {
	Code     problem.Code
	OutputID string
	HostCode string
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// builderFault is the input fault of an argument-builder refusal: the
// field (no pointer when the input is refused as a whole), the reason in
// the contract's vocabulary, and the builder's own words as the detail.
func builderFault(e *loom.InputError) *problem.InputError {
	ptr := ""
	if e.Field != "" {
		ptr = problem.Pointer(e.Field)
	}
	subject := "The input"
	if ptr != "" && len(ptr) == len(e.Field)+1 {
		subject = "The member " + ptr
	}
	reason := e.Reason
	if reason == loom.ReasonWhere { // said without the value sent
		reason = "is only accepted with read activity"
	}
	detail := subject + " " + reason
	if len(e.Choices) > 0 {
		detail += ": " + strings.Join(e.Choices, ", ")
	}
	return problem.Invalid(ptr, builderReasons[e.Reason], detail+".", e.Choices...)
}

// builderReasons are the builder's reasons in the contract's vocabulary.
var builderReasons = map[string]problem.Reason{
	loom.ReasonNotObject:   problem.WrongType,
	loom.ReasonUnknown:     problem.UnknownField,
	loom.ReasonDuplicate:   problem.DuplicateKey,
	loom.ReasonNull:        problem.NullNotAllowed,
	loom.ReasonRequired:    problem.Required,
	loom.ReasonString:      problem.WrongType,
	loom.ReasonLength:      problem.TooLong,
	loom.ReasonControl:     problem.ControlCharacter,
	loom.ReasonDash:        problem.LeadingDash,
	loom.ReasonInteger:     problem.WrongType,
	loom.ReasonBoolean:     problem.WrongType,
	loom.ReasonEnum:        problem.NotInChoices,
	loom.ReasonDate:        problem.NotADate,
	loom.ReasonQueryPerson: problem.OneOfRequired,
	loom.ReasonLookup:      problem.NotALookup,
	loom.ReasonAllDates:    problem.ConflictingFields,
	loom.ReasonWhere:       problem.ConflictingFields,
}

// Classify wraps err as an *Error with its code and, for a call, its
// outputId. An error already classified keeps its code.
func Classify(err error, outputID string) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		if e.OutputID == "" && outputID != "" {
			c := *e
			c.OutputID = outputID
			return &c
		}
		return e
	}
	e := &Error{Code: CodeOf(err), OutputID: outputID, Err: err}
	if hr, ok := errors.AsType[*loom.HostRefusedError](err); ok && hr.HasHostCode {
		e.HostCode = hr.HostCode
	}
	return e
}

// CodeOf is the problem code of err: the code of an *Error, or the
// contract's code of a condition of the core, loom, the store or the
// result writer; internal_error for anything else.
func CodeOf(err error) problem.Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	switch {
	case errors.Is(err, ErrUnauthorized):
		return problem.Unauthorized
	case errors.Is(err, ErrRunNotFound), errors.Is(err, store.ErrRunNotFound):
		return problem.RunNotFound
	case errors.Is(err, ErrNoResult), errors.Is(err, store.ErrNoResult):
		return problem.ResultNotFound
	case errors.Is(err, ErrNotConfigured):
		return problem.NotConfigured
	case errors.Is(err, store.ErrRunExists):
		return problem.RunExists
	case errors.Is(err, store.ErrResultExists):
		return problem.ResultExists
	case errors.Is(err, store.ErrHandleLimit):
		return problem.HandleLimitReached
	case errors.Is(err, ErrCallLimit):
		return problem.CallLimitReached
	case errors.Is(err, store.ErrLabelLimit):
		return problem.LabelLimitReached
	case errors.Is(err, store.ErrRunLimit):
		return problem.RunLimitReached
	case errors.Is(err, store.ErrStoreUnavailable):
		return problem.StoreUnavailable
	case errors.Is(err, result.ErrUnheldHandle):
		return problem.UnheldHandle
	case errors.Is(err, result.ErrInvalidValue), errors.Is(err, result.ErrTooDeep):
		return problem.InvalidInput
	case errors.Is(err, ErrCancelled), errors.Is(err, loom.ErrCancelled):
		return problem.Cancelled
	case errors.Is(err, loom.ErrBusy):
		return problem.Busy
	case errors.Is(err, store.ErrRateLimited):
		return problem.RateLimited
	case errors.Is(err, loom.ErrNotFound):
		return problem.NotFound
	case errors.Is(err, loom.ErrContested):
		return problem.Contested
	case errors.Is(err, loom.ErrSchemaVersion):
		return problem.SchemaVersionMismatch
	case errors.Is(err, loom.ErrMalformedPayload):
		return problem.MalformedPayload
	case errors.Is(err, loom.ErrCommandFailed), errors.Is(err, loom.ErrStart),
		errors.Is(err, loom.ErrTimeout), errors.Is(err, loom.ErrStdoutLimit):
		return problem.CommandFailed
	}
	if _, ok := errors.AsType[*loom.HostRefusedError](err); ok {
		return problem.HostRefused
	}
	if _, ok := errors.AsType[*loom.CeilingUnavailableError](err); ok {
		return problem.CeilingUnavailable
	}
	if _, ok := errors.AsType[*loom.InputError](err); ok {
		return problem.InvalidInput
	}
	if _, ok := errors.AsType[*problem.InputError](err); ok {
		return problem.InvalidInput
	}
	return problem.InternalError
}

// Problem is the problem a client sees for an error of the core, on any
// face: the code's fixed text from the one table, with the outputId,
// hostCode and input faults the error carries. Unknown errors are
// internal_error.
func Problem(err error) problem.Problem {
	p := problem.New(CodeOf(err))
	if ie, ok := errors.AsType[*problem.InputError](err); ok {
		p = problem.Input(ie)
	}
	if ge, ok := errors.AsType[*Error](err); ok {
		p.OutputID, p.HostCode = ge.OutputID, ge.HostCode
	}
	if rl, ok := errors.AsType[*store.RateLimitError](err); ok {
		p.RetryAfter = RetryAfterSeconds(rl.RetryAfter)
	}
	return p
}

// RetryAfterSeconds is d as a Retry-After: whole seconds, rounded up, at
// least one.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
