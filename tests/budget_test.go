package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// agentRequest is one kind of request an agent can send, and the status
// it answers while the run's budget holds a call.
type agentRequest struct {
	name string
	send func(t *testing.T, g *gateway, r *run) (status int, header http.Header, body string)
}

// mcpJSON is the header of an MCP POST under 2025-06-18.
var mcpJSON = map[string]string{"MCP-Protocol-Version": "2025-06-18"}

// everyRequest is every kind of agent request that must spend the run's
// budget, besides the tool calls (TestRateLimit): each answers 2xx or a
// 4xx of its own while the budget lasts. The result writes name a handle
// the run does not hold (422), so that each can be sent again.
var everyRequest = []agentRequest{
	{"REST GET /tools", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		resp, body := agentDo(t, g, "GET", "/v1/runs/"+r.ID+"/tools", r.Token, "", nil)
		return resp.StatusCode, resp.Header, body
	}},
	{"REST result naming an unheld handle", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		rep := r.call(t, "result", `{"value":{"source":"cfh:v:zzzzz"}}`)
		return rep.Status, rep.Header, string(rep.Body)
	}},
	{"REST result that is refused as invalid input", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		rep := r.call(t, "result", `{"value":1,"extra":2}`)
		return rep.Status, rep.Header, string(rep.Body)
	}},
	{"REST loom_search refused as invalid input", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		rep := r.call(t, "loom_search", `{"qeury":"atlas"}`)
		return rep.Status, rep.Header, string(rep.Body)
	}},
	{"REST describe_handle", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		rep := r.call(t, "describe_handle", `{"token":"cfh:v:22222"}`)
		return rep.Status, rep.Header, string(rep.Body)
	}},
	{"MCP ping", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		resp, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, mcpJSON)
		return resp.StatusCode, resp.Header, body
	}},
	{"MCP tools/list", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		resp, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, mcpJSON)
		return resp.StatusCode, resp.Header, body
	}},
	{"MCP initialize", func(t *testing.T, g *gateway, r *run) (int, http.Header, string) {
		resp, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		return resp.StatusCode, resp.Header, body
	}},
}

// TestEveryRequestSpendsBudget: every request an agent can send takes a
// call from the run's budget (--run-rate, --run-burst), not only the tool
// calls: a catalog read, a result write (one refused too), an MCP ping,
// tools/list or initialize. Each kind is sent while the budget holds and
// answers as it would; once the budget is spent, each kind answers 429
// rate_limited with Retry-After (on MCP too: the REST problem, as the
// face answers what it refuses before the protocol), and the MCP result
// writer's tools/call answers the isError result a refused call answers.
// Another run keeps a budget of its own.
func TestEveryRequestSpendsBudget(t *testing.T) {
	t.Parallel()
	burst := len(everyRequest)
	g := startGateway(t, gwOptions{Flags: []string{"--run-rate", "0.001", "--run-burst", strconv.Itoa(burst)}})
	r := g.newRun(t, client.CreateRunInput{})
	for _, q := range everyRequest {
		if status, _, body := q.send(t, g, r); status == http.StatusTooManyRequests || status >= 500 {
			t.Fatalf("%s within the budget: %d %s", q.name, status, body)
		}
	}
	for _, q := range everyRequest {
		status, h, body := q.send(t, g, r)
		var p struct {
			Code       string `json:"code"`
			RetryAfter int    `json:"retryAfter"`
		}
		_ = json.Unmarshal([]byte(body), &p)
		if status != http.StatusTooManyRequests || p.Code != "rate_limited" || p.RetryAfter < 1 || h.Get("Retry-After") == "" {
			t.Errorf("%s past the budget: %d Retry-After %q %.300s; want 429 rate_limited with Retry-After", q.name, status, h.Get("Retry-After"), body)
		}
	}
	for _, call := range []string{
		`{"name":"result","arguments":{"value":"cfh:v:zzzzz"}}`,
		`{"name":"loom_search","arguments":{"qeury":"refused as invalid input"}}`,
	} {
		resp, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":`+call+`}`, mcpJSON)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, `rate_limited`) {
			t.Errorf("MCP tools/call %s past the budget: %d %.300s; want an isError result of rate_limited", call, resp.StatusCode, body)
		}
	}

	other := g.newRun(t, client.CreateRunInput{})
	for _, q := range everyRequest {
		if status, _, body := q.send(t, g, other); status == http.StatusTooManyRequests {
			t.Errorf("%s of another run: %d %s", q.name, status, body)
		}
	}
}

