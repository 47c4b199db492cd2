package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/api/client"
)

// bearerTransport adds a run token to every request of the MCP client.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return rememberTransport{b.base}.RoundTrip(r)
}

// rememberTransport hands every MCP answer to the marker-leak check of
// TestMain (main_test.go), as the REST calls' answers are.
type rememberTransport struct{ base http.RoundTripper }

func (rt rememberTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	remember(r, resp, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// mcpClient is the HTTP client of the raw MCP requests: every answer is
// checked for markers.
var mcpClient = &http.Client{Transport: rememberTransport{http.DefaultTransport}, Timeout: 30 * time.Second}

// mcpSession connects the SDK's own client to run's MCP endpoint with
// token.
func mcpSession(t *testing.T, g *gateway, runID, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             g.AgentURL + "/v1/runs/" + runID + "/mcp",
		HTTPClient:           &http.Client{Transport: bearerTransport{token, http.DefaultTransport}, Timeout: 30 * time.Second},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	s, err := c.Connect(ctx(t), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// TestMCP drives a run's tools through the SDK's MCP client: the tool
// list is the run's, each of the eight tools answers the same result as
// the REST route, withheld rows stay withheld, and a refusal is an
// isError result carrying the REST problem.
func TestMCP(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	for _, tc := range toolCases {
		g.setBehaviour(t, commandOf(tc.tool), behaviour{Stdout: fill(tc.payload)})
	}
	r := g.workRun(t)
	s, err := mcpSession(t, g, r.ID, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if init := s.InitializeResult(); init.ServerInfo.Name != "loom-gateway" || !strings.Contains(init.Instructions, "cfh:v:") || init.Capabilities.Tools == nil {
		t.Errorf("initialize: %+v", init)
	}
	list, err := s.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Annotations == nil || tl.Annotations.ReadOnlyHint != (tl.Name != "result") {
			t.Errorf("%s: annotations %+v", tl.Name, tl.Annotations)
		}
		if tl.OutputSchema == nil || tl.InputSchema == nil || tl.Description == "" {
			t.Errorf("%s: no output schema, input schema or description", tl.Name)
		}
	}
	want := []string{"loom_search", "loom_page_discover", "loom_page_inspect", "loom_page_read", "loom_people",
		"loom_calendar_list", "loom_context", "loom_profile", "describe_handle", "result"}
	slices.Sort(names) // the SDK lists tools by name
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list %v, want %v", names, want)
	}

	var handle string
	for i, tc := range toolCases {
		res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.body)})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError {
			t.Fatalf("%s: isError %s", tc.tool, text)
		}
		structured, _ := json.Marshal(res.StructuredContent)
		var got, fromText client.ToolResult
		if err := json.Unmarshal(structured, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(text), &fromText); err != nil || fromText.OutputId != got.OutputId {
			t.Errorf("%s: the text block is not the structured result: %v", tc.tool, err)
		}
		checkAgentResult(t, []byte(text))
		if wantID := r.ID + ":" + tc.tool + ":" + itoa(i+1); got.OutputId != wantID {
			t.Errorf("%s: outputId %q, want %q (one sequence with REST)", tc.tool, got.OutputId, wantID)
		}
		views, handles := views(t, got.Entries)
		if len(views) != len(tc.entries) {
			t.Errorf("%s: %d entries, want %d", tc.tool, len(views), len(tc.entries))
		}
		for j, v := range views {
			if j < len(tc.entries) && v.Status != tc.entries[j].Status {
				t.Errorf("%s entry %d: %s, want %s", tc.tool, j, v.Status, tc.entries[j].Status)
			}
		}
		for _, h := range handles {
			if h != "" && handle == "" {
				handle = h
			}
		}
		if strings.Contains(text, markerWithheld) {
			t.Errorf("%s: a withheld row reached the MCP answer", tc.tool)
		}
	}

	// describe_handle and the result writer, citing the handle.
	res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "describe_handle", Arguments: map[string]string{"token": handle}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"known":true`) {
		t.Errorf("describe_handle %q: %v %+v", handle, err, res)
	}
	res, err = s.CallTool(ctx(t), &mcp.CallToolParams{Name: "result", Arguments: map[string]any{"value": map[string]any{"cite": handle}}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"links":1`) {
		t.Errorf("result: %v %+v", err, res)
	}

	// An input refused: an isError result with the REST problem.
	res, err = s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: map[string]any{"qeury": "atlas"}})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
		Errors []struct {
			Pointer, Reason string
		} `json:"errors"`
	}
	// The problem is the structured content and the text block.
	structured, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(structured, &p); err != nil || !res.IsError || p.Code != "invalid_input" || len(p.Errors) == 0 || p.Errors[0].Reason != "unknown_field" || p.Errors[0].Pointer != "/qeury" {
		t.Errorf("refused input: isError %v, problem %s", res.IsError, structured)
	}
	var fromText any
	if text := res.Content[0].(*mcp.TextContent).Text; json.Unmarshal([]byte(text), &fromText) != nil || !reflect.DeepEqual(fromText, res.StructuredContent) {
		t.Errorf("refused input: the text block %s is not the structured problem", text)
	}
	// A second result: result_exists, as a problem too.
	res, _ = s.CallTool(ctx(t), &mcp.CallToolParams{Name: "result", Arguments: map[string]any{"value": 1}})
	if res == nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"code":"result_exists"`) {
		t.Errorf("second result: %+v", res)
	}
	// An unknown tool is a JSON-RPC error.
	if _, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_serch", Arguments: map[string]any{}}); err == nil {
		t.Error("unknown tool: no error")
	}

	// The host's call log holds the MCP calls like any other: the eight
	// tools and describe_handle (the result writer and a refused input
	// leave no call record, on either face).
	calls, err := g.hostClient(t).ListCallsWithResponse(ctx(t), r.ID, nil)
	if err != nil || calls.JSON200 == nil || len(calls.JSON200.Calls) != len(toolCases)+1 {
		t.Errorf("call log after MCP calls: %v %s", err, calls.Body)
	}
}

// A run restricted to some tools lists and calls only those; another
// run's token answers 404, none 401, a browser origin 403.
func TestMCPAccess(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	tools := []client.ToolId{"loom_search"}
	r := g.newRun(t, client.CreateRunInput{Tools: &tools})
	other := g.newRun(t, client.CreateRunInput{})
	s, err := mcpSession(t, g, r.ID, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"describe_handle", "loom_search", "result"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if _, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_people", Arguments: map[string]any{"query": "a@b.c"}}); err == nil {
		t.Error("a tool the run may not call: no JSON-RPC error")
	}

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	postBody := func(body, token string, header map[string]string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, g.AgentURL+"/v1/runs/"+r.ID+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := mcpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	post := func(token string, header map[string]string) (int, string) { return postBody(initialize, token, header) }
	if code, body := post(other.Token, nil); code != http.StatusNotFound || !strings.Contains(body, "run_not_found") {
		t.Errorf("another run's token: %d %s", code, body)
	}
	if code, body := post("", nil); code != http.StatusUnauthorized || !strings.Contains(body, "unauthorized") {
		t.Errorf("no token: %d %s", code, body)
	}
	if code, body := post(r.Token, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden || !strings.Contains(body, `"code":"origin_not_allowed"`) {
		t.Errorf("a browser origin: %d %s, want 403 origin_not_allowed", code, body)
	}
	// A JSON-RPC batch is refused (2025-06-18 dropped batching), and no
	// tool in it runs.
	calls := len(g.loomCalls(t))
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"batched"}}}]`
	if code, body := postBody(batch, r.Token, map[string]string{"MCP-Protocol-Version": "2025-06-18"}); code != http.StatusBadRequest || strings.Contains(body, `"result"`) {
		t.Errorf("a batch: %d %s, want 400", code, body)
	}
	if n := len(g.loomCalls(t)); n != calls {
		t.Errorf("a batch ran %d loom calls", n-calls)
	}
	if code, body := post(r.Token, nil); code != http.StatusOK || !strings.Contains(body, `"loom-gateway"`) {
		t.Errorf("initialize: %d %s", code, body)
	}
	if code, _ := post(r.Token, map[string]string{"MCP-Protocol-Version": "1999-01-01"}); code != http.StatusBadRequest {
		t.Errorf("an unknown MCP-Protocol-Version: %d, want 400", code)
	}
	// No standalone stream, no sessions.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(ctx(t), m, g.AgentURL+"/v1/runs/"+r.ID+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+r.Token)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := mcpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// mcpReasonCases are the input faults an MCP tools/call can carry in its
