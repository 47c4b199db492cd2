// Package problem is the gateway's one error table and its one problem
// writer: every typed code of the contract with its HTTP status, title and
// detail, and the RFC 9457 body every face (the agent and host listeners,
// the console's proxy, MCP) answers with. A problem's text comes from this
// table, never from an error string.
package problem

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-gateway/gateway/api/agent"
)

// Code is a problem code of the contract (the generated enum).
type Code = agent.ProblemCode

// Info is the fixed status, title and detail of one code.
type Info struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// table is the contract's code enum with each code's status and text.
// TestTableIsTheContract holds it to api/openapi.yaml.
var table = map[Code]Info{
	agent.InvalidInput:          {400, "Invalid input", "The request does not match what the operation takes."},
	agent.Unauthorized:          {401, "Unauthorized", "A valid bearer token is required."},
	agent.RunNotFound:           {404, "Run not found", "No such run."},
	agent.RouteNotFound:         {404, "Not found", "No such route."},
	agent.NotConfigured:         {404, "Tool not configured", "This tool is not offered for this run."},
	agent.ResultNotFound:        {404, "Result not found", "This run has no result yet."},
	agent.NotFound:              {404, "Person not found", "Loom resolved no live person for the lookup."},
	agent.MethodNotAllowed:      {405, "Method not allowed", "The route does not take this method."},
	agent.RequestTimeout:        {408, "Request timeout", "The request body did not arrive in time."},
	agent.Contested:             {409, "Person contested", "Loom resolved more than one live person for the lookup."},
	agent.RunExists:             {409, "Run exists", "A run with this id exists."},
	agent.ResultExists:          {409, "Result exists", "This run already has a result."},
	agent.HandleLimitReached:    {409, "Handle limit reached", "The run's handles would pass its cap on handles or on their bytes."},
	agent.CallLimitReached:      {409, "Call limit reached", "The run's call log holds the maximum number of calls."},
	agent.LabelLimitReached:     {409, "Label limit reached", "The run's model-context label would pass its cap on clauses."},
	agent.RequestTooLarge:       {413, "Request too large", "The request body is larger than the gateway accepts."},
	agent.UnsupportedMediaType:  {415, "Unsupported media type", "The request body must be application/json."},
	agent.UnheldHandle:          {422, "Unheld handle", "The result names a handle this run does not hold."},
	agent.Busy:                  {429, "Busy", "The gateway or this run has as many loom calls in flight as it may; retry after Retry-After seconds."},
	agent.RunLimitReached:       {429, "Run limit reached", "The gateway holds the maximum number of runs."},
	agent.Cancelled:             {499, "Cancelled", "The call was cancelled before it completed."},
	agent.InternalError:         {500, "Internal error", "The gateway failed; the request id identifies the failure in its log."},
	agent.CommandFailed:         {502, "Command failed", "The loom command failed."},
	agent.HostRefused:           {502, "Host refused", "The loom host refused the request."},
	agent.SchemaVersionMismatch: {502, "Schema version mismatch", "The loom payload states a schema version the gateway does not read."},
	agent.MalformedPayload:      {502, "Malformed payload", "The loom payload does not have the shape the command returns."},
	agent.CeilingUnavailable:    {503, "Ceiling unavailable", "The run's read-ceiling record cannot be read."},
	agent.StoreUnavailable:      {503, "Store unavailable", "The run store cannot be reached."},
}

// Lookup returns the fixed status and text of code; an unknown code is
// internal_error's.
func Lookup(code Code) Info {
	if info, ok := table[code]; ok {
		return info
	}
	return table[agent.InternalError]
}

// Codes returns every code of the table, sorted.
func Codes() []Code {
	codes := make([]Code, 0, len(table))
	for c := range table {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// TableJSON is the table as the operator console reads it:
// {"<code>": {"status", "title", "detail"}, ...}.
func TableJSON() []byte {
	b, _ := json.Marshal(table) // map keys are written sorted
	return b
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
	RequestID string   `json:"requestId,omitempty"`

	// RetryAfter, when positive, is sent as Retry-After (busy).
	RetryAfter int `json:"-"`
	// Allow, for a 405, lists the route's methods (the Allow header).
	Allow []string `json:"-"`
}

// New is the problem of code with its fixed text.
func New(code Code) Problem {
	info := Lookup(code)
	p := Problem{Type: TypeBase + string(code), Title: info.Title, Status: info.Status, Detail: info.Detail, Code: code}
	if code == agent.Busy {
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

// Write answers p as application/problem+json with the headers its status
// asks for: Retry-After, WWW-Authenticate for a 401, Allow for a 405,
// Connection: close for a 408.
func Write(w http.ResponseWriter, p Problem) {
	body := p.JSON()
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	switch p.Status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", "Bearer") // RFC 9110 11.6.1: a 401 names its scheme
	case http.StatusMethodNotAllowed:
		h.Set("Allow", strings.Join(p.Allow, ", ")) // RFC 9110 15.5.6: a 405 lists the route's methods
	case http.StatusRequestTimeout:
		h.Set("Connection", "close") // RFC 9110 15.5.9: the body's remains cannot be read
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
