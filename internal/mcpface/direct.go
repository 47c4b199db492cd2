package mcpface

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/internal/store"
)

// The direct path answers the face's hot requests (ping, tools/list and
// tools/call: one JSON-RPC request under a revision spoken after
// initialize, or under the stateless revision) without an SDK session:
// the SDK's stateless transport connects and closes a whole server
// session (a JSON-RPC connection and its goroutines) for every request.
// It answers only requests whose answer it knows to be the SDK's: a
// request with anything else in it (another method, a notification, an
// id that is not a string or a plain integer, a field the SDK reads that
// the direct path does not, a progress token, a tool the run may not
// call, a Last-Event-ID; under the stateless revision a _meta or an
// Mcp-Method or Mcp-Name header the SDK would refuse) goes to the SDK
// handler unchanged. ping and tools/list answer from the SDK's own
// result for the run's set of tools and the request's revision, asked
// for once and kept. A tools/call runs under the request's context, so a
// client that goes away cancels it under every revision (the SDK handler
// cancels it only under the stateless revision).

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

// parseDirect reads body as a request the direct path answers, in one
// pass, or reports false. A request it takes is within every bound
// checkMessage holds (so that Check need not read it again): one object,
// its id, method and tool name within MaxNameBytes. A duplicate member
// name, or invalid UTF-8, is the SDK's.
func parseDirect(r *http.Request, body []byte) (direct, bool) {
	var d direct
	revision := r.Header.Get("Mcp-Protocol-Version")
	rev, ok := directRevisions[revision]
	if !ok || len(r.Header.Values("Last-Event-Id")) > 0 {
		return d, false
	}
	d.stateless = rev.stateless
	var (
		idRaw, meta                []byte
		tagged, hasParams, hasName bool
		hasArgs, read              bool
	)
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	// value returns the next value as a slice of body (not a copy).
	value := func() ([]byte, bool) {
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		return body[end-len(v) : end], true
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return d, false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return d, false
		}
		switch name.String() {
		case "jsonrpc":
			v, ok := value()
			if !ok || string(v) != `"2.0"` {
				return d, false
			}
			tagged = true
		case "id":
			if idRaw, read = value(); !read {
				return d, false
			}
		case "method":
			tok, err := dec.ReadToken()
			if err != nil || tok.Kind() != '"' {
				return d, false
			}
			d.method = tok.String()
		case "params":
			if dec.PeekKind() != '{' {
				return d, false
			}
			hasParams = true
			_, _ = dec.ReadToken()
			for dec.PeekKind() != '}' {
				name, err := dec.ReadToken()
				if err != nil {
					return d, false
				}
				switch name.String() {
				case "_meta":
					if meta, read = value(); !read {
						return d, false
					}
				case "name":
					tok, err := dec.ReadToken()
					if err != nil || tok.Kind() != '"' {
						return d, false
					}
					d.tool, hasName = tok.String(), true
				case "arguments":
					if d.args, hasArgs = value(); !hasArgs {
						return d, false
					}
				default:
					return d, false
				}
			}
			if _, err := dec.ReadToken(); err != nil {
				return d, false
			}
		default:
			return d, false
		}
	}
	if _, err := dec.ReadToken(); err != nil || !tagged || !jsonSpace(body[dec.InputOffset():]) {
		return d, false
	}
	call := d.method == "tools/call"
	keys := paramKeys[d.stateless][d.method]
	switch {
	case keys == nil, len(idRaw) > MaxNameBytes, len(d.method) > MaxNameBytes, len(d.tool) > MaxNameBytes,
		call && (!hasName || !hasParams), !call && (hasName || hasArgs),
		d.stateless && r.Header.Get("Mcp-Method") != d.method,
		d.stateless && call && r.Header.Get("Mcp-Name") != d.tool:
		return d, false
	}
	if d.id, ok = directID(idRaw); !ok {
		return d, false
	}
	switch {
	case d.stateless && (meta == nil || !statelessMeta(meta, revision)):
		return d, false
	case !d.stateless && meta != nil && !plainMeta(meta):
		return d, false
	}
	return d, true
}