// arguments, each refused for its reason as the REST face refuses it
// (internal/handlers TestEveryReason). The rest of the vocabulary cannot
// reach a tool through MCP: pattern_mismatch is the host API's run id;
// duplicate_key, invalid_utf8, not_json and empty_body are faults of the
// whole JSON-RPC message, refused by the listener's body check as a REST
// invalid_input (400, pointer into the message) before the SDK reads it;
// too_deep no request can cause.
var mcpReasonCases = []struct {
	reason, tool, args, pointer, secret string
}{
	{"unknown_field", "loom_search", `{"qeury":"atlas"}`, "/qeury", "atlas"},
	{"required", "loom_page_read", `{}`, "/target", ""},
	{"one_of_required", "loom_search", `{"limit":5}`, "/query", ""},
	{"conflicting_fields", "loom_calendar_list", `{"all":true,"from":"2024-01-01"}`, "/all", "2024-01-01"},
	{"wrong_type", "loom_search", `{"query":"atlas","limit":"5"}`, "/limit", "atlas"},
	{"null_not_allowed", "loom_search", `{"query":null}`, "/query", ""},
	{"too_short", "loom_search", `{"query":""}`, "/query", ""},
	{"too_long", "loom_search", `{"query":"` + strings.Repeat("q", 501) + `"}`, "/query", "qqqqqqqq"},
	{"out_of_range", "loom_search", `{"query":"atlas","limit":0}`, "/limit", "atlas"},
	{"not_in_choices", "loom_search", `{"query":"atlas","rank":"best"}`, "/rank", "best"},
	{"not_a_date", "loom_calendar_list", `{"from":"2024/01/01"}`, "/from", "2024/01/01"},
	{"control_character", "loom_search", `{"query":"atl\u0001as"}`, "/query", "atl"},
	{"leading_dash", "loom_search", `{"query":"-rf"}`, "/query", "-rf"},
	{"not_a_lookup", "loom_people", `{"query":"bobby"}`, "/query", "bobby"},
}

