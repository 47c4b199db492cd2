package mcpface

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/loom-gateway/gateway/internal/problem"
)

// revisions are the MCP protocol revisions the face speaks, newest first:
// the one place they are named (docs/agents.md lists them). 2026-07-28 is
// the stateless revision current agent SDKs negotiate (server/discover,
// the Mcp-Method and Mcp-Name headers); 2025-11-25 and 2025-06-18 are
// spoken after initialize. 2025-03-26 and 2024-11-05, whose JSON-RPC
// batches a gateway has no use for, are not: an initialize asking for
// either is answered with 2025-11-25, a request naming either in
// MCP-Protocol-Version is refused.
var revisions = []string{"2026-07-28", "2025-11-25", "2025-06-18"}

// Revisions returns the revisions the face speaks, newest first.
func Revisions() []string { return slices.Clone(revisions) }

// MaxNameBytes bounds every name a request gives that an answer may
// echo: the JSON-RPC method and id, a params name or uri, and the
// Mcp-Method and Mcp-Name headers. A longer one is refused as too_long
// before the SDK sees the request, so no answer carries more of it.
const MaxNameBytes = 128

// errNoRun is a tool handler called outside a run's request (never, as
// ServeRun is the face's only entry).
var errNoRun = errors.New("mcpface: no run in the request's context")

// refusal is a request refused before the SDK sees it, as its problem.
type refusal struct{ problem problem.Problem }

func (e *refusal) Error() string { return "mcpface: refused: " + string(e.problem.Code) }

func refuse(code problem.Code) *refusal { return &refusal{problem.New(code)} }

// Admit refuses what the transport would (the listener has applied its
// Host and Origin rule), as the problem the REST face
// answers with the same code: a method other than POST (405, Allow:
// POST), a body that is not JSON (415), an Accept that does not take
// both application/json and text/event-stream (400), a Last-Event-ID
// (400: the face keeps no stream to resume), an MCP-Protocol-Version
// the face does not speak (400; a revision newer than any spoken is the
// JSON-RPC error -32022 for a request with an id, naming the revisions
// spoken), an empty body or one that is not one JSON-RPC 2.0 request or
// notification (a batch, a response, a version tag other than "2.0", an
// id that is not a string or a number, a method that is not a string,
// params that are not an object: 400, whatever the revision or its
// absence), and a name over MaxNameBytes (400). r's body is in memory
// (the listener read and checked it); Admit leaves it to be read again.
// Any other error is an invalid input to render.
func (f *Face) Admit(r *http.Request) error {
	_, _, err := f.check(r)
	return err
}

// check is Check, returning, for a request the direct path may answer,
// what parseDirect read of it (nil for any other), and the request's
// method and tool name (within MaxNameBytes).
func (f *Face) check(r *http.Request) (*direct, asked, error) {
	d, m, err := f.checkRequest(r)
	var a asked
	if d != nil {
		a.method, a.tool = d.method, d.tool
	} else if err == nil {
		_ = json.Unmarshal(m.Method, &a.method)
		var params struct {
			Name json.RawMessage `json:"name"`
		}
		if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] == '{' && json.Unmarshal(p, &params) == nil && len(params.Name) > 0 && params.Name[0] == '"' {
			_ = json.Unmarshal(params.Name, &a.tool)
		}
	}
	return d, a, err
}