// jsonSpace reports whether b is only JSON's whitespace.
func jsonSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
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

// eachMember calls fn with each member of raw, a JSON object (or null:
// none), its value a slice of raw, while fn says go on; it reports
// whether raw was read whole and fn never stopped. A duplicate name is
// an error.
func eachMember(raw []byte, fn func(name string, value []byte) bool) bool {
	if string(raw) == "null" {
		return true
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		name := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		end := int(dec.InputOffset())
		if !fn(name, raw[end-len(v):end]) {
			return false
		}
	}
	_, err := dec.ReadToken()
	return err == nil
}

// plainMeta reports whether a _meta is an object (or null) with none of
// the members the SDK acts on.
func plainMeta(raw []byte) bool {
	return eachMember(raw, func(name string, _ []byte) bool {
		return name != metaProgressToken && name != metaVersion
	})
}

// statelessMeta reports whether a _meta is what a stateless request
// carries, as the SDK reads it: the protocol version, the header's
// revision; the client's capabilities and, if any, its info, each of
// their types; no progress token.
func statelessMeta(raw []byte, revision string) bool {
	var version, caps bool
	whole := eachMember(raw, func(name string, v []byte) bool {
		switch name {
		case metaProgressToken:
			return false
		case metaVersion:
			version = string(v) == `"`+revision+`"`
			return version
		case metaCapabilities:
			var c struct {
				mcp.ClientCapabilities
				Roots *mcp.RootCapabilities `json:"roots,omitempty"`
			}
			caps = string(v) == "{}" || len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &c) == nil
			return caps
		case metaClientInfo:
			var impl mcp.Implementation
			return len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &impl) == nil
		}
		return true
	})
	return whole && version && caps
}

// serveDirect answers d, what parseDirect read of r, a request of run,
// on the direct path, and reports whether it did; when it did not, it
// has written nothing.
func (f *Face) serveDirect(w http.ResponseWriter, r *http.Request, run store.Run, d *direct) bool {
	names := f.cfg.Core.Callable(run)
	var out []byte
	var kept *keptResult
	switch d.method {
	case "tools/call":
		if !contains(names, d.tool) {
			return false // the SDK's unknown-tool error
		}
		args := []byte(d.args)
		if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		body, isError := f.answer(r.Context(), run, d.tool, args)
		var meta []byte
		if d.stateless {
			meta = f.serverMeta
		}
		if ifc := f.cfg.IFC.meta(d.tool, body, isError); ifc != nil {
			meta = withMember(meta, ifc)
		}
		// The answer is built in a pooled buffer (it is written before
		// serveDirect returns).
		buf := answers.Get().(*[]byte)
		out = appendToolResult((*buf)[:0], d.id, body, isError, meta, d.stateless)
		defer func() {
			if cap(out) <= maxPooledAnswer {
				*buf = out
				answers.Put(buf)
			}
		}()
	default:
		if kept = f.kept(r, run, names, d.method, d.stateless); kept == nil {
			return false
		}
		out = appendHead(make([]byte, 0, len(d.id)+32), d.id)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	if kept == nil {
		_, _ = w.Write(out)
		return true
	}
	// The kept result is written as it is, not copied, with the run's
	// own cache hint (cacheable) written into out's room.
	if _, err := w.Write(out); err != nil {
		return true
	}
	if _, err := w.Write(kept.head); err != nil {
		return true
	}
	if kept.tail != nil {
		if _, err := w.Write(strconv.AppendInt(out[:0], int64(ttlMs(run, f.cfg.Core.Now())), 10)); err != nil {
			return true
		}
		if _, err := w.Write(kept.tail); err != nil {
			return true
		}
	}
	_, _ = w.Write(closeBrace)
	return true
}

var closeBrace = []byte{'}'}

// keptResult is a result the direct path keeps: head, then for a result
// with a cache hint the run's TTL and tail.
type keptResult struct {
	head, tail []byte
}

// splitTTL splits res, a result object, around the value of its
// top-level ttlMs member.
func splitTTL(res []byte) *keptResult {
	dec := jsontext.NewDecoder(bytes.NewReader(res))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return &keptResult{head: res}
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			break
		}
		isTTL := name.String() == "ttlMs"
		v, err := dec.ReadValue()
		if err != nil {
			break
		}
		if isTTL {
			end := int(dec.InputOffset())
			return &keptResult{head: res[:end-len(v)], tail: res[end:]}
		}
	}
	return &keptResult{head: res}
}

