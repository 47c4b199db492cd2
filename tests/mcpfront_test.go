package tests

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/api/client"
)

// mcpRevisions are the revisions the gateway speaks (docs/agents.md).
var mcpRevisions = []string{"2026-07-28", "2025-11-25", "2025-06-18"}

// agentDo sends one request to the agent listener (a non-empty body as
// JSON, token as a bearer token, then header: a value sets the header,
// Host the request's host, an empty value deletes it) and returns the
// response (its body read) and the body.
func agentDo(t *testing.T, g *gateway, method, path, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx(t), method, g.AgentURL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		switch {
		case v == "":
			req.Header.Del(k)
		case strings.EqualFold(k, "Host"):
			req.Host = v
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := mcpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

// mcpPost sends one raw request to run's MCP endpoint: the headers a
// streamable client sends (Content-Type even with no body), then header
// as agentDo reads it.
func mcpPost(t *testing.T, g *gateway, runID, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	maps.Copy(h, header)
	return agentDo(t, g, http.MethodPost, "/v1/runs/"+runID+"/mcp", token, body, h)
}

// noLoomCalls fails the test if the gateway started any loom process
// for what.
func noLoomCalls(t *testing.T, g *gateway, what string) {
	t.Helper()
	if n := len(g.loomCalls(t)); n != 0 {
		t.Errorf("%s started %d loom processes", what, n)
	}
}

// mcpProblemOf reads a problem body, failing unless resp is one.
func mcpProblemOf(t *testing.T, resp *http.Response, body string) (code, pointer, reason string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%d %q %s: not a problem", resp.StatusCode, ct, body)
		return "", "", ""
	}
	var p struct {
		Code    string
		Pointer string
		Errors  []struct{ Reason string }
	}
	_ = json.Unmarshal([]byte(body), &p)
	if len(p.Errors) > 0 {
		reason = p.Errors[0].Reason
	}
	return p.Code, p.Pointer, reason
}

// TestMCPBatchRefused: a JSON-RPC batch is refused with 400 as a problem
// under every revision, one the gateway does not speak, and none at all;
// no call of it runs.
func TestMCPBatchRefused(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"batched"}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	for _, v := range append([]string{"", "2024-11-05", "2025-03-26"}, mcpRevisions...) {
		resp, body := mcpPost(t, g, r.ID, r.Token, batch, map[string]string{"MCP-Protocol-Version": v})
		code, _, reason := mcpProblemOf(t, resp, body)
		if v == "2024-11-05" || v == "2025-03-26" {
			reason = "wrong_type" // refused for its revision first
		}
		if resp.StatusCode != http.StatusBadRequest || code != "invalid_input" || reason != "wrong_type" || strings.Contains(body, "jsonrpc") {
			t.Errorf("a batch under %q: %d %s", v, resp.StatusCode, body)
		}
	}
	noLoomCalls(t, g, "batches")
}

// TestMCPEchoBounded: a name longer than the gateway's bound (a method,
// a tool name, an id, the Mcp-Name header) is refused as too_long at its
// place, and no answer carries it; an unknown name within the bound is
// answered as the protocol says.
func TestMCPEchoBounded(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	long := strings.Repeat("x", 900<<10)
	cases := []struct {
		name, body, pointer string
		header              map[string]string
	}{
		{"method", `{"jsonrpc":"2.0","id":1,"method":"` + long + `"}`, "/method", nil},
		{"tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + long + `","arguments":{}}}`, "/params/name", nil},
		{"id", `{"jsonrpc":"2.0","id":"` + long + `","method":"ping"}`, "/id", nil},
		{"numeric id", `{"jsonrpc":"2.0","id":1` + strings.Repeat("0", 200) + `,"method":"ping"}`, "/id", nil},
		{"Mcp-Name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"a"}}}`, "Mcp-Name",
			map[string]string{"Mcp-Name": strings.Repeat("y", 4096), "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}},
	}
	for _, tc := range cases {
		for _, v := range []string{"", "2025-06-18", "2026-07-28"} {
			h := map[string]string{"MCP-Protocol-Version": v}
			maps.Copy(h, tc.header)
			resp, body := mcpPost(t, g, r.ID, r.Token, tc.body, h)
			code, pointer, reason := mcpProblemOf(t, resp, body)
			if resp.StatusCode != http.StatusBadRequest || code != "invalid_input" || pointer != tc.pointer || reason != "too_long" || len(body) > 2048 {
				t.Errorf("%s under %q: %d %.300s", tc.name, v, resp.StatusCode, body)
			}
		}
	}
	// Within the bound, the SDK answers an unknown tool as a JSON-RPC
	// error naming it.
	name := strings.Repeat("z", 128)
	resp, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`,
		map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"error"`) || len(body) > 1024 {
		t.Errorf("an unknown tool of 128 bytes: %d %s", resp.StatusCode, body)
	}
	noLoomCalls(t, g, "names refused or unknown")
}

