package mcpface

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/internal/store"
)

// The direct path answers the face's hot requests (ping, tools/list and
// tools/call, one JSON-RPC request under a revision spoken after
// initialize, or under the stateless revision) without an SDK session: the stateless transport connects
// and closes a whole server session (a JSON-RPC connection and its
// goroutines) for every request. It answers only requests whose answer
// it knows to be the SDK's: a request with anything else in it (another
// method, a notification, an id that is not a string or a plain
// integer, a field the SDK reads that the direct path does not, a
// _meta naming a protocol version or a progress token, a tool the run
// may not call, a Last-Event-ID) goes to the SDK handler unchanged.
// ping and tools/list answer from the SDK's own result for the run's
// set of tools and the request's revision, asked for once and kept.

// directRevisions are the MCP-Protocol-Version values the direct path
// answers under: the revisions spoken after initialize, none (the SDK's
// default for a request without the header), and the stateless
// revision (stateless is true), whose requests carry the revision and
// the client's capabilities in _meta and name the method (and tool) in
// the Mcp-Method (and Mcp-Name) header.
var directRevisions = map[string]struct{ stateless bool }{
	"": {}, "2025-11-25": {}, "2025-06-18": {}, "2026-07-28": {stateless: true},
}

// paramKeys are the params members the direct path reads, per method;
// a request whose params hold any other goes to the SDK. The stateless
// revision has no ping.
var paramKeys = map[bool]map[string]map[string]bool{
	false: {
		"ping":       {"_meta": true},
		"tools/list": {"_meta": true},
		"tools/call": {"_meta": true, "name": true, "arguments": true},
	},
	true: {
		"tools/list": {"_meta": true},
		"tools/call": {"_meta": true, "name": true, "arguments": true},
	},
}

// The _meta members the SDK reads.
const (
	metaProgressToken = "progressToken"
	metaVersion       = "io.modelcontextprotocol/protocolVersion"
	metaCapabilities  = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo    = "io.modelcontextprotocol/clientInfo"
	metaServerInfo    = "io.modelcontextprotocol/serverInfo"
)

// direct is one request the direct path answers.
type direct struct {
	id        []byte // as the SDK writes it back
	method    string
	stateless bool            // under the stateless revision
	tool      string          // tools/call's name
	args      json.RawMessage // tools/call's arguments, as sent
}

// parseDirect reads body as a request the direct path answers, or
// reports false.
func parseDirect(r *http.Request, body []byte) (direct, bool) {
	var d direct
	revision := r.Header.Get("MCP-Protocol-Version")
	rev, ok := directRevisions[revision]
	if !ok || len(r.Header.Values("Last-Event-ID")) > 0 {
		return d, false
	}
	d.stateless = rev.stateless
	keys := paramKeys[d.stateless]
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || string(top["jsonrpc"]) != `"2.0"` {
		return d, false
	}
	for k := range top {
		if k != "jsonrpc" && k != "id" && k != "method" && k != "params" {
			return d, false
		}
	}
	id, ok := directID(top["id"])
	if !ok || json.Unmarshal(top["method"], &d.method) != nil || keys[d.method] == nil {
		return d, false
	}
	if d.stateless && r.Header.Get("Mcp-Method") != d.method {
		return d, false
	}
	d.id = id
	raw, present := top["params"]
	if !present {
		return d, d.method != "tools/call" && !d.stateless
	}
	var params map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &params) != nil {
		return d, false
	}
	for k := range params {
		if !keys[d.method][k] {
			return d, false
		}
	}
	m, hasMeta := params["_meta"]
	switch {
	case d.stateless && (!hasMeta || !statelessMeta(m, revision)):
		return d, false
	case !d.stateless && hasMeta && !plainMeta(m):
		return d, false
	}
	if d.method == "tools/call" {
		name, ok := params["name"]
		if !ok || len(name) == 0 || name[0] != '"' || json.Unmarshal(name, &d.tool) != nil {
			return d, false
		}
		if d.stateless && r.Header.Get("Mcp-Name") != d.tool {
			return d, false
		}
		d.args = params["arguments"]
	}
	return d, true
}

