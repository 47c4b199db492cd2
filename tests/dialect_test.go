package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// TestToolDialects: GET .../tools gives each provider's reading of the
// input schemas on ?dialect=; the default states loom_search's "query or
// person" in words, with no if/then (and so does tools/list); an unknown
// dialect is refused.
func TestToolDialects(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	get := func(q string) (int, string) {
		resp, body := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools"+q, r.Token, "", nil)
		return resp.StatusCode, body
	}
	if code, body := get(""); code != 200 || !strings.Contains(body, "Required unless `person` is given.") || strings.Contains(body, `"if"`) || strings.Contains(body, "YYYY-MM- DD") {
		t.Errorf("default: %d %.400s", code, body)
	}
	if code, body := get("?dialect=openai"); code != 200 || strings.Count(body, `"strict":true`) != 10 || strings.Contains(body, `"minLength"`) || strings.Contains(body, `"if"`) {
		t.Errorf("openai: %d %.400s", code, body)
	}
	if code, body := get("?dialect=gemini"); code != 200 || strings.Contains(body, "additionalProperties") || !strings.Contains(body, `"propertyOrdering"`) {
		t.Errorf("gemini: %d %.400s", code, body)
	}
	if code, body := get("?dialect=anthropic"); code != 200 || !strings.Contains(body, "Required unless `query` is given.") || strings.Contains(body, `"if"`) {
		t.Errorf("anthropic: %d %.400s", code, body)
	}
	if code, body := get("?dialect=cohere"); code != 400 || !strings.Contains(body, `"invalid_input"`) {
		t.Errorf("unknown dialect: %d %s", code, body)
	}
	_, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if !strings.Contains(body, "Required unless `person` is given.") || strings.Contains(body, `"if"`) {
		t.Errorf("tools/list: loom_search states no query-or-person rule")
	}
}

// TestToolDialectsOverMCP: the MCP URL takes the same ?dialect= as GET
// .../tools, and tools/list then gives, on every revision and on both
// paths (the direct path's kept result and the SDK's), the very input
// schemas (and strictness) the REST route gives in that dialect, so the
// provider rules internal/tooldef holds the dialects to hold on both
// faces; catalogs of different dialects are never mixed; an unknown
// dialect is refused as REST refuses it.
func TestToolDialectsOverMCP(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	mcpList := func(q, revision string) (int, string) {
		h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		if revision == "2026-07-28" {
			h["Mcp-Method"] = "tools/list"
			body = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		}
		if revision != "" {
			h["MCP-Protocol-Version"] = revision
		}
		resp, out := agentDo(t, g, http.MethodPost, "/v1/runs/"+r.ID+"/mcp"+q, r.Token, body, h)
		return resp.StatusCode, out
	}
	type tool struct {
		Name        string
		InputSchema json.RawMessage
		Strict      *bool
	}
	inputs := func(tools []tool) map[string]string {
		m := map[string]string{}
		for _, tl := range tools {
			var v any
			_ = json.Unmarshal(tl.InputSchema, &v)
			b, _ := json.Marshal(v)
			m[tl.Name] = string(b)
		}
		return m
	}
	for _, dialect := range []string{"", "anthropic", "openai", "gemini", "openai", ""} {
		q := ""
		if dialect != "" {
			q = "?dialect=" + dialect
		}
		resp, body := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools"+q, r.Token, "", nil)
		var rest struct{ Tools []tool }
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &rest) != nil || len(rest.Tools) != 10 {
			t.Fatalf("GET tools%s: %d %.300s", q, resp.StatusCode, body)
		}
		want := inputs(rest.Tools)
		for _, revision := range []string{"", "2025-06-18", "2025-11-25", "2026-07-28"} {
			for i := 0; i < 2; i++ { // the first answer is the SDK's, the second kept
				code, out := mcpList(q, revision)
				var m struct{ Result struct{ Tools []tool } }
				if code != 200 || json.Unmarshal([]byte(out), &m) != nil {
					t.Fatalf("tools/list%s under %q: %d %.300s", q, revision, code, out)
				}
				got := inputs(m.Result.Tools)
				if len(got) != len(want) {
					t.Fatalf("tools/list%s under %q: %d tools, REST %d", q, revision, len(got), len(want))
				}
				for name, s := range want {
					if got[name] != s {
						t.Errorf("tools/list%s under %q: %s's input schema\n mcp  %s\n rest %s", q, revision, name, got[name], s)
					}
				}
			}
		}
	}
	_, rest := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools?dialect=cohere", r.Token, "", nil)
	for _, q := range []string{"?dialect=cohere", "?dialect=openai&dialect=gemini", "?dialect="} {
		resp, body := agentDo(t, g, http.MethodPost, "/v1/runs/"+r.ID+"/mcp"+q, r.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
		code, pointer, _ := mcpProblemOf(t, resp, body)
		if resp.StatusCode != 400 || code != "invalid_input" || pointer != "dialect" {
			t.Errorf("MCP %s: %d %s (REST answers %s)", q, resp.StatusCode, body, rest)
		}
		if q == "?dialect=cohere" && withoutRequestID(body) != withoutRequestID(rest) {
			t.Errorf("MCP %s answers %s, REST %s", q, body, rest)
		}
	}
	if !strings.Contains(rest, `"pointer":"dialect"`) {
		t.Errorf("REST unknown dialect: %s", rest)
	}
}

// withoutRequestID is a problem body without its requestId, as JSON.
func withoutRequestID(body string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	delete(m, "requestId")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestOpenAIDialectNullsOverMCP: under ?dialect=openai a tools/call's
// null optional members (what a strict model sends for one it leaves out)
// are dropped, on the direct path and the SDK's (a progress token sends a
// call there); a required member's null is still refused, and without the
// dialect a null member is refused as on REST.
func TestOpenAIDialectNullsOverMCP(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	call := func(q, meta, args string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `"name":"loom_search","arguments":` + args + `}}`
		_, out := agentDo(t, g, http.MethodPost, "/v1/runs/"+r.ID+"/mcp"+q, r.Token, body,
			map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
		return out
	}
	nulls := `{"query":"atlas","person":null,"sources":null,"since":null,"until":null,"tz":null,"limit":null,"rank":null}`
	for _, meta := range []string{"", `"_meta":{"progressToken":"p1"},`} {
		// Past the validator, the call ran (this test's loom has no
		// scenario, so the command's answer is whatever it is).
		if out := call("?dialect=openai", meta, nulls); strings.Contains(out, `invalid_input`) || !strings.Contains(out, `outputId`) {
			t.Errorf("openai, nulls for the optional members (meta %q): %.400s", meta, out)
		}
		if out := call("?dialect=openai", meta, `{"query":null,"person":null}`); !strings.Contains(out, `"isError":true`) || !strings.Contains(out, `null_not_allowed`) && !strings.Contains(out, `one_of_required`) {
			t.Errorf("openai, only nulls (meta %q): %.400s", meta, out)
		}
		if out := call("", meta, nulls); !strings.Contains(out, `"isError":true`) || !strings.Contains(out, `null_not_allowed`) {
			t.Errorf("no dialect, nulls (meta %q): %.400s", meta, out)
		}
	}
}