// answers holds the buffers the direct path builds tool results in;
// one grown past maxPooledAnswer is left to the collector.
var answers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledAnswer = 256 << 10

// appendHead appends a JSON-RPC response's head, up to its result.
func appendHead(out, id []byte) []byte {
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	return append(out, `,"result":`...)
}

// toolResult is the JSON-RPC response of request id whose result is the
// tool result of body (a JSON object) and isError, as the SDK writes it:
// one text block and the same JSON as structured content; with meta as
// its _meta (the stateless revision's: meta is not nil, and the result
// has a result type). It is written here rather than marshalled: the
// encoder would compact the structured content and each nested value
// again.
func toolResult(id, body []byte, isError bool, meta []byte) []byte {
	return appendToolResult(make([]byte, 0, 2*len(body)+len(body)/8+len(id)+len(meta)+128), id, body, isError, meta, meta != nil)
}

// appendToolResult appends toolResult's answer to out: with meta (not
// nil) as its _meta, and a result type when stateless.
func appendToolResult(out, id, body []byte, isError bool, meta []byte, stateless bool) []byte {
	out = appendHead(out, id)
	out = append(out, '{')
	if stateless {
		out = append(out, `"resultType":"complete",`...)
	}
	if meta != nil {
		out = append(out, `"_meta":`...)
		out = append(out, meta...)
		out = append(out, ',')
	}
	out = append(out, `"content":[{"type":"text","text":`...)
	out = appendString(out, body)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, body...)
	if isError {
		out = append(out, `,"isError":true`...)
	}
	return append(out, '}', '}')
}

// plain marks the bytes appendString copies as they are: ASCII but the
// control characters, '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string that reads back as
// encoding/json's encoding of string(s) reads back: each invalid UTF-8
// byte is U+FFFD.
func appendString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && plain[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i++
			start = i
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	out = append(out, s[start:]...)
	return append(out, '"')
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
// result depends only on the run's tools, the dialect and the revision,
// but for its cache hint's TTL) for r's run, asking the SDK the first
// time; nil if the SDK answered otherwise.
func (f *Face) kept(r *http.Request, run store.Run, names []string, method string, stateless bool) *keptResult {
	revision := r.Header.Get("Mcp-Protocol-Version")
	key := method + "\x00" + revision + "\x00" + catalogKey(r, names)
	f.mu.Lock()
	res, ok := f.results[key]
	f.mu.Unlock()
	if ok {
		return res
	}
	b := f.askSDK(run, method, revision, stateless, r.URL.RawQuery)
	if b == nil {
		return nil
	}
	res = splitTTL(b)
	f.mu.Lock()
	f.results[key] = res
	f.mu.Unlock()
	return res
}

// askSDK sends the SDK handler one request of method, without params
// but the stateless revision's _meta, under revision, for run, with
// query (the request's, which names its dialect), and returns its result.
func (f *Face) askSDK(run store.Run, method, revision string, stateless bool, query string) []byte {
	ctx := context.WithValue(context.Background(), runKey{}, run)
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"}`
	if stateless {
		body = `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"` + metaVersion + `":"` + revision + `","` + metaCapabilities + `":{}}}}`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/?"+query, strings.NewReader(body))
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
