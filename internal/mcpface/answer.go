package mcpface

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/problem/problemhttp"
)

// The listener answers every MCP request in its own words: what it
// refuses before a method runs is a problem (Check); what the SDK
// handler refuses goes through a guard, which replaces anything the SDK
// writes that is not a JSON-RPC result with the listener's own answer:
// an error body in the SDK's text (http.Error) becomes the problem of
// its status, and a JSON-RPC error keeps its id, code and HTTP status but
// takes the message of its code from rpcMessages, its data dropped (but
// -32022's, rebuilt from the revisions spoken). So no answer carries
// the SDK's words, nor any value the request sent past MaxNameBytes.

// JSON-RPC error codes the face answers with.
const (
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeInternal           = -32603
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// rpcMessages are the messages of the JSON-RPC errors the face answers
// with, by code (docs/agents.md lists them); any other code is answered
// with rpcMessageOther.
var rpcMessages = map[int64]string{
	codeInvalidRequest:     "Invalid request: the message is not a request this endpoint serves.",
	codeMethodNotFound:     "Method not found: this endpoint does not serve the method under the request's revision.",
	codeInvalidParams:      "Invalid params: the params are not what the method takes.",
	codeInternal:           "Internal error.",
	codeHeaderMismatch:     "Header mismatch: the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers must be present and name the revision, method and tool the body names.",
	codeMissingCapability:  "Missing client capabilities: the request needs a capability the client did not declare.",
	codeUnsupportedVersion: "Unsupported protocol version: data.supported lists the revisions this gateway speaks.",
}

const rpcMessageOther = "The request failed."

// rpcMessage is the face's message of a JSON-RPC error of code answering
// a request of method (tool, for a tools/call; both within
// MaxNameBytes); unknownTool reports that the run may not call tool.
func rpcMessage(code int64, method, tool string, unknownTool bool) string {
	switch {
	case code == codeMethodNotFound && method != "":
		return "Method not found: " + strconv.Quote(method) + " is not a method this endpoint serves under the request's revision."
	case code == codeInvalidParams && method == "tools/call" && unknownTool:
		return "Unknown tool " + strconv.Quote(tool) + ": tools/list names the tools this run may call."
	}
	if m, ok := rpcMessages[code]; ok {
		return m
	}
	return rpcMessageOther
}

// versionData is -32022's data: the revisions spoken and, within
// MaxNameBytes, the one requested.
type versionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested,omitempty"`
}

func newVersionData(requested string) versionData {
	if len(requested) > MaxNameBytes {
		requested = ""
	}
	return versionData{Supported: Revisions(), Requested: requested}
}

// rpcRefusal is a request Check refuses with a JSON-RPC error: one with
// an id under a revision newer than any spoken (-32022).
type rpcRefusal struct {
	id     json.RawMessage
	code   int64
	status int
	method string // -32601's
	data   any
}

func (e *rpcRefusal) Error() string {
	return "mcpface: refused: JSON-RPC " + strconv.FormatInt(e.code, 10)
}

func unsupportedVersion(id json.RawMessage, requested string) *rpcRefusal {
	return &rpcRefusal{id: id, code: codeUnsupportedVersion, status: http.StatusBadRequest, data: newVersionData(requested)}
}

// rpcError is the JSON-RPC error response of id (nil: none) with code,
// message and data (nil: none).
func rpcError(id json.RawMessage, code int64, message string, data any) []byte {
	e := struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{code, message, data}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Error   any             `json:"error"`
	}{"2.0", id, e})
	return out
}

// writeJSON writes body as the answer, with status.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// asked is what the guard knows of the request it answers.
type asked struct {
	method, tool string
	unknownTool  bool
	requestID    string
}

// The guard's modes: what it does with what the SDK writes.
const (
	undecided = iota // nothing written yet
	sniffing         // a 2xx JSON body, result or error not yet known
	passing          // a result: written through
	holding          // a JSON-RPC error or event stream: held to rewrite
	replacing        // the SDK's text: dropped, the problem written at the end
)

// maxSniff bounds what the guard reads of a JSON answer to tell a
// result from an error: the SDK writes the version tag and the id (at
// most MaxNameBytes) first.
const maxSniff = 4 << 10

// guard is the response writer the SDK handler writes to.
type guard struct {
	w      http.ResponseWriter
	asked  asked
	header http.Header
	status int
	mode   int
	buf    bytes.Buffer
}

func newGuard(w http.ResponseWriter, a asked) *guard {
	return &guard{w: w, asked: a, header: http.Header{}}
}

func (g *guard) Header() http.Header { return g.header }

