package mcpface_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store"
)

// mcpRequest is one request of the equivalence test.
type mcpRequest struct {
	name     string
	run      string
	revision string            // MCP-Protocol-Version; "" sends none
	header   map[string]string // more headers
	body     string            // $HANDLE is the side's own handle
	cancel   bool              // the client goes away while the call runs
}

// send sends req to g's MCP face, with handle for $HANDLE.
func (g *mcpGateway) send(req mcpRequest, handle string) *httptest.ResponseRecorder {
	body := strings.ReplaceAll(req.body, "$HANDLE", handle)
	r := httptest.NewRequest(http.MethodPost, "/v1/runs/"+req.run+"/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer "+g.tokens[req.run])
	if req.revision != "" {
		r.Header.Set("MCP-Protocol-Version", req.revision)
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	if req.cancel {
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(context.WithValue(ctx, cancelKey{}, cancel))
	}
	rec := httptest.NewRecorder()
	g.agent.ServeHTTP(rec, r)
	return rec
}

// cancelKey holds, in a request's context, the cancel of its client's
// going away, which the blocking loom calls.
type cancelKey struct{}

// cancellingLoom answers as the sample loom, except that for a request
// that carries a cancelKey the client goes away while loom runs: loom
// answers cancelled when the call is cancelled (as loom.CLI does), and
// at once if it is not within two seconds.
func cancellingLoom(ctx context.Context, argv, env []string) (loomref.Output, error) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
		select {
		case <-ctx.Done():
			return loomref.Output{}, loom.ErrCancelled
		case <-time.After(2 * time.Second):
		}
	}
	return loomtest.Sample(ctx, argv, env)
}

var (
	handleText = regexp.MustCompile(`cfh:v:[A-Za-z0-9_-]+`)
	requestID  = regexp.MustCompile(`(\\*"requestId\\*":\s*\\*")[^"\\]*`)
)

// normal is an answer's body with what differs between two gateways
// (handles, request ids) replaced, parsed when it is JSON.
func normal(body []byte) any {
	s := handleText.ReplaceAllString(string(body), "cfh:v:H")
	s = requestID.ReplaceAllString(s, "${1}ID")
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	return v
}