// TestResultWriteCostsWhatItNames: a run fills its handle table (here
// about 7.5 MB) and then posts results naming a handle it does not hold.
// Each answers 422 unheld_handle and costs the gateway what the value
// names, not the table: the writes allocate a small fraction of one table
// copy each (the writer used to copy the whole table for every write,
// under the memory store's one lock, stalling every other run). The one
// write that stores still reads the table once, and a second is refused.
func TestResultWriteCostsWhatItNames(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--run-rate", "0", "--max-handle-bytes-per-run", "0"}})
	// A call admits a row up to the 48,000-unit result budget, each
	// string up to 4,000 units: a page of ten strings of 3,900
	// three-byte characters (117 KB) a call.
	const calls = 64
	for i := range calls {
		var b strings.Builder
		fmt.Fprintf(&b, `{"path":"c%d.md"`, i)
		for j := range 10 {
			fmt.Fprintf(&b, `,"b%d":"%s"`, j, strings.Repeat("€", 3_900))
		}
		b.WriteString(`}`)
		if err := os.WriteFile(filepath.Join(g.Dir, fmt.Sprintf("fill-%d.json", i)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		g.setBehaviour(t, fmt.Sprintf("case-fill-%d", i), behaviour{StdoutFile: fmt.Sprintf("fill-%d.json", i)})
	}
	r := g.newRun(t, client.CreateRunInput{})
	var held string
	for i := range calls {
		res := r.ok(t, "loom_page_read", fmt.Sprintf(`{"target":"case=fill-%d"}`, i))
		for _, e := range res.Entries {
			if e.Handle != nil {
				held = *e.Handle
			}
		}
	}
	var table int64
	for _, h := range r.handles(t) {
		b, _ := json.Marshal(h.Value)
		table += int64(len(b))
	}
	if table < 4<<20 {
		t.Fatalf("the table holds %d bytes of values, want at least 4 MiB", table)
	}

	const writes = 20
	alloc := func() float64 { return g.metric(t, "go_memstats_alloc_bytes_total") }
	before := alloc()
	for range writes {
		rep := r.call(t, "result", `{"value":{"summary":"done","source":"cfh:v:zzzzz","also":"`+held+`"}}`)
		wantProblem(t, rep, http.StatusUnprocessableEntity, "unheld_handle")
	}
	grew := alloc() - before
	t.Logf("%d writes naming an unheld handle against a table of %d MB allocated %.1f MB", writes, table>>20, grew/(1<<20))
	// One copy of the table each would be writes x 7.5 MB; allow a tenth
	// of one copy per write for the requests and the metrics reads.
	if limit := float64(writes) * float64(table) / 10; grew > limit {
		t.Errorf("%d refused writes allocated %.0f MB, want under %.0f MB (not a copy of the table each)", writes, grew/(1<<20), limit/(1<<20))
	}

	rep := r.call(t, "result", `{"value":{"summary":"done","source":"`+held+`"}}`)
	if rep.Status != http.StatusCreated {
		t.Fatalf("a write naming a held handle: %d %s", rep.Status, rep.Body)
	}
	wantProblem(t, r.call(t, "result", `{"value":{"source":"`+held+`"}}`), http.StatusConflict, "result_exists")
}
