package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// floodConfig is the --flood sitting: one run calling at ten times its
// rate limit while another run's latency is measured against its own
// latency with no flood.
type floodConfig struct {
	on       bool
	replicas int
	rate     float64
	factor   float64
	// kind is what the flooding run sends (floodKinds); fill is the pages
	// it reads first to fill its handle table; split floods the first
	// gateway only and times the measured run on the last.
	kind  string
	fill  int
	split bool
}

// floodKinds are the requests --flood-kind may flood with.
var floodKinds = []string{"call", "result", "ping", "catalog", "mix"}

func floodFlags(f *floodConfig) {
	flag.BoolVar(&f.on, "flood", false, "measure fairness instead: one run flooding at --flood-factor times --flood-rate while another run, paced at half its rate, is timed with and without the flood (target: loaded p50 within 1.2x unloaded)")
	flag.IntVar(&f.replicas, "flood-replicas", 1, "with --flood: gateways to start on one store (more than 1 needs --gateway-arg=--store=redis://...); both runs' calls alternate between them")
	flag.Float64Var(&f.rate, "flood-rate", 50, "with --flood: the gateways' --run-rate (and --run-burst, a second of it)")
	flag.Float64Var(&f.factor, "flood-factor", 10, "with --flood: the flooding run's attempts a second, as a multiple of --flood-rate")
	flag.StringVar(&f.kind, "flood-kind", "call", "with --flood: what the flooding run sends: call (loom_search), result (result writes naming a handle it does not hold), ping (MCP ping), catalog (GET /tools and MCP tools/list in turn), mix (all of them in turn)")
	flag.IntVar(&f.fill, "flood-fill", 0, "with --flood: pages of about 117 KB the flooding run reads first, to fill its handle table (551 fill the default 64 MiB); at --flood-rate a second")
	flag.BoolVar(&f.split, "flood-split", false, "with --flood and 2 or more replicas: flood through the first gateway only and time the measured run (the bystander) through the last")
}

// flood starts --flood-replicas gateways on one store with --run-rate
// and --run-burst set, then alternates, --rounds times, a quiet phase
// (the measured run alone, one call every 2/rate seconds) and a loaded
// phase (the same, while the flooding run's --clients workers attempt
// factor x rate calls a second between them across the replicas), each
// --duration long, and reports the measured run's latency in each and the
// flood's outcome.
func flood(ctx context.Context, c config, dir, loomPath string, w io.Writer) error {
	f := c.flood
	if f.rate <= 0 || f.factor <= 0 || f.replicas < 1 {
		return fmt.Errorf("--flood needs a positive --flood-rate and --flood-factor and at least one replica")
	}
	if !slices.Contains(floodKinds, f.kind) {
		return fmt.Errorf("--flood-kind %q: one of %s", f.kind, strings.Join(floodKinds, ", "))
	}
	if f.split && f.replicas < 2 {
		return fmt.Errorf("--flood-split needs --flood-replicas 2 or more")
	}
	burst := max(1, int(f.rate))
	c.gatewayArgs = append(c.gatewayArgs, "--run-rate", strconv.FormatFloat(f.rate, 'g', -1, 64), "--run-burst", strconv.Itoa(burst))
	var agents []string
	var runs []runToken
	for i := range f.replicas {
		rc := c
		if rc.gatewayLog != "" {
			rc.gatewayLog = fmt.Sprintf("%s.%d", c.gatewayLog, i)
		} else {
			rc.gatewayLog = fmt.Sprintf("%s/gateway-%d.log", dir, i)
		}
		rc.clients = 1 // two runs: the measured one and the flooding one
		tg, err := startGateway(ctx, rc, dir, loomPath)
		if err != nil {
			return err
		}
		defer tg.stop()
		agents = append(agents, tg.agentURL)
		if runs == nil {
			runs = tg.runs
		}
	}
	measured, flooder := runs[0], runs[1]
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * c.clients, MaxIdleConnsPerHost: 4 * c.clients, IdleConnTimeout: time.Minute}}
	floodAgents, measuredAgents := agents, agents
	if f.split {
		floodAgents, measuredAgents = agents[:1], agents[len(agents)-1:]
	}
	if err := toolCall(ctx, client, measuredAgents[0], measured); err != nil {
		return fmt.Errorf("first call: %w", err)
	}
	if f.fill > 0 {
		start := time.Now()
		for i := 0; i < f.fill; {
			err := postTool(ctx, client, floodAgents[0]+"/v1/runs/"+flooder.id+"/loom_page_read", flooder.token,
				fmt.Sprintf(`{"target":"loadgen-fill-%d"}`, i), `"handle":"cfh:v:`)
			switch {
			case err != nil && strings.Contains(err.Error(), "status 429"):
				time.Sleep(pace(f.rate)) // the bucket refills
			case err != nil:
				return fmt.Errorf("fill page %d: %w", i, err)
			default:
				i++
			}
		}
		time.Sleep(time.Second) // the bucket refills
		fmt.Fprintf(w, "loadgen --flood: the flooding run read %d pages of about 117 KB into its handle table in %s\n", f.fill, time.Since(start).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "loadgen --flood: %d gateway(s) %s, --run-rate %g --run-burst %d; the flooding run attempts %g %s requests/s with %d workers%s; the measured run calls every %s%s\n",
		f.replicas, c.gateway, f.rate, burst, f.factor*f.rate, f.kind, c.clients, map[bool]string{true: " through the first gateway"}[f.split],
		pace(f.rate/2), map[bool]string{true: " through the last"}[f.split])

	var quiet, loaded []time.Duration
	var counts floodCounts
	for r := range c.rounds {
		q, err := paced(ctx, client, measuredAgents, measured, f.rate/2, c.duration)
		if err != nil {
			return fmt.Errorf("round %d, quiet: %w", r+1, err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for k := range c.clients {
			wg.Go(func() {
				floodWorker(ctx, client, floodAgents, flooder, f.kind, f.factor*f.rate/float64(c.clients), k, stop, &counts)
			})
		}
		l, err := paced(ctx, client, measuredAgents, measured, f.rate/2, c.duration)
		close(stop)
		wg.Wait()
		if err != nil {
			return fmt.Errorf("round %d, flooded: %w", r+1, err)
		}
		fmt.Fprintf(w, "  round %d: quiet p50 %8s  flooded p50 %8s\n", r+1, stats(q).p50, stats(l).p50)
		quiet, loaded = append(quiet, q...), append(loaded, l...)
	}
	qs, ls := stats(quiet), stats(loaded)
	fmt.Fprintf(w, "\nmeasured run, %d calls per side:\n", len(quiet))
	fmt.Fprintf(w, "  %-10s p50 %8s  p90 %8s  p99 %8s  mean %8s\n", "quiet:", qs.p50, qs.p90, qs.p99, qs.mean)
	fmt.Fprintf(w, "  %-10s p50 %8s  p90 %8s  p99 %8s  mean %8s\n", "flooded:", ls.p50, ls.p90, ls.p99, ls.mean)
	secs := (time.Duration(c.rounds) * c.duration).Seconds()
	fmt.Fprintf(w, "flooding run: %.1f attempts/s: %.1f/s answered, %.1f/s rate_limited, %d other errors (%d of them 5xx)\n",
		float64(counts.ok.Load()+counts.limited.Load())/secs, float64(counts.ok.Load())/secs, float64(counts.limited.Load())/secs, counts.other.Load(), counts.server.Load())
	ratio := float64(ls.p50) / float64(qs.p50)
	fmt.Fprintf(w, "\nsummary: flooded/quiet p50 %.3f (target <= 1.20: %v)\n", ratio, ratio <= 1.2)
	return nil
}

type floodCounts struct{ ok, limited, other, server atomic.Int64 }

func pace(perSecond float64) time.Duration { return time.Duration(float64(time.Second) / perSecond) }

// paced calls loom_search for r every 1/perSecond, for d, the replicas in
// turn, and returns each call's latency. A call that is not answered 200
// with entries ends it.
func paced(ctx context.Context, client *http.Client, agents []string, r runToken, perSecond float64, d time.Duration) ([]time.Duration, error) {
	every := pace(perSecond)
	var lat []time.Duration
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := timeInto(&lat, func() error { return toolCall(ctx, client, agents[i%len(agents)], r) }); err != nil {
			return nil, err
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * every)))
	}
	return lat, nil
}