// TestMCPDirectIsSDK: every request answered on the MCP face's direct
// path is answered as the SDK handler answers it, under every revision
// spoken and none: the status, the headers a client reads, the body (as
// JSON, handles and request ids aside), and what the call leaves in the
// call log. Both sides are the listener's answers (its checks and the
// guard that puts the SDK's refusals in its words), the direct path on
// and off: no answer of either is in the SDK's words.
func TestMCPDirectIsSDK(t *testing.T) {
	t.Parallel()
	setup := func(sdkOnly bool) (*mcpGateway, string) {
		g := newMCPGateway(t, gatewayOptions{RunFunc: cancellingLoom}, sdkOnly, func(d *testDeps) {
			d.RunRate = store.Rate{PerSecond: 0.001, Burst: 3}
		})
		g.run(t, "r", "")
		g.run(t, "ended", "")
		g.run(t, "limited", "")
		g.run(t, "narrow", `,"tools":["loom_search"]`)
		handle := g.searchHandle(t, "r", "mail:2026-02-27:atlas-launch-checklist")
		if handle == "" {
			t.Fatal("no handle")
		}
		wantStatus(t, g.hostDo(http.MethodDelete, "/host/v1/runs/ended", ""), http.StatusNoContent)
		return g, handle
	}
	direct, directHandle := setup(false)
	sdk, sdkHandle := setup(true)

	var reqs []mcpRequest
	ids := []string{`1`, `0`, `-7`, `123456789012345`, `"a"`, `"é<\"x\">"`, `""`, `1.5`, `1e2`, `1234567890123456789`, `null`, `true`, `{}`}
	for _, rev := range []string{"", "2025-06-18", "2025-11-25", "2026-07-28"} {
		add := func(name, body string) {
			reqs = append(reqs, mcpRequest{name: rev + " " + name, run: "r", revision: rev, body: body})
		}
		for _, id := range ids {
			add("ping id "+id, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
			add("tools/list id "+id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`)
			add("describe_handle id "+id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"describe_handle","arguments":{"token":"$HANDLE"}}}`)
		}
		for _, c := range []struct{ name, body string }{
			{"ping without id", `{"jsonrpc":"2.0","method":"ping"}`},
			{"ping params {}", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}`},
			{"ping params null", `{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`},
			{"ping params []", `{"jsonrpc":"2.0","id":2,"method":"ping","params":[]}`},
			{"ping params other", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":1}}`},
			{"ping _meta", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`},
			{"ping _meta null", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":null}}`},
			{"ping _meta not an object", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":5}}`},
			{"ping progress token", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"progressToken":"p"}}}`},
			{"ping _meta protocolVersion", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`},
			{"ping other version tag", `{"jsonrpc":"1.0","id":2,"method":"ping"}`},
			{"ping other member", `{"jsonrpc":"2.0","id":2,"method":"ping","x":1}`},
			{"ping cased member", `{"jsonrpc":"2.0","id":2,"Method":"ping"}`},
			{"tools/list cursor", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x"}}`},
			{"tools/list _meta", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{}}}`},
			{"loom_search", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas"}}}`},
			{"loom_search _meta", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"x":1},"name":"loom_search","arguments":{"query":"atlas"}}}`},
			{"loom_search progress token", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"loom_search","arguments":{"query":"atlas"}}}`},
			{"tool error", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"loom_search","arguments":{}}}`},
			{"bad arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":5,"x":true}}}`},
			{"arguments a string", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"describe_handle","arguments":"x"}}`},
			{"arguments null", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"describe_handle","arguments":null}}`},
			{"no arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"describe_handle"}}`},
			{"unknown tool", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`},
			{"no name", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}`},
			{"name a number", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":5}}`},
			{"no params", `{"jsonrpc":"2.0","id":6,"method":"tools/call"}`},
			{"params other", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"describe_handle","arguments":{"token":"x"},"requestState":"s"}}`},
			{"initialize", `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
			{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
			{"unknown method", `{"jsonrpc":"2.0","id":8,"method":"nope"}`},
			{"server/discover", `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		} {
			add(c.name, c.body)
		}
		reqs = append(reqs,
			mcpRequest{name: rev + " last event id", run: "r", revision: rev, header: map[string]string{"Last-Event-ID": "x"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
			mcpRequest{name: rev + " a session id", run: "r", revision: rev, header: map[string]string{"Mcp-Session-Id": "s"}, body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
			mcpRequest{name: rev + " another Mcp-Method", run: "r", revision: rev, header: map[string]string{"Mcp-Method": "ping", "Mcp-Name": "x"}, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_handle","arguments":{"token":"$HANDLE"}}}`},
			mcpRequest{name: rev + " result", run: "r", revision: rev, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"result","arguments":{"value":{"cites":["$HANDLE"]}}}}`},
			mcpRequest{name: rev + " tool the run may not call", run: "narrow", revision: rev, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_timeline","arguments":{}}}`},
			mcpRequest{name: rev + " narrow tools/list", run: "narrow", revision: rev, body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
			mcpRequest{name: rev + " ended run", run: "ended", revision: rev, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas"}}}`},
			mcpRequest{name: rev + " ended run ping", run: "ended", revision: rev, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		)
		for i := range 5 { // the run's bucket holds 3 calls: the rest are rate limited
			reqs = append(reqs, mcpRequest{name: rev + " rate limited " + string(rune('0'+i)), run: "limited", revision: rev,
				body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas"}}}`})
		}
		// 2026-07-28 as its clients send it: the headers and _meta.
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
		for _, c := range []struct{ name, method, tool, body string }{
			{"stateless tools/list", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`},
			{"stateless describe_handle", "tools/call", "describe_handle", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"describe_handle","arguments":{"token":"$HANDLE"}}}`},
			{"stateless ping", "ping", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta + `}}`},
			{"stateless header mismatch", "tools/list", "describe_handle", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"describe_handle","arguments":{"token":"$HANDLE"}}}`},
		} {
			h := map[string]string{"Mcp-Method": c.method}
			if c.tool != "" {
				h["Mcp-Name"] = c.tool
			}
			reqs = append(reqs, mcpRequest{name: rev + " " + c.name, run: "r", revision: rev, header: h, body: c.body})
		}
	}
	// Every request again as a 2026-07-28 client sends it.
	for _, req := range slices.Clone(reqs) {
		if req.revision == "2026-07-28" {
			if sr, ok := asStateless(req); ok {
				reqs = append(reqs, sr)
			}
		}
	}
	for _, c := range []struct{ name, meta string }{
		{"capabilities not an object", `"io.modelcontextprotocol/capabilities":5`},
		{"capabilities of the wrong shape", `"io.modelcontextprotocol/clientCapabilities":{"roots":5}`},
		{"capabilities null", `"io.modelcontextprotocol/clientCapabilities":null`},
		{"no capabilities", `"x":1`},
		{"client info null", `"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null`},
		{"client info of the wrong shape", `"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":5}`},
		{"capabilities in full", `"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{},"experimental":{"x":{}}}`},
		{"progress token", `"io.modelcontextprotocol/clientCapabilities":{},"progressToken":1`},
		{"log level", `"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"`},
	} {
		for _, v := range []string{"2026-07-28", "2025-06-18", ""} {
			reqs = append(reqs, mcpRequest{name: "stateless " + c.name + " " + v, run: "r", revision: "2026-07-28",
				header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "describe_handle"},
				body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `",` + c.meta + `},"name":"describe_handle","arguments":{"token":"$HANDLE"}}}`})
		}
	}
	reqs = append(reqs,
		mcpRequest{name: "stateless no Mcp-Name", run: "r", revision: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/call"},
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"describe_handle","arguments":{}}}`},
		mcpRequest{name: "stateless other Mcp-Name", run: "r", revision: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "loom_search"},
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"describe_handle","arguments":{}}}`},
	)

	for _, req := range reqs {
		got, want := direct.send(req, directHandle), sdk.send(req, sdkHandle)
		if got.Code != want.Code {
			t.Errorf("%s: status %d, SDK %d (%s)", req.name, got.Code, want.Code, want.Body)
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "Mcp-Session-Id", "Allow", "Retry-After"} {
			if g, w := got.Header().Values(h), want.Header().Values(h); !cmp.Equal(g, w) {
				t.Errorf("%s: %s %q, SDK %q", req.name, h, g, w)
			}
		}
		if diff := cmp.Diff(normal(want.Body.Bytes()), normal(got.Body.Bytes())); diff != "" {
			t.Errorf("%s: body (-SDK +direct):\n%s", req.name, diff)
		}
		if !ownWords(want) {
			t.Errorf("%s: %d %s: not the listener's words", req.name, want.Code, want.Body)
		}
	}
	for _, run := range []string{"r", "limited", "narrow"} {
		got, want := direct.hostDo(http.MethodGet, "/host/v1/runs/"+run+"/calls", ""), sdk.hostDo(http.MethodGet, "/host/v1/runs/"+run+"/calls", "")
		if diff := cmp.Diff(normal(want.Body.Bytes()), normal(got.Body.Bytes())); diff != "" {
			t.Errorf("call log of %s (-SDK +direct):\n%s", run, diff)
		}
	}
	audit := auditRecords(sdk.logs.String())
	if len(audit) < 10 {
		t.Errorf("%d audit records from the SDK's calls", len(audit))
	}
	if diff := cmp.Diff(audit, auditRecords(direct.logs.String())); diff != "" {
		t.Errorf("audit records (-SDK +direct):\n%s", diff)
	}
}