// directID returns a request id as the SDK writes it back: a string, or
// an integer that a float64 holds exactly (the SDK reads a number as
// one). Anything else, none or null included, is the SDK's.
func directID(raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		b, err := json.Marshal(s)
		return b, err == nil
	}
	digits := strings.TrimPrefix(string(raw), "-")
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return nil, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, false
	}
	return strconv.AppendInt(nil, n, 10), true
}

// plainMeta reports whether a _meta is an object (or null) with none of
// the members the SDK acts on.
func plainMeta(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, progress := m[metaProgressToken]
	_, version := m[metaVersion]
	return !progress && !version
}

// statelessMeta reports whether a _meta is what a stateless request
// carries, as the SDK reads it: the protocol version, the header's
// revision; the client's capabilities and, if any, its info, each of
// their types; no progress token.
func statelessMeta(raw json.RawMessage, revision string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	var version string
	if json.Unmarshal(m[metaVersion], &version) != nil || version != revision {
		return false
	}
	if _, ok := m[metaProgressToken]; ok {
		return false
	}
	var caps struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	if c := m[metaCapabilities]; len(c) == 0 || c[0] != '{' || json.Unmarshal(c, &caps) != nil {
		return false
	}
	if info, ok := m[metaClientInfo]; ok {
		var impl mcp.Implementation
		if len(info) == 0 || info[0] != '{' || json.Unmarshal(info, &impl) != nil {
			return false
		}
	}
	return true
}

// serveDirect answers r, a request of run whose body Check has read,
// on the direct path, and reports whether it did; when it did not, it
// has written nothing.
func (f *Face) serveDirect(w http.ResponseWriter, r *http.Request, run store.Run, body []byte) bool {
	d, ok := parseDirect(r, body)
	if !ok {
		return false
	}
	names := f.cfg.Core.Callable(run)
	var res []byte
	switch d.method {
	case "tools/call":
		if !contains(names, d.tool) {
			return false // the SDK's unknown-tool error
		}
		args := []byte(d.args)
		if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		a := f.answer(r.Context(), run, d.tool, args)
		if d.stateless {
			// Every result names the server in its _meta.
			a.Meta = mcp.Meta{metaServerInfo: f.impl}
		}
		b, err := json.Marshal(a)
		if err != nil || len(b) < 2 {
			return false
		}
		if d.stateless {
			// The stateless revision requires a result type of every result.
			b = append([]byte(`{"resultType":"complete",`), b[1:]...)
		}
		res = b
	default:
		res = f.kept(r, run, names, d.method, d.stateless)
		if res == nil {
			return false
		}
	}
	out := make([]byte, 0, len(res)+len(d.id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, d.id...)
	out = append(out, `,"result":`...)
	out = append(out, res...)
	out = append(out, '}')
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(out)
	return true
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// kept returns the SDK's result of method (ping or tools/list, whose
// result depends only on the run's tools and the revision) for r's run,
// asking the SDK the first time; nil if the SDK answered otherwise.
func (f *Face) kept(r *http.Request, run store.Run, names []string, method string, stateless bool) []byte {
	revision := r.Header.Get("MCP-Protocol-Version")
	key := method + "\x00" + revision + "\x00" + strings.Join(names, ",")
	f.mu.Lock()
	res, ok := f.results[key]
	f.mu.Unlock()
	if ok {
		return res
	}
	res = f.askSDK(run, method, revision, stateless)
	if res == nil {
		return nil
	}
	f.mu.Lock()
	f.results[key] = res
	f.mu.Unlock()
	return res
}

// askSDK sends the SDK handler one request of method, without params
// but the stateless revision's _meta, under revision, for run, and
// returns its result.
func (f *Face) askSDK(run store.Run, method, revision string, stateless bool) []byte {
	ctx := context.WithValue(context.Background(), runKey{}, run)
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"}`
	if stateless {
		body = `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"` + metaVersion + `":"` + revision + `","` + metaCapabilities + `":{}}}}`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader(body))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if revision != "" {
		req.Header.Set("MCP-Protocol-Version", revision)
	}
	if stateless {
		req.Header.Set("Mcp-Method", method)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	f.handler.ServeHTTP(rec, req)
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if rec.status != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &resp) != nil || string(resp.ID) != "1" || len(resp.Result) == 0 {
		return nil
	}
	return resp.Result
}

// recorder is the response writer of askSDK.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
