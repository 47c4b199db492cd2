package loom

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Reason is why a call failed, for the host only (the call record, the
// audit record, a metrics label): one of a closed set, so that it is a
// label of bounded cardinality. No answer to an agent ever carries it.
type Reason string

// The reasons. A call ends command_failed for the first nine,
// malformed_payload for shape and payload_bound, schema_version_mismatch
// for schema_version and cancelled for cancelled (timeout and
// stage_deadline are command_failed too).
const (
	// ReasonStartNotFound .. ReasonStartOther: the executable could not
	// be started; the OS said ENOENT, EACCES or EPERM, ENOEXEC, or
	// something else (ELOOP, ENOTDIR, E2BIG, ...).
	ReasonStartNotFound   Reason = "start_not_found"
	ReasonStartPermission Reason = "start_permission_denied"
	ReasonStartExecFormat Reason = "start_exec_format"
	ReasonStartOther      Reason = "start_other"
	// ReasonExitStatus: it exited with a status the outcome does not
	// accept.
	ReasonExitStatus Reason = "exit_status"
	// ReasonSignal: a signal ended it (not the gateway's kill).
	ReasonSignal Reason = "signal"
	// ReasonTimeout: it was still running when the command timeout
	// passed, and was killed.
	ReasonTimeout Reason = "timeout"
	// ReasonStdoutLimit: its stdout passed the cap, and it was killed.
	ReasonStdoutLimit Reason = "stdout_limit"
	// ReasonNoExitStatus: it ended, but how could not be read (its
	// namespace init was killed before it reported).
	ReasonNoExitStatus Reason = "no_exit_status"
	// ReasonStageDeadline: it had exited, and reading its output passed
	// the command timeout.
	ReasonStageDeadline Reason = "stage_deadline"
	// ReasonNotJSON: stdout is not one JSON document.
	ReasonNotJSON Reason = "not_json"
	// ReasonShape: the payload has not the command's shape.
	ReasonShape Reason = "shape"
	// ReasonPayloadBound: a piece of the payload passes what the reading
	// holds of one (Condensed.Refused).
	ReasonPayloadBound Reason = "payload_bound"
	// ReasonSchemaVersion: a search payload states another schema
	// version.
	ReasonSchemaVersion Reason = "schema_version"
	// ReasonCancelled: the client went away, the run was deleted or the
	// gateway stopped.
	ReasonCancelled Reason = "cancelled"
)

// Reasons are all the reasons, in the order above.
var Reasons = []Reason{
	ReasonStartNotFound, ReasonStartPermission, ReasonStartExecFormat, ReasonStartOther,
	ReasonExitStatus, ReasonSignal, ReasonTimeout, ReasonStdoutLimit, ReasonNoExitStatus,
	ReasonStageDeadline, ReasonNotJSON, ReasonShape, ReasonPayloadBound, ReasonSchemaVersion,
	ReasonCancelled,
}

// Failure is the reason a command failed, carried by the error Run
// returns (errors.As finds it; errors.Is still finds ErrTimeout,
// ErrStdoutLimit, ErrStart, ErrCommandFailed through Err). Detail is a
// phrase the gateway builds of what it saw (a number, an errno's text, a
// member name of the contract, a JSON kind), never text loom wrote. Its
// Error() is Err's, fixed.
type Failure struct {
	Reason Reason
	Detail string
	Err    error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// startFailure is the error of a command that could not start for err.
func startFailure(err error) error {
	f := &Failure{Reason: ReasonStartOther, Err: &StartError{Err: err}}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		f.Detail = errno.Error()
		switch errno {
		case syscall.ENOENT:
			f.Reason = ReasonStartNotFound
		case syscall.EACCES, syscall.EPERM:
			f.Reason = ReasonStartPermission
		case syscall.ENOEXEC:
			f.Reason = ReasonStartExecFormat
		}
	}
	return f
}

// relativeArgv is startFailure's error for an argv[0] that is not an
// absolute path.
func relativeArgv() error {
	return &Failure{Reason: ReasonStartOther, Detail: "the path is not absolute",
		Err: &StartError{Err: errors.New("loom: argv[0] is not an absolute path")}}
}

// TimeoutDetail is the detail of a timeout failure after d.
func TimeoutDetail(d time.Duration) string {
	return "still running after the command timeout (" + d.String() + "); killed"
}

// Explain is the failure of a call of tool that failed with err, read
// from err and from out, what the command left (its exit, its signal, its
// stdout as Condense read it; not_json names the exit status or signal
// too, when it is not 0): for an error of Run, the Failure it
// carries; for one of Decide, the payload's shape, ErrMalformedPayload
// and ErrSchemaVersion, one made here. Nil for any other error (the
// gateway's own: cancelled, stage_deadline).
func Explain(tool Tool, err error, out Output) *Failure {
	if f, ok := errors.AsType[*Failure](err); ok {
		return f
	}
	kept := &out.Condensed
	var exit *ExitError
	switch {
	case errors.As(err, &exit) && out.Signal > 0:
		return &Failure{Reason: ReasonSignal, Detail: signalText(out.Signal), Err: err}
	case errors.As(err, &exit):
		return &Failure{Reason: ReasonExitStatus, Detail: "exit status " + strconv.Itoa(exit.Code), Err: err}
	case errors.Is(err, ErrNotJSON):
		d := "stdout is not JSON at byte " + strconv.FormatInt(kept.BadAt, 10)
		if kept.Empty {
			d = "stdout is empty"
		}
		switch {
		case out.Signal > 0:
			d += "; " + signalText(out.Signal)
		case out.ExitCode != 0:
			d += "; exit status " + strconv.Itoa(out.ExitCode)
		}
		return &Failure{Reason: ReasonNotJSON, Detail: d, Err: err}
	case errors.Is(err, ErrMalformedPayload) && kept.Refused:
		return &Failure{Reason: ReasonPayloadBound, Err: err,
			Detail: "a piece of the payload passes what the gateway reads of one (a member name over 64 KiB, a number over 4 KiB, an envelope value over 1 MiB, or the names of the open objects)"}
	case errors.Is(err, ErrMalformedPayload):
		return &Failure{Reason: ReasonShape, Detail: shapeRule(tool, kept), Err: err}
	case errors.Is(err, ErrSchemaVersion):
		return &Failure{Reason: ReasonSchemaVersion, Detail: "schemaVersion is " + kindOf(kept.Facts.SchemaVersion) + ", not 1", Err: err}
	// Errors of a runner that carry no Failure (a test's).
	case errors.Is(err, ErrStart):
		return &Failure{Reason: ReasonStartOther, Err: err}
	case errors.Is(err, ErrTimeout):
		return &Failure{Reason: ReasonTimeout, Err: err}
	case errors.Is(err, ErrStdoutLimit):
		return &Failure{Reason: ReasonStdoutLimit, Err: err}
	}
	return nil
}

// kindOf names the JSON value v in the gateway's words: a number as it is
// written (at most 32 characters of digits, sign, point and exponent),
// anything else by its kind, never its text.
func kindOf(v jsontext.Value) string {
	switch v.Kind() {
	case '0':
		if len(v) <= 32 {
			return string(v)
		}
		return "a long number"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "not a JSON value"
}

// signalText is "signal N (its name)".
func signalText(sig int) string {
	return "signal " + strconv.Itoa(sig) + " (" + syscall.Signal(sig).String() + ")"
}

// shapeRule names the rule of ShapeOf(tool) that kept's payload breaks.
func shapeRule(tool Tool, kept *Condensed) string {
	shape := ShapeOf(tool)
	switch {
	case !kept.Facts.Object && shape.Array:
		return "the payload is not an array"
	case !kept.Facts.Object:
		return "the payload is not an object"
	case shape.Array:
		return "the payload is not an array"
	case shape.List != "" && strings.HasPrefix(string(kept.Payload), `{"`+shape.List+`":`):
		return shape.List + " is not an array"
	case shape.List != "":
		return shape.List + " is missing"
	}
	return "the payload has not the command's shape"
}

// MaxStderrTail is how many of the last bytes of a command's stderr Run
// keeps (Output.Stderr).
const MaxStderrTail = 2048

// tail keeps the last MaxStderrTail bytes written to it.
type tail struct {
	buf []byte // up to 2*MaxStderrTail; the tail is its last MaxStderrTail
	cut bool   // bytes before the tail were dropped
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 { // most commands write nothing: no buffer for them
		return 0, nil
	}
	if len(p) > MaxStderrTail {
		t.cut = true
		p = p[len(p)-MaxStderrTail:]
		t.buf = t.buf[:0]
	}
	if len(t.buf)+len(p) > 2*MaxStderrTail {
		keep := t.buf[len(t.buf)-(MaxStderrTail-len(p)):]
		t.buf = append(t.buf[:0], keep...)
		t.cut = true
	}
	if t.buf == nil {
		t.buf = make([]byte, 0, 2*MaxStderrTail)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// bytes returns the tail and whether bytes before it were dropped.
func (t *tail) bytes() ([]byte, bool) {
	if len(t.buf) == 0 {
		return nil, false
	}
	if len(t.buf) > MaxStderrTail {
		return t.buf[len(t.buf)-MaxStderrTail:], true
	}
	return t.buf, t.cut
}

// StderrText is out's stderr tail as text for the host, at most
// MaxStderrTail bytes after a leading "…": "" when loom wrote nothing; the
// "…" when what it wrote was longer; a rune cut by the tail's start
// dropped; invalid UTF-8, and every control character but
// newline and tab (C0, DEL, C1) and the bidirectional overrides and
// isolates, each replaced with U+FFFD, so the text can neither forge a
// log line nor reorder what a console shows. Nothing else is redacted:
// it is the host's own loom writing to the host.
func StderrText(out Output) string {
	b := out.Stderr
	if len(b) == 0 {
		return ""
	}
	var s strings.Builder
	s.Grow(len(b) + 3)
	if out.StderrCut {
		s.WriteString("…")
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == '\n' || r == '\t':
		case r == utf8.RuneError, r < 0x20, r >= 0x7f && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			r = utf8.RuneError
		}
		s.WriteRune(r)
	}
	text := s.String()
	if len(text) > MaxStderrTail+len("…") {
		// Replacements grew it: keep its last MaxStderrTail bytes.
		cut := len(text) - MaxStderrTail
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut++
		}
		text = "…" + text[cut:]
	}
	return text
}
