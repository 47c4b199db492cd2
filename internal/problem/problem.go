// Package problem is the gateway's one error table and its one problem
// writer: every typed code of the contract with its HTTP status, title and
// detail, and the RFC 9457 body every face (the agent and host listeners,
// the console's proxy, MCP) answers with. A problem's text comes from this
// table, never from an error string.
package problem

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Info is the fixed status, title and detail of one code, and when it
// is answered (for the documentation only: docs/ERRORS.md is generated
// from this table).
type Info struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	When   string `json:"-"`
}

// Entry is one row of the table.
type Entry struct {
	Code Code
	Info
}

// entries are the contract's code enum with each code's status and text,
// in the order the documentation lists them. TestTableIsTheContract holds
// them to api/openapi.yaml.
var entries = []Entry{
	{InvalidInput, Info{400, "Invalid input", "The request does not match what the operation takes.", "the contract or the argument builder refuses the input (or a run id `.` or `..`); no process starts"}},
	{Unauthorized, Info{401, "Unauthorized", "A valid bearer token is required.", "no run token, or one that opens no run; wrong host token"}},
	{OriginNotAllowed, Info{403, "Origin not allowed", "This origin may not call the agent listener.", "a request to the agent listener (either face) with a browser `Origin` that `--mcp-allow-origin` does not name"}},
	{RunNotFound, Info{404, "Run not found", "No such run.", "another run's token, or an unknown run on the host API"}},
	{RouteNotFound, Info{404, "Not found", "No such route.", "no such route"}},
	{NotConfigured, Info{404, "Tool not configured", "This tool is not offered for this run.", "the tool is not offered (no config, `--allow-tool`, or the run's `tools`)"}},
	{ResultNotFound, Info{404, "Result not found", "This run has no result yet.", "the run has no result yet"}},
	{NotFound, Info{404, "Person not found", "Loom resolved no live person for the lookup.", "`loom people` (or search by `person`) resolved no live person"}},
	{MethodNotAllowed, Info{405, "Method not allowed", "The route does not take this method.", "a known path, a method it does not take (with `Allow`)"}},
	{RequestTimeout, Info{408, "Request timeout", "The request body did not arrive in time.", "the body did not arrive within `--read-timeout` (with `Connection: close`)"}},
	{Contested, Info{409, "Person contested", "Loom resolved more than one live person for the lookup.", "more than one live person"}},
	{RunExists, Info{409, "Run exists", "A run with this id exists.", "a run with that id exists"}},
	{ResultExists, Info{409, "Result exists", "This run already has a result.", "the run already has a result"}},
	{HandleLimitReached, Info{409, "Handle limit reached", "The run's handles would pass its cap on handles or on their bytes.", "the call's new handles would pass `--max-handles-per-run` handles or `--max-handle-bytes-per-run` bytes; nothing of the call is minted"}},
	{CallLimitReached, Info{409, "Call limit reached", "The run's call log holds the maximum number of calls.", "the run's call log holds `--max-calls-per-run` calls; no `outputId`, no process, nothing in the call log; it has an `audit` record (without `outputId`) and counts in `loom_gateway_tool_calls_total`"}},
	{LabelLimitReached, Info{409, "Label limit reached", "The run's model-context label would pass its cap on clauses.", "the run's model-context label would hold more than `--max-label-clauses` clauses: a tool call (with its `outputId`; nothing minted, no row answered, the label unchanged), an observation, or a new run's starting label"}},
	{RunEnded, Info{410, "Run ended", "This run has ended (deleted or expired); its token opens nothing any more, and retrying will not help.", "the token of a run that was deleted or has expired, on that run's path (or outside any run's), until the run's lifetime again (at least 10 minutes) after it would have expired; on MCP, a tool result with `isError` or a JSON-RPC error carrying this text"}},
	{RequestTooLarge, Info{413, "Request too large", "The request body is larger than the gateway accepts.", "body over `--max-request-bytes`"}},
	{UnsupportedMediaType, Info{415, "Unsupported media type", "The request body must be application/json.", "a `Content-Type` other than `application/json` (or JSON in a charset other than UTF-8), checked before the body, or a body without one"}},
	{HostNotAllowed, Info{421, "Host not allowed", "This gateway does not answer for the host the request names.", "a `Host` that `--allowed-hosts` does not name (without the flag, every host is answered)"}},
	{UnheldHandle, Info{422, "Unheld handle", "The result names a handle this run does not hold.", "the result names a token the run does not hold"}},
	{Busy, Info{429, "Busy", "The gateway or this run has as many loom calls in flight as it may; retry after Retry-After seconds.", "no loom process slot within `--busy-wait`, or the run already has `--max-concurrent-per-run` calls in flight (with `Retry-After`)"}},
	{RateLimited, Info{429, "Rate limited", "This run calls faster than the gateway allows; retry after Retry-After seconds.", "the run has spent its request budget: it has sent requests (tool calls and every other request an agent sends: catalog reads, result writes, MCP pings and the rest) faster than `--run-rate` a second beyond a burst of `--run-burst`, across every replica on one store; no `outputId`, no process, nothing in the call log; a refused tool call has an `audit` record (without `outputId`) and counts in `loom_gateway_tool_calls_total` (with `Retry-After`, and `retryAfter` in the body)"}},
	{RunLimitReached, Info{429, "Run limit reached", "The gateway holds the maximum number of runs.", "`--max-runs` live runs"}},
	{Cancelled, Info{499, "Cancelled", "The call was cancelled before it completed.", "the client went away, or the run was deleted, mid-call; the call record's `failure` says which (`cancelled`)"}},
	{InternalError, Info{500, "Internal error", "The gateway failed; the request id identifies the failure in its log.", "a gateway fault; the request id finds it in the log"}},
	{CommandFailed, Info{502, "Command failed", "The loom command failed.", "loom could not start, timed out, overflowed stdout, exited non-zero or printed no JSON; the call record's `failure` says which, for the host only (docs/operators.md, Why a call failed)"}},
	{HostRefused, Info{502, "Host refused", "The loom host refused the request.", "loom answered `ok: false` (its `code` as `hostCode`)"}},
	{SchemaVersionMismatch, Info{502, "Schema version mismatch", "The loom payload states a schema version the gateway does not read.", "a search payload of another schema version; the call record's `failure` says which"}},
	{MalformedPayload, Info{502, "Malformed payload", "The loom payload does not have the shape the command returns.", "a payload without the command's shape, or one with a member name over 64 KiB or a number over 4 KiB, more than 65,536 members (or 1 MiB of names) in the objects open at one point, or an envelope value over 1 MiB; the call record's `failure` says which rule (`shape`, `payload_bound`)"}},
	{CeilingUnavailable, Info{503, "Ceiling unavailable", "The run's read-ceiling record cannot be read.", "the read-ceiling record cannot be read or names other facets"}},
	{StoreUnavailable, Info{503, "Store unavailable", "The run store cannot be reached.", "the run store cannot be reached"}},
}

