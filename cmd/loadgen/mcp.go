package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// statelessRevision is the MCP revision whose requests each carry the
// revision and the client's capabilities in _meta and name the method
// (and tool) in the Mcp-Method (and Mcp-Name) header; it has no ping.
const statelessRevision = "2026-07-28"

// mcpPair is one method measured on both faces: an MCP request and the
// REST request that does the same work.
type mcpPair struct {
	name      string
	mcp, rest func(ctx context.Context, r runToken) error
}

// mcpMode is loadgen's --mcp sitting: for each method (MCP ping against
// REST describe_handle, tools/list against GET .../tools, describe_handle
// and loom_search over both faces), c.n sequential requests per face,
// the faces in alternating blocks of 20, with the gateway's CPU per
// request (from /proc, in 10 ms ticks over the whole phase) and the
// p50; then loom_search from c.clients clients on each face in
// alternating rounds of c.duration. BENCHMARKS.md holds the figures to
// its MCP targets: MCP ping and describe_handle at most 1.5x the CPU of a
// REST describe_handle; MCP loom_search p50 within 1.1x REST's; MCP
// throughput at least 0.9x.
func mcpMode(ctx context.Context, c config, tg *target, client *http.Client, w io.Writer) error {
	r := tg.runs[0]
	base := tg.agentURL + "/v1/runs/" + r.id
	var body bytes.Buffer
	if err := post(ctx, client, base+"/loom_search", r.token, `{"query":"atlas"}`, nil, &body); err != nil {
		return fmt.Errorf("first search: %w", err)
	}
	handle := regexp.MustCompile(`cfh:v:[A-Za-z0-9_:.-]+`).FindString(body.String())
	if handle == "" {
		return fmt.Errorf("first search: no handle in %.300s", body.String())
	}
	describeInput := `{"token":"` + handle + `"}`
	// rpc is one MCP request of method under c.mcpRevision: a tools/call
	// of tool with args when tool is not "".
	rpc := func(method, tool, args string) func(ctx context.Context, r runToken) error {
		var params []string
		h := map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": c.mcpRevision}
		if c.mcpRevision >= statelessRevision {
			params = append(params, `"_meta":{"io.modelcontextprotocol/protocolVersion":"`+c.mcpRevision+`","io.modelcontextprotocol/clientCapabilities":{}}`)
			h["Mcp-Method"] = method
		}
		if tool != "" {
			params = append(params, `"name":"`+tool+`","arguments":`+args)
			if c.mcpRevision >= statelessRevision {
				h["Mcp-Name"] = tool
			}
		}
		msg := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"`
		if len(params) > 0 {
			msg += `,"params":{` + strings.Join(params, ",") + `}`
		}
		msg += `}`
		return func(ctx context.Context, r runToken) error {
			return postMCP(ctx, client, tg.agentURL+"/v1/runs/"+r.id+"/mcp", r.token, msg, h)
		}
	}
	restPost := func(tool, input string) func(ctx context.Context, r runToken) error {
		return func(ctx context.Context, r runToken) error {
			return post(ctx, client, tg.agentURL+"/v1/runs/"+r.id+"/"+tool, r.token, input, nil, nil)
		}
	}
	restDescribe := restPost("describe_handle", describeInput)
	var pairs []mcpPair
	if c.mcpRevision < statelessRevision {
		pairs = append(pairs, mcpPair{"ping / REST describe_handle", rpc("ping", "", ""), restDescribe})
	}
	pairs = append(pairs,
		mcpPair{"tools/list / GET tools", rpc("tools/list", "", ""), func(ctx context.Context, r runToken) error {
			return get(ctx, client, tg.agentURL+"/v1/runs/"+r.id+"/tools", r.token)
		}},
		mcpPair{"describe_handle", rpc("tools/call", "describe_handle", describeInput), restDescribe},
		mcpPair{"loom_search", rpc("tools/call", "loom_search", `{"query":"atlas"}`), restPost("loom_search", `{"query":"atlas"}`)},
	)
	fmt.Fprintf(w, "loadgen --mcp: gateway %s, MCP %s, %d sequential requests per face and method\n", describe(c), c.mcpRevision, c.n)
	fmt.Fprintf(w, "  %-30s %12s %12s %7s %10s %10s %7s\n", "method (MCP / REST)", "MCP CPU/req", "REST CPU/req", "ratio", "MCP p50", "REST p50", "ratio")
	for _, p := range pairs {
		for range c.warmup {
			if err := errorsOf(p.mcp(ctx, r), p.rest(ctx, r)); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		var lat [2][]time.Duration
		var cpu [2]time.Duration
		const block = 20
		for i := 0; i < c.n; i += block {
			for side, f := range []func(context.Context, runToken) error{p.mcp, p.rest} {
				before := readCPU(tg.pid)
				for range min(block, c.n-i) {
					if err := timeInto(&lat[side], func() error { return f(ctx, r) }); err != nil {
						return fmt.Errorf("%s: %w", p.name, err)
					}
				}
				cpu[side] += readCPU(tg.pid).minus(before).gateway
			}
		}
		per := func(side int) time.Duration {
			return (cpu[side] / time.Duration(max(1, len(lat[side])))).Round(time.Microsecond)
		}
		m, s := stats(lat[0]), stats(lat[1])
		fmt.Fprintf(w, "  %-30s %12s %12s %7.2f %10s %10s %7.3f\n", p.name, per(0), per(1),
			float64(per(0))/float64(max(1, per(1))), m.p50, s.p50, float64(m.p50)/float64(s.p50))
	}
	if c.rounds <= 0 {
		return nil
	}
	search := pairs[len(pairs)-1]
	var n [2]int64
	var t [2]time.Duration
	fmt.Fprintf(w, "\nloom_search throughput, %d concurrent clients (one run each), %d rounds of %s per face:\n", c.clients, c.rounds, c.duration)
	for round := range c.rounds {
		fmt.Fprintf(w, "  round %d:", round+1)
		for side, f := range []func(context.Context, runToken) error{search.mcp, search.rest} {
			k, d, err := burst(ctx, c.clients, c.duration, func(ctx context.Context, i int) error { return f(ctx, tg.runs[1+i]) })
			if err != nil {
				return err
			}
			n[side], t[side] = n[side]+k, t[side]+d
			fmt.Fprintf(w, "  %s %7.1f/s", []string{"MCP", "REST"}[side], rate(k, d))
		}
		fmt.Fprintln(w)
	}
	mr, sr := rate(n[0], t[0]), rate(n[1], t[1])
	fmt.Fprintf(w, "  all: MCP %7.1f/s  REST %7.1f/s  ratio MCP/REST %.3f (target >= 0.9)\n", mr, sr, mr/sr)
	return nil
}

func errorsOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// postMCP POSTs one JSON-RPC message with headers h to an MCP endpoint
// and checks that the answer is 200 and a result, not an error.
func postMCP(ctx context.Context, client *http.Client, url, token, msg string, h map[string]string) error {
	var body bytes.Buffer
	if err := post(ctx, client, url, token, msg, h, &body); err != nil {
		return err
	}
	if !strings.Contains(body.String(), `"result"`) || strings.Contains(body.String(), `"isError":true`) {
		return fmt.Errorf("POST %s: %.300s", url, body.String())
	}
	return nil
}

// post POSTs input as JSON to url with token and header, checks for 200
// and copies the answer to into (when not nil).
func post(ctx context.Context, client *http.Client, url, token, input string, header map[string]string, into *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(input))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(client, req, into)
}

// get GETs url with token and checks for 200.
func get(ctx context.Context, client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return do(client, req, nil)
}

func do(client *http.Client, req *http.Request, into *bytes.Buffer) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if into == nil {
		into = &b
	}
	if _, err := io.Copy(into, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d: %.300s", req.Method, req.URL, resp.StatusCode, into.String())
	}
	return nil
}
