package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
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
}

func floodFlags(f *floodConfig) {
	flag.BoolVar(&f.on, "flood", false, "measure fairness instead: one run flooding at --flood-factor times --flood-rate while another run, paced at half its rate, is timed with and without the flood (target: loaded p50 within 1.2x unloaded)")
	flag.IntVar(&f.replicas, "flood-replicas", 1, "with --flood: gateways to start on one store (more than 1 needs --gateway-arg=--store=redis://...); both runs' calls alternate between them")
	flag.Float64Var(&f.rate, "flood-rate", 50, "with --flood: the gateways' --run-rate (and --run-burst, a second of it)")
	flag.Float64Var(&f.factor, "flood-factor", 10, "with --flood: the flooding run's attempts a second, as a multiple of --flood-rate")
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
	if err := toolCall(ctx, client, agents[0], measured); err != nil {
		return fmt.Errorf("first call: %w", err)
	}
	fmt.Fprintf(w, "loadgen --flood: %d gateway(s) %s, --run-rate %g --run-burst %d; the flooding run attempts %g calls/s with %d workers; the measured run calls every %s\n",
		f.replicas, c.gateway, f.rate, burst, f.factor*f.rate, c.clients, pace(f.rate/2))

	var quiet, loaded []time.Duration
	var counts floodCounts
	for r := range c.rounds {
		q, err := paced(ctx, client, agents, measured, f.rate/2, c.duration)
		if err != nil {
			return fmt.Errorf("round %d, quiet: %w", r+1, err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for k := range c.clients {
			wg.Go(func() {
				floodWorker(ctx, client, agents, flooder, f.factor*f.rate/float64(c.clients), k, stop, &counts)
			})
		}
		l, err := paced(ctx, client, agents, measured, f.rate/2, c.duration)
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
	fmt.Fprintf(w, "flooding run: %.1f attempts/s: %.1f/s answered, %.1f/s rate_limited, %d other errors\n",
		float64(counts.ok.Load()+counts.limited.Load())/secs, float64(counts.ok.Load())/secs, float64(counts.limited.Load())/secs, counts.other.Load())
	ratio := float64(ls.p50) / float64(qs.p50)
	fmt.Fprintf(w, "\nsummary: flooded/quiet p50 %.3f (target <= 1.20: %v)\n", ratio, ratio <= 1.2)
	return nil
}

type floodCounts struct{ ok, limited, other atomic.Int64 }

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

// floodWorker attempts loom_search for r perSecond times a second until
// stop, the replicas in turn (starting at its own), counting the answers;
// it skips the attempts it falls behind on rather than bursting.
func floodWorker(ctx context.Context, client *http.Client, agents []string, r runToken, perSecond float64, k int, stop <-chan struct{}, n *floodCounts) {
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
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, agents[i%len(agents)]+"/v1/runs/"+r.id+"/loom_search", strings.NewReader(`{"query":"atlas"}`))
		if err != nil {
			n.other.Add(1)
			continue
		}
		req.Header.Set("Authorization", "Bearer "+r.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			n.other.Add(1)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			n.ok.Add(1)
		case http.StatusTooManyRequests:
			n.limited.Add(1)
		default:
			n.other.Add(1)
		}
	}
}