// ownWords reports whether an answer is the listener's: a problem, a
// JSON-RPC result, an error with one of the face's messages, or an empty
// 202.
func ownWords(rec *httptest.ResponseRecorder) bool {
	switch rec.Header().Get("Content-Type") {
	case "application/problem+json":
		return true
	case "application/json":
		var a struct {
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if json.Unmarshal(rec.Body.Bytes(), &a) != nil {
			return false
		}
		if a.Error == nil {
			return len(a.Result) > 0
		}
		for _, p := range []string{"Method not found: ", "Unknown tool ", "Invalid params: ", "Header mismatch: ", "Unsupported protocol version: ", "Run ended: "} {
			if strings.HasPrefix(a.Error.Message, p) {
				return true
			}
		}
		return false
	}
	return rec.Code == http.StatusAccepted && rec.Body.Len() == 0
}

// asStateless is req as a 2026-07-28 client sends it: the protocol
// version and the client's capabilities in params' _meta, the method
// (and tool) in headers; false for a body that has no params object to
// put them in.
func asStateless(req mcpRequest) (mcpRequest, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(req.body), &m) != nil {
		return req, false
	}
	params, ok := m["params"].(map[string]any)
	if _, present := m["params"]; present && !ok {
		return req, false
	}
	if params == nil {
		params = map[string]any{}
	}
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
	meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
	params["_meta"] = meta
	m["params"] = params
	b, _ := json.Marshal(m)
	h := map[string]string{}
	if method, ok := m["method"].(string); ok {
		h["Mcp-Method"] = method
	}
	if name, ok := params["name"].(string); ok {
		h["Mcp-Name"] = name
	}
	maps.Copy(h, req.header)
	req.name += " as sent"
	req.header, req.body = h, string(b)
	return req, true
}

