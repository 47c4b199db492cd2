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

// Check refuses what the transport would (the listener has applied its
// Host and Origin rule), as the problem the REST face
// answers with the same code: a method other than POST (405, Allow:
// POST), a body that is not JSON (415), an Accept that does not take
// both application/json and text/event-stream (400), an
// MCP-Protocol-Version the face does not speak (400), an empty body or
// one that is not one JSON-RPC object (a batch: 400, whatever the
// revision or its absence), and a name over MaxNameBytes (400). r's body
// is in memory (the listener read and checked it); Check leaves it to be
// read again. Any other error is an invalid input to render.
func (f *Face) Check(r *http.Request) error {
	_, err := f.check(r)
	return err
}

// check is Check, returning, for a request the direct path may answer,
// what parseDirect read of it (nil for any other).
func (f *Face) check(r *http.Request) (*direct, error) {
	if r.Method != http.MethodPost {
		p := problem.New(problem.MethodNotAllowed)
		p.Allow = []string{http.MethodPost}
		return nil, &refusal{p}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil, refuse(problem.UnsupportedMediaType)
	}
	if !accepts(r.Header.Values("Accept")) {
		return nil, problem.Invalid("Accept", problem.NotInChoices,
			"The Accept header must name both application/json and text/event-stream.",
			"application/json", "text/event-stream")
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(revisions, v) && v < revisions[0] {
		// A revision newer than any spoken goes on: the SDK answers it
		// with the JSON-RPC error that names the revisions spoken.
		return nil, problem.Invalid("MCP-Protocol-Version", problem.NotInChoices,
			"The MCP-Protocol-Version header names a revision this gateway does not speak.", revisions...)
	}
	for _, h := range []string{"Mcp-Method", "Mcp-Name"} {
		if len(r.Header.Get(h)) > MaxNameBytes {
			return nil, problem.Invalid(h, problem.TooLong, "The "+h+" header is longer than any name the gateway knows.")
		}
	}
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	if d, ok := parseDirect(r, body); ok {
		return &d, nil // within checkMessage's bounds
	}
	return nil, checkMessage(body)
}

// message is what Check reads of a JSON-RPC message: the names an
// answer may echo.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// checkMessage refuses a body that is not one JSON-RPC object with its
// names within MaxNameBytes. The listener has checked that the body is
// one JSON value.
func checkMessage(body []byte) error {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return problem.Invalid("", problem.EmptyBody, "The body is empty; it must be one JSON-RPC message.")
	case trimmed[0] == '[':
		return problem.Invalid("", problem.WrongType, "The body is a JSON-RPC batch; the MCP face takes one message per request, and no message of a batch is run.")
	case trimmed[0] != '{':
		return problem.Invalid("", problem.WrongType, "The body must be one JSON-RPC message, an object.")
	}
	var m message
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return problem.Invalid("", problem.WrongType, "The body must be one JSON-RPC message.")
	}
	if len(m.ID) > MaxNameBytes {
		return problem.Invalid("/id", problem.TooLong, "The id is longer than the gateway echoes.")
	}
	if len(m.Method) > MaxNameBytes {
		return problem.Invalid("/method", problem.TooLong, "The method is longer than any method the gateway knows.")
	}
	if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] == '{' {
		var params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		}
		_ = json.Unmarshal(p, &params) // a params of another shape is the SDK's to refuse
		if len(params.Name) > MaxNameBytes {
			return problem.Invalid("/params/name", problem.TooLong, "The name is longer than any tool's name.")
		}
		if len(params.URI) > MaxNameBytes {
			return problem.Invalid("/params/uri", problem.TooLong, "The uri is longer than the gateway echoes.")
		}
	}
	return nil
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