func (g *guard) WriteHeader(status int) {
	if g.mode != undecided {
		return
	}
	g.status = status
	ct, _, _ := strings.Cut(g.header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(ct)
	switch {
	case status == http.StatusAccepted || status == http.StatusNoContent:
		if ct != "" && ct != "application/json" {
			g.mode = replacing
			return
		}
		g.pass()
	case ct == "application/json" && status >= 200 && status < 300:
		g.mode = sniffing
	case ct == "application/json" || ct == "text/event-stream" && status >= 200 && status < 300:
		g.mode = holding
	default:
		g.mode = replacing
	}
}

// pass writes the held header and status through.
func (g *guard) pass() {
	g.mode = passing
	h := g.w.Header()
	for k, v := range g.header {
		h[k] = v
	}
	g.w.WriteHeader(g.status)
}

func (g *guard) Write(b []byte) (int, error) {
	if g.mode == undecided {
		g.WriteHeader(http.StatusOK)
	}
	switch g.mode {
	case passing:
		return g.w.Write(b)
	case replacing:
		return len(b), nil
	}
	if g.mode == sniffing && g.buf.Len() == 0 && sniff(b) == "result" {
		// A result written whole: through, not copied.
		g.pass()
		return g.w.Write(b)
	}
	g.buf.Write(b)
	if g.mode == sniffing {
		switch sniff(g.buf.Bytes()) {
		case "result":
			g.pass()
			_, err := g.w.Write(g.buf.Bytes())
			g.buf = bytes.Buffer{}
			return len(b), err
		case "error":
			g.mode = holding
		case "":
			if g.buf.Len() > maxSniff {
				g.mode = holding
			}
		}
	}
	return len(b), nil
}

// Flush flushes what is written through.
func (g *guard) Flush() {
	if f, ok := g.w.(http.Flusher); ok && g.mode == passing {
		f.Flush()
	}
}

// sniff reads a JSON-RPC response's head in b: "result" or "error" by
// its first member of either name, "other" for anything else, "" while
// more is needed.
func sniff(b []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.ReadToken(); err != nil {
		return more(err)
	} else if tok.Kind() != '{' {
		return "other"
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return more(err)
		}
		if tok.Kind() != '"' {
			return "other"
		}
		switch name := tok.String(); name {
		case "result", "error":
			return name
		case "jsonrpc", "id":
			if _, err := dec.ReadValue(); err != nil {
				return more(err)
			}
		default:
			return "other"
		}
	}
}

func more(err error) string {
	if strings.Contains(err.Error(), "unexpected EOF") {
		return ""
	}
	return "other"
}

// finish writes what the guard holds, in the face's words.
func (g *guard) finish() {
	switch g.mode {
	case undecided:
		g.status = http.StatusOK
		g.pass()
	case sniffing, holding:
		body := g.buf.Bytes()
		ct, _, _ := strings.Cut(g.header.Get("Content-Type"), ";")
		if strings.TrimSpace(ct) == "text/event-stream" {
			g.writeEvents(body)
			return
		}
		if out, ok := g.rewrite(body); ok {
			writeJSON(g.w, g.status, out)
			return
		}
		g.writeProblem(http.StatusInternalServerError)
	case replacing:
		g.writeProblem(g.status)
	}
}

// rewrite is a JSON-RPC response in the face's words: a result as it is,
// an error with the face's message of its code; false for a body that
// is not one JSON-RPC response.
func (g *guard) rewrite(body []byte) ([]byte, bool) {
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64           `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return nil, false
	}
	if resp.Error == nil {
		return body, len(resp.Result) > 0
	}
	if resp.Error.Code == 0 {
		// An error the SDK gives no code: a handler's own, each of them
		// about the params (initialize's that do not read).
		resp.Error.Code = codeInvalidParams
	}
	var data any
	if resp.Error.Code == codeUnsupportedVersion {
		var d versionData
		_ = json.Unmarshal(resp.Error.Data, &d)
		data = newVersionData(d.Requested)
	}
	if len(resp.ID) > MaxNameBytes {
		resp.ID = nil
	}
	return rpcError(resp.ID, resp.Error.Code, rpcMessage(resp.Error.Code, g.asked.method, g.asked.tool, g.asked.unknownTool), data), true
}

// writeEvents writes an event stream the SDK wrote, each event's data
// (a JSON-RPC message) in the face's words.
func (g *guard) writeEvents(body []byte) {
	lines := bytes.Split(body, []byte("\n"))
	for i, line := range lines {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		msg, ok := g.rewrite(data)
		if !ok && !isNotification(data) {
			g.writeProblem(http.StatusInternalServerError)
			return
		}
		if ok {
			lines[i] = append([]byte("data: "), msg...)
		}
	}
	g.status = max(g.status, http.StatusOK)
	g.pass()
	_, _ = g.w.Write(bytes.Join(lines, []byte("\n")))
}

// isNotification reports whether data is a JSON-RPC notification with a
// method the face sends on a stream.
func isNotification(data []byte) bool {
	var n struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(data, &n) == nil && len(n.ID) == 0 && strings.HasPrefix(n.Method, "notifications/")
}

// writeProblem writes the problem of an error body the SDK wrote with
// status, in place of its text.
func (g *guard) writeProblem(status int) {
	var p problem.Problem
	switch {
	case status == http.StatusRequestEntityTooLarge:
		p = problem.New(problem.RequestTooLarge)
	case status == http.StatusMethodNotAllowed:
		p = problem.New(problem.MethodNotAllowed)
		p.Allow = []string{http.MethodPost}
	case status == http.StatusUnsupportedMediaType:
		p = problem.New(problem.UnsupportedMediaType)
	case status >= 400 && status < 500:
		p = problem.New(problem.InvalidInput)
		p.Detail = "The message is not a JSON-RPC request or notification this endpoint serves under the request's revision."
	default:
		p = problem.New(problem.InternalError)
	}
	p.RequestID = g.asked.requestID
	problemhttp.Write(g.w, p)
}

// writeRefusal writes e, a request Check refused with a JSON-RPC error,
// under revision: method not found is 404 under the stateless revision
// (SEP-2575), a JSON-RPC error with 200 before it.
func writeRefusal(w http.ResponseWriter, e *rpcRefusal, revision string) {
	status := e.status
	if e.code == codeMethodNotFound && revision >= revisions[0] {
		status = http.StatusNotFound
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	writeJSON(w, status, rpcError(e.id, e.code, rpcMessage(e.code, e.method, "", false), e.data))
}