// auditRecords are the audit records in logs, without what differs
// between two gateways (time, durations, request ids, handles).
func auditRecords(logs string) []any {
	var out []any
	for line := range strings.SplitSeq(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "audit" {
			continue
		}
		for _, k := range []string{"time", "durationMs", "requestId", "duration"} {
			delete(rec, k)
		}
		out = append(out, normal([]byte(handleText.ReplaceAllString(mustJSON(rec), "cfh:v:H"))))
	}
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMCPClientGoneCancels: a client that goes away while its tools/call
// runs cancels the call, under every revision, as on REST, on the direct
// path and on the SDK's (a _meta with a progress token, or naming the
// revision): the call log says cancelled. (The SDK handler runs a call
// under a context of its own before 2026-07-28; the face ties it to the
// request's.) The call log says error, code cancelled.
func TestMCPClientGoneCancels(t *testing.T) {
	t.Parallel()
	g := newMCPGateway(t, gatewayOptions{RunFunc: cancellingLoom}, false, nil)
	g.run(t, "r", "")
	type sent struct{ what, revision, meta string }
	var reqs []sent
	for _, rev := range []string{"", "2025-06-18", "2025-11-25"} {
		reqs = append(reqs, sent{"direct", rev, ""}, sent{"progress token", rev, `"_meta":{"progressToken":1},`})
	}
	reqs = append(reqs,
		sent{"_meta naming the revision", "2025-06-18", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"},`},
		sent{"_meta naming the revision", "2025-11-25", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},`})
	for _, req := range reqs {
		g.send(mcpRequest{run: "r", revision: req.revision, cancel: true,
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + req.meta + `"name":"loom_search","arguments":{"query":"atlas"}}}`}, "")
	}
	calls := g.calls(t, "r")
	if len(calls) != len(reqs) {
		t.Fatalf("%d calls, want %d", len(calls), len(reqs))
	}
	for i, c := range calls {
		if c.Code == nil || *c.Code != "cancelled" {
			t.Errorf("%s under %q: call %s is %s, want code cancelled", reqs[i].what, reqs[i].revision, c.OutputID, c.Status)
		}
	}
}