// TestMCPReasons: through the MCP face, each fault is an isError result
// whose problem names it first, at its pointer, without echoing the value;
// no loom process starts for any of them.
func TestMCPReasons(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	for i, tc := range mcpReasonCases {
		t.Run(tc.reason, func(t *testing.T) {
			msg := `{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":` + tc.args + `}}`
			req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, g.AgentURL+"/v1/runs/"+r.ID+"/mcp", strings.NewReader(msg))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
			req.Header.Set("Authorization", "Bearer "+r.Token)
			resp, err := mcpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var rpc struct {
				Result struct {
					IsError           bool `json:"isError"`
					StructuredContent struct {
						Code   string
						Detail string
						Errors []struct{ Pointer, Reason string }
					} `json:"structuredContent"`
				} `json:"result"`
			}
			if err := json.Unmarshal(body, &rpc); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
			}
			p := rpc.Result.StructuredContent
			if !rpc.Result.IsError || p.Code != "invalid_input" || len(p.Errors) == 0 || p.Errors[0].Reason != tc.reason || p.Errors[0].Pointer != tc.pointer {
				t.Errorf("isError %v, problem %+v; want invalid_input, first fault %s at %s", rpc.Result.IsError, p, tc.reason, tc.pointer)
			}
			if tc.secret != "" && strings.Contains(p.Detail, tc.secret) {
				t.Errorf("detail %q echoes the value sent", p.Detail)
			}
		})
	}
	// A key given twice is the message's fault: 400 with the pointer into
	// the message, and no tool runs.
	dup := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"loom_search","arguments":{"query":"atlas","query":"atlas"}}}`
	resp, body := mcpPost(t, g, r.ID, r.Token, dup, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"reason":"duplicate_key"`) || !strings.Contains(body, `"/params/arguments/query"`) {
		t.Errorf("a duplicate key: %d %s", resp.StatusCode, body)
	}
	noLoomCalls(t, g, "refused input")
}

// TestMCPNoHostText: loom failing loudly (its stderr, its own message and
// the host's paths carry markers) reaches an MCP client only as the fixed
// problem; TestMain also checks every MCP answer of the suite for markers.
func TestMCPNoHostText(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "case-mcp-loud", behaviour{StderrBytes: 1 << 20, StderrMarker: markerStderr, Stdout: markerStderr, Exit: 2})
	g.setBehaviour(t, "case-mcp-refused", behaviour{Stdout: `{"ok":false,"code":"facet_denied","message":"` + markerStderr + ` ` + g.Dir + `"}`})
	r := g.workRun(t)
	s, err := mcpSession(t, g, r.ID, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]string{"mcp-loud": "command_failed", "mcp-refused": "host_refused"} {
		res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: map[string]string{"query": "case=" + name}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.Contains(text, `"code":"`+code+`"`) {
			t.Errorf("%s: isError %v %s, want %s", name, res.IsError, text, code)
		}
		for _, mk := range markers {
			if strings.Contains(text, mk) {
				t.Errorf("%s: the answer carries %s", name, mk)
			}
		}
	}
}
