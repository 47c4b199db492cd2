package tests

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// mcpAllRevisions are the revisions the MCP face speaks and none.
var mcpAllRevisions = []string{"", "2025-06-18", "2025-11-25", "2026-07-28"}

// statelessMeta is the _meta a 2026-07-28 client sends.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// statelessHeader is the headers a 2026-07-28 client sends with a
// request of method (and tool, if any).
func statelessHeader(method, tool string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if tool != "" {
		h["Mcp-Name"] = tool
	}
	return h
}

// sdkPhrases are words of the MCP library's own answers: the texts of
// every http.Error and JSON-RPC error its streamable server and its
// method handlers write (go-sdk mcp/streamable.go, server.go, shared.go,
// internal/jsonrpc2). The face's words are capitalised differently
// where they say the same thing, so the check is case-sensitive.
var sdkPhrases = []string{
	"Forbidden: invalid Host", "Bad Request", "Unsupported protocol version (", "Method Not Allowed",
	"Content-Type must be", "Accept must contain", "no server available", "request body exceeds",
	"failed connection", "failed to read body", "POST requires a non-empty body", "malformed payload",
	"JSON-RPC batching is not supported", "can't send Last-Event-ID", "JSON RPC", "not handled",
	"invalid request", "missing id", "unexpected id", "missing required", "only supported on stateless",
	"is not supported by this server", "is required for requests carrying", "missing or invalid _meta",
	"does not match request", "header mismatch:", "session is closing", "storing stream",
	"duplicate in-flight", "invalid message version tag", "parse error", "invalid ID type",
	"unmarshal", "mcp.", "Go value", "handling '", "method not found", "unsupported protocol version",
	"not supported in the new protocol", "only supported in protocol version", "Resource not found",
	"unknown tool", "invalid params", "params cannot be nil", "must be be provided", "empty batch",
	"invalid during session initialization", "subscriptions/listen requires", "server does not support",
}

// faceMessages begin every JSON-RPC error message the face writes
// (docs/agents.md lists them).
var faceMessages = []string{
	"Invalid request: ", "Method not found: ", "Invalid params: ", "Internal error.", "Header mismatch: ",
	"Missing client capabilities: ", "Unsupported protocol version: ", "Unknown tool ", "The request failed.", "Run ended: ",
}

// rpcAnswer is a JSON-RPC response as the tests read it.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// ownWords fails the test unless an answer is the face's own: a
// problem with a code of the contract, a JSON-RPC response whose error
// message is one the face writes, or an empty 202; and no phrase of the
// library's in it anywhere.
func ownWords(t *testing.T, what string, resp *http.Response, body string) {
	t.Helper()
	for _, p := range sdkPhrases {
		if strings.Contains(body, p) {
			t.Errorf("%s: %d the library's words %q in %.300s", what, resp.StatusCode, p, body)
		}
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusAccepted:
		if body != "" {
			t.Errorf("%s: 202 with a body %.300s", what, body)
		}
	case ct == "application/problem+json":
		var p struct{ Code, Detail string }
		if json.Unmarshal([]byte(body), &p) != nil || p.Code == "" || p.Detail == "" {
			t.Errorf("%s: %d not a problem: %.300s", what, resp.StatusCode, body)
		}
	case ct == "application/json" || ct == "text/event-stream":
		a, ok := rpcOf(resp, body)
		if !ok || a.JSONRPC != "2.0" || (a.Error == nil) == (a.Result == nil) {
			t.Errorf("%s: %d not a JSON-RPC response: %.300s", what, resp.StatusCode, body)
			return
		}
		if a.Error != nil && !hasPrefix(a.Error.Message, faceMessages) {
			t.Errorf("%s: a message not the face's: %q", what, a.Error.Message)
		}
	default:
		t.Errorf("%s: %d %q %.300s", what, resp.StatusCode, ct, body)
	}
}