// checkRequest is check, returning what readMessage read of a request
// the direct path does not answer.
func (f *Face) checkRequest(r *http.Request) (*direct, message, error) {
	var m message
	if r.Method != http.MethodPost {
		p := problem.New(problem.MethodNotAllowed)
		p.Allow = []string{http.MethodPost}
		return nil, m, &refusal{p}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil, m, refuse(problem.UnsupportedMediaType)
	}
	if !accepts(r.Header.Values("Accept")) {
		return nil, m, problem.Invalid("Accept", problem.NotInChoices,
			"The Accept header must name both application/json and text/event-stream.",
			"application/json", "text/event-stream")
	}
	// Header names in their canonical form, which Get looks up without
	// allocating; the problems name them as the protocol spells them.
	for _, h := range [...]struct{ key, name string }{
		{"Mcp-Method", "Mcp-Method"}, {"Mcp-Name", "Mcp-Name"}, {"Mcp-Protocol-Version", "MCP-Protocol-Version"},
	} {
		if len(r.Header.Get(h.key)) > MaxNameBytes {
			return nil, m, problem.Invalid(h.name, problem.TooLong, "The "+h.name+" header is longer than any name the gateway knows.")
		}
	}
	if len(r.Header.Values("Last-Event-Id")) > 0 {
		return nil, m, problem.Invalid("Last-Event-ID", problem.UnknownField,
			"A POST takes no Last-Event-ID: the endpoint is stateless and keeps no stream to resume.")
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	future := false
	if v != "" && !slices.Contains(revisions, v) {
		if !futureRevision(v) {
			return nil, m, problem.Invalid("MCP-Protocol-Version", problem.NotInChoices,
				"The MCP-Protocol-Version header names a revision this gateway does not speak.", revisions...)
		}
		future = true
	}
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, m, err
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	if !future {
		if d, ok := parseDirect(r, body); ok {
			return &d, m, nil // within checkMessage's bounds
		}
	}
	m, err := readMessage(body)
	if err != nil {
		return nil, m, err
	}
	if future {
		if len(m.ID) == 0 || string(m.ID) == "null" {
			return nil, m, problem.Invalid("MCP-Protocol-Version", problem.NotInChoices,
				"The MCP-Protocol-Version header names a revision this gateway does not speak.", revisions...)
		}
		return nil, m, unsupportedVersion(m.ID, v)
	}
	return nil, m, nil
}

// futureRevision reports whether v names a revision newer than any the
// face speaks: a date, YYYY-MM-DD, after the newest.
func futureRevision(v string) bool {
	if len(v) != len("2006-01-02") || v <= revisions[0] {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i == 4 || i == 7 {
			if v[i] != '-' {
				return false
			}
		} else if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// The kinds of methods.
const (
	notification   = 1 << iota // sent without an id
	paramsOptional             // its params may be absent
)

// methods are the MCP methods the SDK's server reads, by kind. A
// request of any other method is answered -32601 (Check), a
// notification of any other refused.
var methods = map[string]int{
	"initialize":                       0,
	"ping":                             paramsOptional,
	"server/discover":                  paramsOptional,
	"tools/list":                       paramsOptional,
	"tools/call":                       0,
	"prompts/list":                     paramsOptional,
	"prompts/get":                      0,
	"resources/list":                   paramsOptional,
	"resources/templates/list":         paramsOptional,
	"resources/read":                   0,
	"resources/subscribe":              0,
	"resources/unsubscribe":            0,
	"subscriptions/listen":             0,
	"logging/setLevel":                 0,
	"completion/complete":              0,
	"notifications/initialized":        notification | paramsOptional,
	"notifications/cancelled":          notification | paramsOptional,
	"notifications/roots/list_changed": notification | paramsOptional,
	"notifications/progress":           notification,
}

// message is what Check reads of a JSON-RPC message: its envelope and
// the names an answer may echo.
type message struct {
	JSONRPC *json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id"`
	Method  json.RawMessage  `json:"method"`
	Params  json.RawMessage  `json:"params"`
}

// checkMessage refuses a body that is not one JSON-RPC 2.0 request or
// notification with its names within MaxNameBytes. The listener has
// checked that the body is one JSON value.
func checkMessage(body []byte) error {
	_, err := readMessage(body)
	return err
}

// readMessage is checkMessage, returning what it read.
func readMessage(body []byte) (message, error) {
	var m message
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return m, problem.Invalid("", problem.EmptyBody, "The body is empty; it must be one JSON-RPC message.")
	case trimmed[0] == '[':
		return m, problem.Invalid("", problem.WrongType, "The body is a JSON-RPC batch; the MCP face takes one message per request, and no message of a batch is run.")
	case trimmed[0] != '{':
		return m, problem.Invalid("", problem.WrongType, "The body must be one JSON-RPC message, an object.")
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return m, problem.Invalid("", problem.WrongType, "The body must be one JSON-RPC message.")
	}
	// The bounds first: no fault below names a value past them.
	if len(m.ID) > MaxNameBytes {
		return m, problem.Invalid("/id", problem.TooLong, "The id is longer than the gateway echoes.")
	}
	if m.JSONRPC == nil {
		return m, problem.Invalid("/jsonrpc", problem.Required, `The message has no "jsonrpc" member; it must be "2.0".`, "2.0")
	}
	if string(*m.JSONRPC) != `"2.0"` {
		return m, problem.Invalid("/jsonrpc", problem.NotInChoices, `The "jsonrpc" member must be "2.0".`, "2.0")
	}
	switch {
	case len(m.ID) == 0 || string(m.ID) == "null":
	case m.ID[0] == '"' || m.ID[0] == '-' || m.ID[0] >= '0' && m.ID[0] <= '9':
	default:
		return m, problem.Invalid("/id", problem.WrongType, "The id must be a string or a number.")
	}
	if len(m.Method) == 0 {
		return m, problem.Invalid("/method", problem.Required,
			"The message has no method: the MCP face takes one request or notification per request, and sends no request a response could answer.")
	}
	var method string
	if m.Method[0] != '"' || json.Unmarshal(m.Method, &method) != nil {
		return m, problem.Invalid("/method", problem.WrongType, "The method must be a string.")
	}
	if len(method) > MaxNameBytes {
		return m, problem.Invalid("/method", problem.TooLong, "The method is longer than any method the gateway knows.")
	}
	if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return m, problem.Invalid("/params", problem.WrongType, "The params must be an object.")
	}
	call := len(m.ID) > 0 && string(m.ID) != "null"
	kind, known := methods[method]
	switch {
	case !known && call:
		return m, &rpcRefusal{id: m.ID, code: codeMethodNotFound, status: http.StatusOK, method: method}
	case !known:
		return m, problem.Invalid("/method", problem.NotInChoices, "The method is not one this endpoint serves.")
	case kind&notification != 0 && call:
		return m, problem.Invalid("/id", problem.UnknownField, "A notification has no id.")
	case kind&notification == 0 && !call:
		return m, problem.Invalid("/id", problem.Required, "The method is a request: it needs an id.")
	case kind&paramsOptional == 0 && (len(m.Params) == 0 || string(bytes.TrimSpace(m.Params)) == "null"):
		return m, problem.Invalid("/params", problem.Required, "The method takes params.")
	}
	if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] == '{' {
		var params struct {
			Name json.RawMessage `json:"name"`
			URI  json.RawMessage `json:"uri"`
		}
		_ = json.Unmarshal(p, &params) // a params of another shape is the SDK's to refuse
		if nameLen(params.Name) > MaxNameBytes {
			return m, problem.Invalid("/params/name", problem.TooLong, "The name is longer than any tool's name.")
		}
		if nameLen(params.URI) > MaxNameBytes {
			return m, problem.Invalid("/params/uri", problem.TooLong, "The uri is longer than the gateway echoes.")
		}
	}
	return m, nil
}

// nameLen is the length of a name as an answer could echo it: a
// string's, decoded; any other value's, as sent.
func nameLen(raw json.RawMessage) int {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return len(s)
	}
	return len(raw)
}

// accepts reports whether Accept values take both application/json and
// text/event-stream (a wildcard counts; parameters are ignored), the
// streamable transport's rule for a POST.
func accepts(values []string) bool {
	var json, stream bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				stream = true
			case "*/*":
				json, stream = true, true
			}
		}
	}
	return json && stream
}