// floodWorker attempts kind's requests for r perSecond times a second
// until stop, the replicas in turn (starting at its own), counting the
// answers; it skips the attempts it falls behind on rather than
// bursting. An answer of the request's own (200, 201, 422 for a result
// naming an unheld handle) counts as answered.
func floodWorker(ctx context.Context, client *http.Client, agents []string, r runToken, kind string, perSecond float64, k int, stop <-chan struct{}, n *floodCounts) {
	every := pace(perSecond)
	next := time.Now()
	for i := k; ; i++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		if next = next.Add(every); next.Before(time.Now()) {
			next = time.Now()
		}
		req, err := floodRequest(ctx, agents[i%len(agents)], r, kind, i)
		if err != nil {
			n.other.Add(1)
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			n.other.Add(1)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK, resp.StatusCode == http.StatusCreated,
			resp.StatusCode == http.StatusUnprocessableEntity && kind != "call":
			n.ok.Add(1)
		case resp.StatusCode == http.StatusTooManyRequests:
			n.limited.Add(1)
		default:
			n.other.Add(1)
			if resp.StatusCode >= 500 {
				n.server.Add(1)
			}
		}
	}
}

// floodRequest is the i-th request of a flood of kind for r through the
// agent listener at agent.
func floodRequest(ctx context.Context, agent string, r runToken, kind string, i int) (*http.Request, error) {
	if kind == "mix" {
		kind = []string{"call", "result", "ping", "catalog"}[i%4]
	}
	method, path, body := http.MethodPost, "/loom_search", `{"query":"atlas"}`
	mcp := false
	switch kind {
	case "result":
		path, body = "/result", `{"value":{"summary":"done","source":"cfh:v:zzzzz"}}`
	case "ping":
		path, body, mcp = "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, true
	case "catalog":
		if i%2 == 0 {
			method, path, body = http.MethodGet, "/tools", ""
		} else {
			path, body, mcp = "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true
		}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, agent+"/v1/runs/"+r.id+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if mcp {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	return req, nil
}
