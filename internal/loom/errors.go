package loom

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors callers branch on with errors.Is. Every message is fixed text: no
// error of this package quotes stderr, a path, an OS error string, argv or
// payload text in its Error() (causes kept for logs are reachable only
// through Unwrap).
var (
	// ErrBusy: Run found no free process slot within Options.QueueWait.
	ErrBusy = errors.New("loom: too many loom commands in flight")
	// ErrCancelled: the caller's context was done before or while the
	// command ran; a started process group was killed.
	ErrCancelled = errors.New("loom: cancelled")

	// ErrCommandFailed is the command_failed family. ErrTimeout,
	// ErrStdoutLimit, ErrStart, ErrNotJSON and *ExitError all match it
	// with errors.Is, so a caller needs one branch for command_failed.
	ErrCommandFailed = errors.New("loom: command failed")
	// ErrTimeout: the per-call timeout expired; the process group was killed.
	ErrTimeout error = &failure{"loom: command timed out"}
	// ErrStdoutLimit: stdout exceeded Options.MaxStdout; the process group
	// was killed.
	ErrStdoutLimit error = &failure{"loom: command output exceeded the limit"}
	// ErrStart: the process could not be started (missing executable,
	// permission, relative path, ...). Returned as a *StartError.
	ErrStart error = &failure{"loom: command could not start"}
	// ErrNotJSON: stdout was not exactly one JSON document, and the person
	// rules of SEMANTICS (b) step 2 did not apply.
	ErrNotJSON error = &failure{"loom: command printed no JSON document"}

	// ErrNotFound: a person lookup resolved no live person (exit 1, no JSON).
	ErrNotFound = errors.New("loom: no person matches the lookup")
	// ErrContested: a person lookup resolved more than one person (exit 3,
	// no JSON).
	ErrContested = errors.New("loom: more than one person matches the lookup")
	// ErrSchemaVersion: a search payload states a schemaVersion other than 1.
	ErrSchemaVersion = errors.New("loom: search payload states another schema version")
	// ErrMalformedPayload: the payload has not the shape its command returns.
	ErrMalformedPayload = errors.New("loom: payload has not the command's shape")
	// ErrUnknownTool: a Tool value that is not one of the eight.
	ErrUnknownTool = errors.New("loom: unknown tool")
)

// failure is a command_failed condition with its own fixed message.
type failure struct{ msg string }

func (f *failure) Error() string        { return f.msg }
func (f *failure) Is(target error) bool { return target == ErrCommandFailed }

// StartError reports that the process could not be started. Its message is
// fixed; Err, the OS or exec error, may name the path and is for logs only.
// It matches ErrStart and ErrCommandFailed.
type StartError struct{ Err error }

func (e *StartError) Error() string { return ErrStart.Error() }
func (e *StartError) Unwrap() error { return e.Err }
func (e *StartError) Is(target error) bool {
	return target == ErrStart || target == ErrCommandFailed
}

// ExitError reports, from Decide, a command that exited with a nonzero
// code (or died of a signal: Code -1) and was not the profile fallback. It
// matches ErrCommandFailed. Run itself never returns it: an exit is an
// Output.
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	return "loom: command exited with code " + strconv.Itoa(e.Code)
}
func (e *ExitError) Is(target error) bool { return target == ErrCommandFailed }

// HostRefusedError reports a payload object whose ok member is exactly
// false. HostCode is the payload's code when that is a string
// (HasHostCode); it is host text, passed on as hostCode and nowhere else.
type HostRefusedError struct {
	HostCode    string
	HasHostCode bool
}

func (e *HostRefusedError) Error() string { return "loom: host refused the command" }

// InputError is an argument-builder refusal (invalid_input). Field names the
// offending input field ("" when the input as a whole is refused); Reason is
// a fixed phrase; Choices lists an enum's values in declared order. Nothing
// of the rejected value is kept.
type InputError struct {
	Field   string
	Reason  string
	Choices []string
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("loom: invalid input: ")
	if e.Field != "" {
		b.WriteString(strconv.Quote(e.Field))
		b.WriteByte(' ')
	}
	b.WriteString(e.Reason)
	if len(e.Choices) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(e.Choices, ", "))
	}
	return b.String()
}

// ConfigError is a configuration load failure. Key is the offending key as a
// path ("transport.queuePath", "facets[2]"), "" for the file as a whole;
// Reason is a fixed phrase, and Detail, when set, a fixed phrase saying
// more ("it does not exist" after "cannot read the file"). Line and Column
// (1-based, the column in bytes) are where the file stops being JSON, 0
// otherwise. Err, when set, is the underlying read or parse error, kept
// for logs; the message does not include it. The message never holds the
// file's path: the caller, which knows it, adds it.
type ConfigError struct {
	Key          string
	Reason       string
	Detail       string
	Line, Column int
	Err          error
}

func (e *ConfigError) Error() string {
	msg := "loom config: "
	if e.Line > 0 {
		msg += fmt.Sprintf("line %d, column %d: ", e.Line, e.Column)
	}
	if e.Key != "" {
		msg += quoteKey(e.Key) + ": "
	}
	msg += e.Reason
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *ConfigError) Unwrap() error { return e.Err }

// quoteKey returns k as is when it is plain printable ASCII, else quoted.
func quoteKey(k string) string {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.Quote(k)
		}
	}
	return k
}

// CeilingUnavailableError reports a configured read-ceiling record that
// cannot be used (ceiling_unavailable). Reason is one of a fixed set of
// phrases; it never holds the path or OS error text.
type CeilingUnavailableError struct{ Reason string }

func (e *CeilingUnavailableError) Error() string {
	return "loom: read-ceiling record unavailable: " + e.Reason
}