// rpcOf reads the JSON-RPC response of an answer: its body, or the
// event of an event stream that carries an id.
func rpcOf(resp *http.Response, body string) (rpcAnswer, bool) {
	var a rpcAnswer
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return a, json.Unmarshal([]byte(body), &a) == nil
	}
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			a = rpcAnswer{}
			if json.Unmarshal([]byte(data), &a) == nil && len(a.ID) > 0 {
				return a, true
			}
		}
	}
	return a, false
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// mcpCase is one request of TestMCPOwnAnswers and what it answers: a
// problem at pointer (with reason), or the JSON-RPC error code rpc.
type mcpCase struct {
	name     string
	method   string // POST unless set
	body     string
	header   map[string]string
	status   int    // under every revision but the stateless one
	status26 int    // under 2026-07-28, if different
	pointer  string // a problem's pointer ("-" for a problem without one)
	reason   string
	code     string // a problem's code, if not invalid_input
	rpc      int64  // a JSON-RPC error's code
	rpc26    int64  // under 2026-07-28, if not -32602 (no _meta)
}

// TestMCPOwnAnswers: every request the MCP library would refuse in its
// own words is answered in the face's, under every revision it speaks
// and with no MCP-Protocol-Version: one request per refusal path of the
// library's streamable server (every http.Error and JSON-RPC error it
// writes, go-sdk v1.8.0 mcp/streamable.go ServeHTTP, serveStateless and
// servePOST, jsonrpc2.DecodeMessage, checkRequest, validateMcpHeaders)
// and of its method handlers, each with the problem or JSON-RPC error
// docs/agents.md lists, and no text of the library's anywhere.
func TestMCPOwnAnswers(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	cases := []mcpCase{
		// ServeHTTP and serveStateless: the transport's refusals.
		{name: "GET", method: http.MethodGet, status: 405, code: "method_not_allowed", pointer: "-"},
		{name: "DELETE", method: http.MethodDelete, status: 405, code: "method_not_allowed", pointer: "-"},
		{name: "text Content-Type", body: ping, header: map[string]string{"Content-Type": "text/plain"}, status: 415, code: "unsupported_media_type", pointer: "-"},
		{name: "Accept JSON only", body: ping, header: map[string]string{"Accept": "application/json"}, status: 400, pointer: "Accept", reason: "not_in_choices"},
		{name: "body over the cap", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("b", 2<<20) + `"}}`, status: 413, code: "request_too_large", pointer: "-"},
		// servePOST.
		{name: "Last-Event-ID on a POST", body: ping, header: map[string]string{"Last-Event-ID": "s_1"}, status: 400, pointer: "Last-Event-ID", reason: "unknown_field"},
		{name: "empty body", body: "", status: 400, pointer: "-", reason: "empty_body"},
		{name: "empty batch", body: `[]`, status: 400, pointer: "-", reason: "wrong_type"},
		{name: "batch", body: `[` + ping + `,` + list + `]`, status: 400, pointer: "-", reason: "wrong_type"},
		{name: "version tag 1.0", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, status: 400, pointer: "/jsonrpc", reason: "not_in_choices"},
		{name: "no version tag", body: `{"id":1,"method":"ping"}`, status: 400, pointer: "/jsonrpc", reason: "required"},
		{name: "{}", body: `{}`, status: 400, pointer: "/jsonrpc", reason: "required"},
		{name: "id true", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, status: 400, pointer: "/id", reason: "wrong_type"},
		{name: "id an object", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, status: 400, pointer: "/id", reason: "wrong_type"},
		{name: "id an array", body: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, status: 400, pointer: "/id", reason: "wrong_type"},
		{name: "method a number", body: `{"jsonrpc":"2.0","id":1,"method":5}`, status: 400, pointer: "/method", reason: "wrong_type"},
		{name: "a response", body: `{"jsonrpc":"2.0","id":1,"result":{}}`, status: 400, pointer: "/method", reason: "required"},
		{name: "a response without id", body: `{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`, status: 400, pointer: "/method", reason: "required"},
		{name: "params an array", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`, status: 400, pointer: "/params", reason: "wrong_type"},
		// checkRequest.
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":1,"method":"rt/unknown"}`, status: 200, status26: 404, rpc: -32601, rpc26: -32601},
		{name: "unknown notification", body: `{"jsonrpc":"2.0","method":"rt/unknown"}`, status: 400, pointer: "/method", reason: "not_in_choices"},
		{name: "notification with an id", body: `{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}`, status: 400, pointer: "/id", reason: "unknown_field"},
		{name: "request without an id", body: `{"jsonrpc":"2.0","method":"ping"}`, status: 400, pointer: "/id", reason: "required"},
		{name: "tools/call without params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, status: 400, pointer: "/params", reason: "required"},
		// The stateless revision's header rules (servePOST, validateMcpHeaders).
		{name: "_meta naming a revision", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + statelessMeta + `}}`, status: 400, rpc: -32020},
		{name: "Mcp-Method of another method", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + statelessMeta + `}}`,
			header: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"}, status: 400, rpc: -32020},
		{name: "no Mcp-Name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + statelessMeta + `,"name":"loom_search","arguments":{"query":"a"}}}`,
			header: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, status: 400, rpc: -32020},
		{name: "no Mcp-Method", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + statelessMeta + `}}`,
			header: map[string]string{"MCP-Protocol-Version": "2026-07-28"}, status: 400, rpc: -32020},
		{name: "_meta of another revision", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`,
			header: statelessHeader("tools/list", ""), status: 400, rpc: -32020},
		{name: "stateless without _meta", body: list, header: statelessHeader("tools/list", ""), status: 400, rpc: -32602},
		// The method handlers.
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, status: 200, status26: 400, rpc: -32602},
		{name: "tools/list of a bad cursor", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`, status: 200, status26: 400, rpc: -32602},
		{name: "completion/complete", body: `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"}}}`, status: 200, status26: 400, rpc: -32601},
		{name: "resources/read", body: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x"}}`, status: 200, status26: 400, rpc: -32602},
		{name: "prompts/get", body: `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}`, status: 200, status26: 400, rpc: -32602},
		{name: "resources/subscribe", body: `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///x"}}`, status: 200, status26: 400, rpc: -32601},
		{name: "ping params of the wrong shape", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":5}}`, status: 200, status26: 400, rpc: -32602},
		{name: "initialize without params' members", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":5}}`, status: 200, status26: 400, rpc: -32602},
		{name: "server/discover before the stateless revision", body: `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, status: 200, status26: 400, rpc: -32601},
		{name: "subscriptions/listen without notifications", body: `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`, status: 200, status26: 400, rpc: -32602},
		{name: "initialize under the stateless revision", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + statelessMeta + `,"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			header: statelessHeader("initialize", ""), status: 404, rpc: -32601},
		{name: "ping under the stateless revision", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + statelessMeta + `}}`,
			header: statelessHeader("ping", ""), status: 404, rpc: -32601},
	}
	for _, tc := range cases {
		for _, v := range mcpAllRevisions {
			h := map[string]string{"MCP-Protocol-Version": v}
			maps.Copy(h, tc.header)
			if v != "" && tc.header["MCP-Protocol-Version"] != "" && v != tc.header["MCP-Protocol-Version"] {
				continue // the case names its revision
			}
			what := tc.name + " under " + strconv.Quote(h["MCP-Protocol-Version"])
			var resp *http.Response
			var body string
			if tc.method != "" {
				resp, body = agentDo(t, g, tc.method, "/v1/runs/"+r.ID+"/mcp", r.Token, "", map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": v})
			} else {
				resp, body = mcpPost(t, g, r.ID, r.Token, tc.body, h)
			}
			ownWords(t, what, resp, body)
			status := tc.status
			if h["MCP-Protocol-Version"] == "2026-07-28" && tc.status26 != 0 {
				status = tc.status26
				if tc.rpc != 0 && tc.rpc26 == 0 {
					// A request without the revision's _meta is refused
					// for it before its method runs.
					tc.rpc = -32602
				}
			}
			checkAnswer(t, what, resp, body, status, tc)
		}
	}
	noLoomCalls(t, g, "requests refused")
}

// checkAnswer fails the test unless resp is the answer tc names.
func checkAnswer(t *testing.T, what string, resp *http.Response, body string, status int, tc mcpCase) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: %d, want %d: %.300s", what, resp.StatusCode, status, body)
	}
	if tc.rpc != 0 {
		a, ok := rpcOf(resp, body)
		if !ok || a.Error == nil || a.Error.Code != tc.rpc || string(a.ID) != "1" {
			t.Errorf("%s: %.300s, want JSON-RPC error %d", what, body, tc.rpc)
		}
		return
	}
	code, pointer, reason := mcpProblemOf(t, resp, body)
	wantCode := tc.code
	if wantCode == "" {
		wantCode = "invalid_input"
	}
	wantPointer := tc.pointer
	if wantPointer == "-" {
		wantPointer = ""
	}
	if code != wantCode || pointer != wantPointer || reason != tc.reason {
		t.Errorf("%s: %s at %q (%s), want %s at %q (%s): %.300s", what, code, pointer, reason, wantCode, wantPointer, tc.reason, body)
	}
}

// TestMCPVersionHeader: every MCP-Protocol-Version is answered as
// docs/agents.md says: a revision spoken, or none, is served; one newer
// than any spoken (a date after 2026-07-28) is the JSON-RPC error -32022
// naming the revisions spoken and the one requested (with or without
// the revision's _meta; a notification, which has no id to answer, gets
// the problem); any other (an older revision, one never published,
// garbage) is 400 invalid_input at MCP-Protocol-Version with the
// revisions spoken as choices; one past 128 bytes is too_long. None in
// the library's words.
func TestMCPVersionHeader(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	spoken := `["2026-07-28","2025-11-25","2025-06-18"]`
	for _, tc := range []struct {
		header, body, want string
	}{
		{"", list, "result"},
		{"2025-06-18", list, "result"},
		{"2025-11-25", list, "result"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + statelessMeta + `}}`, "result"},
		{"2099-01-01", list, "-32022"},
		{"2026-07-29", list, "-32022"},
		{"2099-01-01", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, "-32022"},
		{"2099-01-01", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "not_in_choices"},
		{"2025-03-26", list, "not_in_choices"},
		{"2024-11-05", list, "not_in_choices"},
		{"2026-01-01", list, "not_in_choices"},
		{"zzz", list, "not_in_choices"},
		{"9999", list, "not_in_choices"},
		{"2099-1-01x", list, "not_in_choices"},
		{"latest", list, "not_in_choices"},
		{markerInput, list, "not_in_choices"},
		{strings.Repeat("9", 30<<10), list, "too_long"},
	} {
		h := map[string]string{"MCP-Protocol-Version": tc.header}
		if tc.header >= "2026-07-28" && tc.header < "2027" {
			h["Mcp-Method"] = "tools/list"
		}
		resp, body := mcpPost(t, g, r.ID, r.Token, tc.body, h)
		what := "MCP-Protocol-Version " + strconv.Quote(tc.header[:min(len(tc.header), 20)])
		ownWords(t, what, resp, body)
		if len(body) > 64<<10 {
			t.Errorf("%s: an answer of %d bytes", what, len(body))
		}
		switch tc.want {
		case "result":
			if resp.StatusCode != 200 || !strings.Contains(body, `"tools":[`) {
				t.Errorf("%s: %d %.300s", what, resp.StatusCode, body)
			}
		case "-32022":
			var a rpcAnswer
			want := `{"supported":` + spoken + `,"requested":"` + tc.header + `"}`
			if resp.StatusCode != 400 || json.Unmarshal([]byte(body), &a) != nil || a.Error == nil || a.Error.Code != -32022 || string(a.Error.Data) != want {
				t.Errorf("%s: %d %.300s, want -32022 with %s", what, resp.StatusCode, body, want)
			}
		default:
			_, pointer, reason := mcpProblemOf(t, resp, body)
			if resp.StatusCode != 400 || pointer != "MCP-Protocol-Version" || reason != tc.want || (reason == "not_in_choices" && !strings.Contains(body, `"choices":`+spoken)) {
				t.Errorf("%s: %d %.300s, want %s at MCP-Protocol-Version", what, resp.StatusCode, body, tc.want)
			}
		}
	}
}

// TestMCPNoEcho: a value of 300 KB in any member of a request (the
// version tag, a params string of tools/list or tools/call,
// completion/complete's, initialize's, a _meta member) or 30 KB in
// MCP-Protocol-Version comes back in no answer, under every revision:
// no answer carries more than 128 bytes of it, and none is large.
func TestMCPNoEcho(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	// The suite's marker check sees each answer too.
	big := markerInput + strings.Repeat("Q", 300<<10)
	echo := strings.Repeat("Q", 129)
	type req struct {
		name, body string
		header     map[string]string
	}
	reqs := []req{
		{"jsonrpc", `{"jsonrpc":"` + big + `","id":1,"method":"ping"}`, nil},
		{"tools/list cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + big + `"}}`, nil},
		{"tools/list other param", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + big + `"}}`, nil},
		{"tools/call arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":"` + big + `"}}`, nil},
		{"tools/call argument", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"` + big + `"}}}`, nil},
		{"tools/call unknown member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"` + big + `":1}}}`, nil},
		{"tools/call other param", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{},"task":"` + big + `"}}`, nil},
		{"completion/complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"` + big + `"},"argument":{"name":"` + big[:1000] + `","value":"` + big + `"}}}`, nil},
		{"completion/complete of a resource", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"` + big + `"},"argument":{"name":"a","value":"v"}}}`, nil},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + big + `","capabilities":{},"clientInfo":{"name":"` + big + `","version":"1"}}}`, nil},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x","_meta":{"x":"` + big + `"}}}`, nil},
		{"logging/setLevel", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"` + big + `"}}`, nil},
		{"_meta progressToken", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":"` + big + `"}}}`, nil},
		{"_meta protocolVersion", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + big + `","io.modelcontextprotocol/clientCapabilities":{}}}}`, nil},
		{"_meta protocolVersion under the stateless revision", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + big + `","io.modelcontextprotocol/clientCapabilities":{}}}}`, statelessHeader("tools/list", "")},
		{"_meta capabilities", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"` + big + `"}}}`, statelessHeader("tools/list", "")},
		{"_meta client info", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"` + big + `"}}}}`, statelessHeader("tools/list", "")},
		{"_meta log level", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"` + big + `"}}}`, statelessHeader("tools/list", "")},
		{"MCP-Protocol-Version", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2099-" + big[:30<<10]}},
		{"Mcp-Param header", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + statelessMeta + `,"name":"loom_search","arguments":{"query":"a"}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "loom_search", "Mcp-Param-Query": big[:30<<10]}},
	}
	for _, q := range reqs {
		for _, v := range mcpAllRevisions {
			h := map[string]string{"MCP-Protocol-Version": v}
			if q.header != nil {
				if v != "" {
					continue // the request names its revision
				}
				h = q.header
			}
			resp, body := mcpPost(t, g, r.ID, r.Token, q.body, h)
			what := q.name + " under " + strconv.Quote(v)
			if strings.Contains(body, echo) || len(body) > 64<<10 {
				t.Errorf("%s: %d, an answer of %d bytes echoing the value: %.200s", what, resp.StatusCode, len(body), body)
			}
			for k, vals := range resp.Header {
				if strings.Contains(strings.Join(vals, ","), echo) {
					t.Errorf("%s: header %s echoes the value", what, k)
				}
			}
			ownWords(t, what, resp, body)
		}
	}
}

