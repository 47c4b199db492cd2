package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/api/client"
)

// TestRunEnded: the token of a deleted or expired run is told, on both
// faces, that the run is over and retrying will not help: REST 410
// run_ended; MCP a tool result with isError (through the SDK's own
// client too) or a JSON-RPC error carrying the text. A token that never
// opened the run the path names, or none at all, learns nothing new.
func TestRunEnded(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	deleted := g.workRun(t)
	live := g.workRun(t)
	s, err := mcpSession(t, g, deleted.ID, deleted.Token)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := g.hostClient(t).DeleteRunWithResponse(ctx(t), deleted.ID); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v", err)
	}
	ttl := int64(1)
	expired := g.newRun(t, client.CreateRunInput{TtlSeconds: &ttl})
	time.Sleep(1500 * time.Millisecond)

	for name, r := range map[string]*run{"deleted": deleted, "expired": expired} {
		resp, body := agentDo(t, g, http.MethodPost, "/v1/runs/"+r.ID+"/loom_search", r.Token, `{"query":"atlas"}`, nil)
		if resp.StatusCode != http.StatusGone || !strings.Contains(body, `"code":"run_ended"`) || !strings.Contains(body, "retrying will not help") {
			t.Errorf("%s, REST: %d %s", name, resp.StatusCode, body)
		}
		// MCP: a tool call is a tool result the model reads.
		call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas"}}}`
		resp, body = mcpPost(t, g, r.ID, r.Token, call, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
		var rpc struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct{ Text string }
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &rpc); err != nil || resp.StatusCode != http.StatusOK || rpc.ID != 7 || !rpc.Result.IsError ||
			len(rpc.Result.Content) != 1 || !strings.Contains(rpc.Result.Content[0].Text, "retrying will not help") {
			t.Errorf("%s, MCP tools/call: %d %s", name, resp.StatusCode, body)
		}
		// Any other request: a JSON-RPC error with the text.
		resp, body = mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"error":{"code":-32010`) || !strings.Contains(body, "retrying will not help") {
			t.Errorf("%s, MCP tools/list: %d %s", name, resp.StatusCode, body)
		}
	}
	// Under the stateless revision the result has its result type (agent
	// SDKs refuse a result without one).
	call := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas"}}}`
	if resp, body := mcpPost(t, g, deleted.ID, deleted.Token, call, map[string]string{"MCP-Protocol-Version": "2026-07-28"}); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, `"result":{"resultType":"complete",`) || !strings.Contains(body, `"isError":true`) {
		t.Errorf("2026-07-28 tools/call: %d %s", resp.StatusCode, body)
	}
	// The SDK's client, connected before the delete, hands the model the
	// text.
	res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: map[string]any{"query": "atlas"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"code":"run_ended"`) {
		t.Errorf("the SDK's client after the delete: %v %+v", err, res)
	}

	// The ended token on another run's path, a stranger's token, no
	// token: 401 as before, naming the scheme.
	cases := []struct {
		name, path, token, auth string
	}{
		{"ended token, another run", "/v1/runs/" + live.ID + "/loom_search", deleted.Token, `Bearer error="invalid_token"`},
		{"a stranger's token", "/v1/runs/" + deleted.ID + "/loom_search", strings.Repeat("a", 43), `Bearer error="invalid_token"`},
		{"no token", "/v1/runs/" + deleted.ID + "/loom_search", "", "Bearer"},
		{"a stranger's token, MCP", "/v1/runs/" + deleted.ID + "/mcp", strings.Repeat("b", 43), `Bearer error="invalid_token"`},
	}
	for _, tc := range cases {
		resp, body := agentDo(t, g, http.MethodPost, tc.path, tc.token, `{"query":"atlas"}`, nil)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "run_ended") || resp.Header.Get("WWW-Authenticate") != tc.auth {
			t.Errorf("%s: %d %q %s", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	noLoomCalls(t, g, "ended runs")
}

// TestNoOAuthDiscovery: the OAuth and OpenID discovery documents answer
// 404 without a token, at the root and under a path, so that a client
// following the MCP authorization spec stops looking for OAuth.
func TestNoOAuthDiscovery(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	for _, p := range []string{
		"/.well-known/oauth-protected-resource",
		"/.well-known/oauth-protected-resource/v1/runs/" + r.ID + "/mcp",
		"/.well-known/oauth-authorization-server",
		"/.well-known/oauth-authorization-server/v1/runs/" + r.ID + "/mcp",
		"/.well-known/openid-configuration",
		"/.well-known/openid-configuration/v1/runs/" + r.ID + "/mcp",
		"/v1/runs/" + r.ID + "/mcp/.well-known/openid-configuration",
	} {
		resp, body := agentDo(t, g, http.MethodGet, p, "", "", nil)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code":"route_not_found"`) {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
}

// TestHostAndOriginRule: one rule for both faces. Without
// --allowed-hosts any Host is answered; with it, another Host answers
// 421 host_not_allowed on REST and MCP alike (a port is not part of the
// name), /healthz whatever the Host. A browser Origin is refused on both
// faces.
func TestHostAndOriginRule(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--allowed-hosts=loom-gateway.internal", "--allowed-hosts=127.0.0.1"}})
	r := g.newRun(t, client.CreateRunInput{})
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"loom-gateway.internal:8080", 200},
		{"LOOM-GATEWAY.internal", 200},
		{"evil.example:8080", 421},
		{"localhost", 421},
	} {
		resp, body := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools", r.Token, "", map[string]string{"Host": tc.host})
		if resp.StatusCode != tc.status || tc.status == 421 && !strings.Contains(body, `"code":"host_not_allowed"`) {
			t.Errorf("REST, Host %s: %d %s", tc.host, resp.StatusCode, body)
		}
		resp, body = mcpPost(t, g, r.ID, r.Token, ping, map[string]string{"Host": tc.host, "MCP-Protocol-Version": "2025-06-18"})
		if resp.StatusCode != tc.status || tc.status == 421 && !strings.Contains(body, `"code":"host_not_allowed"`) {
			t.Errorf("MCP, Host %s: %d %s", tc.host, resp.StatusCode, body)
		}
	}
	if resp, _ := agentDo(t, g, http.MethodGet, "/healthz", "", "", map[string]string{"Host": "evil.example"}); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz with another Host: %d", resp.StatusCode)
	}
	resp, body := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools", r.Token, "", map[string]string{"Origin": "http://evil.example"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"code":"origin_not_allowed"`) {
		t.Errorf("REST with a browser Origin: %d %s", resp.StatusCode, body)
	}
}