// TestMCPTransportProblems: every refusal of the transport is a problem
// with a code of the one table, never the SDK's text; the SDK's loopback
// Host check is not the gateway's rule, so a request naming the host (a
// proxy, a sandbox) is answered as on REST.
func TestMCPTransportProblems(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	v := map[string]string{"MCP-Protocol-Version": "2025-06-18"}
	with := func(extra map[string]string) map[string]string {
		h := maps.Clone(v)
		maps.Copy(h, extra)
		return h
	}
	cases := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   string
	}{
		{"no Accept", ping, with(map[string]string{"Accept": ""}), 400, "invalid_input"},
		{"Accept JSON only", ping, with(map[string]string{"Accept": "application/json"}), 400, "invalid_input"},
		{"no Content-Type", ping, with(map[string]string{"Content-Type": ""}), 415, "unsupported_media_type"},
		{"text Content-Type", ping, with(map[string]string{"Content-Type": "text/plain"}), 415, "unsupported_media_type"},
		{"unspoken revision", ping, with(map[string]string{"MCP-Protocol-Version": "2025-03-26"}), 400, "invalid_input"},
		{"unknown revision", ping, with(map[string]string{"MCP-Protocol-Version": "1999-01-01"}), 400, "invalid_input"},
		{"empty body", "", v, 400, "invalid_input"},
		{"a number", "7", v, 400, "invalid_input"},
		{"a browser Origin", ping, with(map[string]string{"Origin": "http://evil.example"}), 403, "origin_not_allowed"},
	}
	for _, tc := range cases {
		resp, body := mcpPost(t, g, r.ID, r.Token, tc.body, tc.header)
		code, _, _ := mcpProblemOf(t, resp, body)
		if resp.StatusCode != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
	// No MCP-Protocol-Version: answered (the transport's default framing).
	if resp, body := mcpPost(t, g, r.ID, r.Token, ping, nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("a ping without MCP-Protocol-Version: %d %s", resp.StatusCode, body)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		resp, body := agentDo(t, g, m, "/v1/runs/"+r.ID+"/mcp", r.Token, "", map[string]string{"Accept": "text/event-stream"})
		if code, _, _ := mcpProblemOf(t, resp, body); resp.StatusCode != 405 || code != "method_not_allowed" || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: %d %s Allow %q", m, resp.StatusCode, body, resp.Header.Get("Allow"))
		}
	}
	// A Host that names the gateway by another name: the same answer as
	// REST's, on both faces.
	for _, host := range []string{"loom-gateway.internal:8080", "10.213.0.1:8080", "gateway"} {
		resp, body := mcpPost(t, g, r.ID, r.Token, ping, with(map[string]string{"Host": host}))
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Errorf("MCP with Host %s: %d %s", host, resp.StatusCode, body)
		}
		if resp, _ := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools", r.Token, "", map[string]string{"Host": host}); resp.StatusCode != http.StatusOK {
			t.Errorf("REST with Host %s: %d", host, resp.StatusCode)
		}
	}
}

// TestMCPRevisions: the SDK's own client speaks every revision the
// gateway speaks (discover at 2026-07-28, initialize before it), lists
// the run's tools and calls one; an initialize asking for a revision the
// gateway does not speak is answered with one it does.
func TestMCPRevisions(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, commandOf(toolCases[0].tool), behaviour{Stdout: fill(toolCases[0].payload)})
	r := g.workRun(t)
	for _, v := range mcpRevisions {
		t.Run(v, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			tr := &mcp.StreamableClientTransport{
				Endpoint:             g.AgentURL + "/v1/runs/" + r.ID + "/mcp",
				HTTPClient:           &http.Client{Transport: bearerTransport{r.Token, http.DefaultTransport}, Timeout: 30 * time.Second},
				DisableStandaloneSSE: true,
				MaxRetries:           -1,
			}
			s, err := c.Connect(ctx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.InitializeResult().ProtocolVersion; got != v {
				t.Errorf("negotiated %s", got)
			}
			if v < "2026-07-28" {
				if err := s.Ping(ctx(t), nil); err != nil {
					t.Errorf("ping: %v", err)
				}
			}
			list, err := s.ListTools(ctx(t), nil)
			if err != nil || len(list.Tools) != 10 {
				t.Fatalf("tools/list: %v", err)
			}
			res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: json.RawMessage(toolCases[0].body)})
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %+v", err, res)
			}
			if _, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_serch", Arguments: map[string]any{}}); err == nil {
				t.Error("an unknown tool: no error")
			}
		})
	}
	initialize := func(v string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	}
	for _, v := range []string{"2024-11-05", "2025-03-26"} {
		_, body := mcpPost(t, g, r.ID, r.Token, initialize(v), nil)
		if !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
			t.Errorf("initialize at %s: %s", v, body)
		}
	}
}