// table is entries by code.
var table = func() map[Code]Info {
	t := make(map[Code]Info, len(entries))
	for _, e := range entries {
		t[e.Code] = e.Info
	}
	return t
}()

// Lookup returns the fixed status and text of code; an unknown code is
// internal_error's.
func Lookup(code Code) Info {
	if info, ok := table[code]; ok {
		return info
	}
	return table[InternalError]
}

// Table returns the table's rows in documentation order.
func Table() []Entry { return slices.Clone(entries) }

// Codes returns every code of the table, sorted.
func Codes() []Code {
	codes := make([]Code, 0, len(table))
	for c := range table {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// RetryAfterSeconds is what a busy answer tells the client to wait.
const RetryAfterSeconds = 1

// TypeBase prefixes a problem's type URI; the code completes it.
const TypeBase = "https://loom-gateway.dev/problems/"

// Problem is an RFC 9457 problem with the gateway's typed code.
type Problem struct {
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Status    int      `json:"status"`
	Detail    string   `json:"detail,omitempty"`
	Code      Code     `json:"code"`
	OutputID  string   `json:"outputId,omitempty"`
	HostCode  string   `json:"hostCode,omitempty"`
	Pointer   string   `json:"pointer,omitempty"`
	Choices   []string `json:"choices,omitempty"`
	Errors    []Fault  `json:"errors,omitempty"`
	RequestID string   `json:"requestId,omitempty"`

	// RetryAfter, when positive, is sent as Retry-After (busy,
	// rate_limited) and as retryAfter in the body, which is all an MCP
	// client sees.
	RetryAfter int `json:"retryAfter,omitempty"`
	// Allow, for a 405, lists the route's methods (the Allow header).
	Allow []string `json:"-"`
}

// New is the problem of code with its fixed text.
func New(code Code) Problem {
	info := Lookup(code)
	p := Problem{Type: TypeBase + string(code), Title: info.Title, Status: info.Status, Detail: info.Detail, Code: code}
	if code == Busy {
		p.RetryAfter = RetryAfterSeconds
	}
	return p
}

// Custom is a problem whose code is not the contract's (the console's own
// agent_unreachable): its status and text are given.
func Custom(code string, info Info) Problem {
	return Problem{Type: TypeBase + code, Title: info.Title, Status: info.Status, Detail: info.Detail, Code: Code(code)}
}

// internalBody is written when a problem cannot be marshalled.
const internalBody = `{"type":"about:blank","title":"Internal error","status":500,"code":"internal_error"}`

// JSON is the problem's body.
func (p Problem) JSON() []byte {
	body, err := json.Marshal(p)
	if err != nil {
		return []byte(internalBody)
	}
	return body
}

// Fault is one fault of a refused input: where (a JSON pointer, or a
// parameter name) and why, never the value sent.
type Fault struct {
	Pointer string   `json:"pointer"`
	Reason  Reason   `json:"reason"`
	Choices []string `json:"choices,omitempty"`
}

// InputError is input refused by any face or the core (invalid_input):
// the faults found, the first first, and Detail, the first in words. An
// InputError without faults refuses the input as a whole with the code's
// fixed text.
type InputError struct {
	Faults []Fault
	Detail string
}

func (e *InputError) Error() string {
	if len(e.Faults) == 0 {
		return "invalid input"
	}
	return "invalid input at " + strconv.Quote(e.Faults[0].Pointer) + ": " + string(e.Faults[0].Reason)
}

// Invalid is the InputError of one fault.
func Invalid(pointer string, reason Reason, detail string, choices ...string) *InputError {
	return &InputError{Faults: []Fault{{Pointer: pointer, Reason: reason, Choices: choices}}, Detail: detail}
}

// Bounds of the faults a problem names.
const (
	maxFaults            = 8
	maxFaultPointerBytes = 1024
)

// Input is the invalid_input problem of e: its faults (each pointer
// bounded), the first one's pointer and choices, and its detail.
func Input(e *InputError) Problem {
	p := New(InvalidInput)
	if e == nil || len(e.Faults) == 0 {
		return p
	}
	// However many faults were found, the problem names at most
	// maxFaults of them, their pointers at most maxFaultPointerBytes
	// together: no problem is large because of what was sent.
	n := 0
	for _, f := range e.Faults {
		f.Pointer = BoundPointer(f.Pointer)
		n += len(f.Pointer)
		if len(p.Errors) == maxFaults || len(p.Errors) > 0 && n > maxFaultPointerBytes {
			break
		}
		p.Errors = append(p.Errors, f)
	}
	p.Pointer = p.Errors[0].Pointer
	if p.Errors[0].Reason != UnknownField { // choices of the problem are a member's values
		p.Choices = p.Errors[0].Choices
	}
	if e.Detail != "" {
		p.Detail = e.Detail
	}
	return p
}