// TestMCPCacheHints: every result that carries a cache hint (tools/list
// on the direct path and on the library path, server/discover, the
// other list methods) says private, for no longer than the run's
// remaining life, under every revision; two runs with different tools
// get different lists, neither hint public.
func TestMCPCacheHints(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	ttl := int64(600)
	narrow := g.newRun(t, client.CreateRunInput{Tools: &[]client.ToolId{"loom_search"}, TtlSeconds: &ttl})
	wide := g.newRun(t, client.CreateRunInput{TtlSeconds: &ttl})
	created := time.Now()
	lists := map[string]string{}
	for _, r := range []*run{narrow, wide} {
		type req struct {
			name, body string
			header     map[string]string
		}
		var reqs []req
		for _, v := range []string{"", "2025-06-18", "2025-11-25"} {
			h := map[string]string{"MCP-Protocol-Version": v}
			reqs = append(reqs,
				req{"tools/list " + v, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, h},
				req{"tools/list on the library path " + v, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":"p"}}}`, h},
				req{"prompts/list " + v, `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, h},
				req{"resources/list " + v, `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`, h},
				req{"resources/templates/list " + v, `{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}`, h},
			)
		}
		for _, m := range []string{"tools/list", "server/discover", "prompts/list", "resources/list", "resources/templates/list"} {
			reqs = append(reqs, req{m + " 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"` + m + `","params":{` + statelessMeta + `}}`, statelessHeader(m, "")})
		}
		reqs = append(reqs, req{"tools/list 2026-07-28 on the library path", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}`, statelessHeader("tools/list", "")})
		hinted := 0
		for _, q := range reqs {
			resp, body := mcpPost(t, g, r.ID, r.Token, q.body, q.header)
			var a struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &a) != nil {
				t.Errorf("%s: %d %.300s", q.name, resp.StatusCode, body)
				continue
			}
			if a.Result == nil {
				continue // a JSON-RPC error (a method of a capability the face has not)
			}
			hinted++
			var scope string
			var ms int64
			_ = json.Unmarshal(a.Result["cacheScope"], &scope)
			err := json.Unmarshal(a.Result["ttlMs"], &ms)
			left := time.Duration(ttl)*time.Second - time.Since(created)
			if scope != "private" || err != nil || ms <= 0 || time.Duration(ms)*time.Millisecond > left+time.Second {
				t.Errorf("%s: cacheScope %q ttlMs %s, want private and at most the run's remaining %v", q.name, a.Result["cacheScope"], a.Result["ttlMs"], left)
			}
			if strings.HasPrefix(q.name, "tools/list") {
				var names []string
				var tools []struct{ Name string }
				_ = json.Unmarshal(a.Result["tools"], &tools)
				for _, tl := range tools {
					names = append(names, tl.Name)
				}
				lists[r.ID] = strings.Join(names, ",")
			}
		}
		if hinted < 8 {
			t.Errorf("%s: %d results with a cache hint", r.ID, hinted)
		}
	}
	if lists[narrow.ID] == lists[wide.ID] || lists[narrow.ID] != "describe_handle,loom_search,result" {
		t.Errorf("the two runs' lists: %q and %q", lists[narrow.ID], lists[wide.ID])
	}
}

// TestMCPLibraryPathCancels: a client that goes away while its
// tools/call runs cancels the call on the library path too (a _meta
// with a progress token, or naming the revision), under every
// revision: loom is stopped, the call logged cancelled, no handle
// minted.
func TestMCPLibraryPathCancels(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--command-timeout", "30s"}})
	type variant struct{ name, rev, meta string }
	var variants []variant
	for _, v := range []string{"", "2025-06-18", "2025-11-25"} {
		variants = append(variants, variant{"progress token", v, `"_meta":{"progressToken":"p"}`})
	}
	variants = append(variants,
		variant{"_meta naming the revision", "2025-06-18", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}`},
		variant{"_meta naming the revision", "2025-11-25", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`},
		variant{"progress token", "2026-07-28", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`},
		variant{"no _meta", "", `"_meta":{}`},
	)
	payload := fill(toolCases[0].payload)
	for i, vr := range variants {
		name := "slow-" + strconv.Itoa(i)
		g.setBehaviour(t, "case-"+name, behaviour{Stdout: payload, Sleep: "15s"})
		r := g.workRun(t)
		h := map[string]string{"MCP-Protocol-Version": vr.rev}
		if vr.rev == "2026-07-28" {
			h = statelessHeader("tools/call", "loom_search")
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + vr.meta + `,"name":"loom_search","arguments":{"query":"case=` + name + `"}}}`
		cctx, cancel := context.WithCancel(ctx(t))
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(cctx, http.MethodPost, g.AgentURL+"/v1/runs/"+r.ID+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+r.Token)
			for k, v := range h {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		g.waitLoomCall(t, name)
		time.Sleep(400 * time.Millisecond)
		left := time.Now()
		cancel()
		<-done
		what := vr.name + " under " + strconv.Quote(vr.rev)
		var c client.CallRecord
		found := false
		for time.Since(left) < 5*time.Second && !found {
			for _, rec := range r.calls(t) {
				if rec.Status != "" {
					c, found = rec, true
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		switch {
		case !found:
			t.Errorf("%s: the call is still running 5s after its client left, want cancelled", what)
		case deref(c.Code) != "cancelled":
			t.Errorf("%s: the call is %s %s after its client left, want cancelled", what, c.Status, deref(c.Code))
		}
		if s := r.summary(t); s.Handles != 0 {
			t.Errorf("%s: %d handles minted", what, s.Handles)
		}
	}
}
