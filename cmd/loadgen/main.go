// Command loadgen measures the gateway's call overhead: it starts a built gateway binary on loopback ports with a host config
// whose loom is a fast fake (cmd/loadgen/fastloom: a fixed 10 KB search
// payload), creates runs through the host API, and then, in one process
// and one go, compares
//
//   - latency: n sequential full HTTP tool calls (loom_search) against n
//     direct executions of the same fake loom with os/exec reading its
//     stdout as the pipe delivers it, and, unless --bare=false, a bare
//     server (net/http running the fake, nothing else), interleaved one
//     for one; p50, p90, p99 of each and the p50 ratios;
//   - throughput: c concurrent clients (one run each) against c concurrent
//     direct executions (and bare calls), in alternating rounds of equal
//     length; calls per second of each and their ratios.
//
// The targets it checks: with a payload of 1 MB or more, a gateway p50
// within 1.3x the direct exec's and throughput at least 0.75x; below
// that, within 1.08x the bare server's p50 and at least 0.92x its
// throughput (no HTTP front can come nearer a direct exec than the bare
// server does).
//
// Usage:
//
//	go build -o /tmp/gateway ./cmd/gateway
//	go build -o /tmp/fastloom ./cmd/loadgen/fastloom
//	go run ./cmd/loadgen --gateway /tmp/gateway --fakeloom /tmp/fastloom
//
// Without --fakeloom it builds fastloom itself with `go build` (run it from
// the module). Everything listens on 127.0.0.1 and the run is bounded by
// --n, --rounds, --duration and --timeout. The gateway's log goes to
// --gateway-log (default: a temporary file); --gateway-arg and
// --gateway-env pass extra flags and environment. Unless --own-cost=false
// it then measures the gateway's own cost: the same handlers in this
// process with a runner that answers with the fake loom's stdout at once.
//
// The store is the gateway's own choice (memory unless
// --gateway-arg=--store=redis://...); --own-cost-store=redis://... puts the
// in-process handlers of --own-cost on a Redis too, so one sitting per
// store compares the gateway's own cost per call on memory and on Redis.
//
// --flood measures fairness instead (flood.go): one run calling at
// --flood-factor times the gateways' --run-rate while another run's p50 is
// compared with its p50 without the flood; --flood-replicas 2 with
// --gateway-arg=--store=redis://... runs it on two replicas sharing one
// Redis. Run ids are unique per sitting, so sittings may share a Redis.
//
// --trace writes an execution trace of the same in-process run (go tool
// trace; its -pprof=sched view shows scheduling latency).
//
// --cpuprofile writes a CPU profile of the gateway's request path: the
// gateway binary is not profiled (it has no profiling switch and no pprof
// endpoint); instead loadgen serves the same handlers in its own process
// for that run only (see inprocess.go) and profiles itself.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

type config struct {
	gateway, fakeloom  string
	payloadBytes       int
	numbers            bool
	n, warmup, clients int
	rounds             int
	duration, timeout  time.Duration
	gatewayLog         string
	gatewayArgs        []string
	gatewayEnv         []string
	besideEnv          []string
	besideArgs         []string
	storeFloor         string
	cpuprofile, trace  string
	ownCost, bare      bool
	bareContained      bool
	page               bool
	memory, memClients int
	shape              string
	flood              floodConfig
	mcp                bool
	mcpRevision        string
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var c config
	flag.StringVar(&c.gateway, "gateway", "", "`path` of a built gateway binary (required unless --cpuprofile)")
	flag.StringVar(&c.fakeloom, "fakeloom", "", "`path` of the fake loom (default: go build ./cmd/loadgen/fastloom)")
	flag.IntVar(&c.payloadBytes, "payload-bytes", 0, "have the fake loom print a search payload of about this many bytes (benchdata.Search) instead of its built-in 10 KB one")
	flag.IntVar(&c.n, "n", 400, "sequential calls (and as many direct executions)")
	flag.IntVar(&c.warmup, "warmup", 30, "untimed calls and executions first")
	flag.IntVar(&c.clients, "clients", 8, "concurrent clients (and concurrent direct executions)")
	flag.IntVar(&c.rounds, "rounds", 3, "throughput rounds, each a direct phase and a gateway phase")
	flag.DurationVar(&c.duration, "duration", 3*time.Second, "length of each throughput phase")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	flag.DurationVar(&quietWait, "quiet-wait", quietWait, "how long a sitting waits for the one-minute load average to fall to 1.0 before it begins (0: at once, for a profile; a sitting begun above 1.0 is marked noisy)")
	flag.StringVar(&c.gatewayLog, "gateway-log", "", "`file` for the gateway's log (default: discarded)")
	flag.Var((*multi)(&c.gatewayArgs), "gateway-arg", "extra gateway `flag` (repeatable), e.g. --gateway-arg=--log-level=warn")
	flag.BoolVar(&c.ownCost, "own-cost", true, "then measure the gateway's own cost: the same handlers in process with a runner that returns the fake loom's stdout without starting it")
	flag.Var((*multi)(&c.gatewayEnv), "gateway-env", "extra `KEY=VALUE` in the gateway's environment (repeatable), e.g. GOGC=400")
	flag.Var((*multi)(&c.besideArgs), "beside-arg", "also start a second gateway with this extra `flag` (repeatable), timed interleaved with the first in the same sitting, e.g. --store=redis://... for the Redis store beside memory")
	flag.StringVar(&c.storeFloor, "store-floor", "", "also time, as one more side of the sequential phase, two EVALSHA round trips of a script that does nothing on this Redis (`redis://host:port/db`): the least a call's two store steps cost there")
	flag.Var((*multi)(&c.besideEnv), "beside-env", "also start a second gateway with this `KEY=VALUE` added to its environment (repeatable), timed interleaved with the first in the same sitting, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=... for tracing on beside off")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "profile the request path in process and write the CPU profile to `file`")
	flag.StringVar(&c.trace, "trace", "", "serve the request path in process and write an execution trace (runtime/trace) to `file`")
	flag.BoolVar(&c.bare, "bare", true, "also measure a bare server (this program again as a separate process: net/http and exec, nothing else), the floor of the gateway's overhead")
	flag.BoolVar(&c.page, "page", false, "with --payload-bytes: the fake prints a page.read payload (benchdata.Page) and the calls are loom_page_read")
	flag.BoolVar(&c.numbers, "numbers", false, "with --page: the page is megabytes of small numbers and objects (benchdata.PageOfNumbers), a payload built to be costly to keep")
	flag.IntVar(&c.memory, "memory", 0, "measure memory instead: this many sequential calls, then --memory-clients concurrent clients making 3 calls each, reading the gateway's resident set (/proc/<pid>/status) before, during and after")
	flag.IntVar(&c.memClients, "memory-clients", 16, "concurrent clients of the --memory phase")
	flag.StringVar(&c.shape, "shape", "", "have the fake loom print a payload of this `shape` (internal/testsupport/benchdata.Shapes: envelope-values, long-name, long-name-ff, long-number, envelope-names, row-names, ...) of --payload-bytes (default 48 MB), for --memory")
	floodFlags(&c.flood)
	flag.BoolVar(&c.mcp, "mcp", false, "measure the MCP face against REST instead (mcp.go): CPU per request and p50 of ping, tools/list, describe_handle and loom_search, then loom_search throughput")
	flag.StringVar(&c.mcpRevision, "mcp-revision", "2025-06-18", "with --mcp: the MCP-Protocol-Version the requests speak; 2026-07-28 sends its _meta and Mcp-Method/Mcp-Name headers, and has no ping")
	flag.BoolVar(&c.bareContained, "bare-contained", true, "with --bare: also measure a contained bare server (the bare server starting loom in the namespaces the gateway starts it in: bare.go), the floor of the gateway's process CPU once loom is contained")
	serveBareLoom := flag.String("serve-bare", "", "internal: serve as the bare server for the loom at `path` (contained with --bare-contained)")
	flag.Parse()
	if *serveBareLoom != "" {
		fmt.Fprintln(os.Stderr, "loadgen bare server:", serveBare(*serveBareLoom, c.bareContained))
		os.Exit(1)
	}
	if c.gateway == "" && c.cpuprofile == "" && c.trace == "" {
		fmt.Fprintln(os.Stderr, "loadgen: --gateway is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// target is a gateway to call: its agent base URL and one run token per
// client.
type target struct {
	agentURL string
	runs     []runToken
	stop     func()
	logPath  string // the gateway's JSON log, when it is a process
	pid      int    // the gateway's process, when it is one
	// hostURL and hostToken reach its host API, when it is a process.
	hostURL, hostToken string
}

type runToken struct{ id, token string }

func run(ctx context.Context, c config, w io.Writer) error {
	dir, err := os.MkdirTemp("", "loadgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	loomPath := c.fakeloom
	if loomPath == "" {
		loomPath = filepath.Join(dir, "fastloom")
		build := exec.CommandContext(ctx, "go", "build", "-o", loomPath, "github.com/loom-gateway/gateway/cmd/loadgen/fastloom")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building fastloom: %w", err)
		}
	}
	if loomPath, err = filepath.Abs(loomPath); err != nil {
		return err
	}
	if c.shape != "" {
		if loomPath, err = useShape(&c, dir, loomPath); err != nil {
			return err
		}
	} else if c.payloadBytes > 0 {
		// fastloom prints <its name>.payload when there is one.
		sized := filepath.Join(dir, "sizedloom")
		if err := os.Symlink(loomPath, sized); err != nil {
			return err
		}
		payload := benchdata.Search(c.payloadBytes)
		if c.page {
			payload = benchdata.Page(c.payloadBytes)
		}
		if c.page && c.numbers {
			payload = benchdata.PageOfNumbers(c.payloadBytes)
		}
		if err := os.WriteFile(sized+".payload", payload, 0o600); err != nil {
			return err
		}
		loomPath = sized
	}

	if c.flood.on {
		sit := beginSitting(w)
		defer sit.end(w)
		return flood(ctx, c, dir, loomPath, w)
	}
	if c.memory > 0 {
		c.clients = max(c.clients, c.memClients)
	}
	var tg *target
	if c.cpuprofile != "" || c.trace != "" {
		tg, err = startInProcess(ctx, dir, loomPath, c.clients+1, c.cpuprofile, c.trace, nil)
	} else {
		tg, err = startGateway(ctx, c, dir, loomPath)
	}
	if err != nil {
		return err
	}
	defer tg.stop()

	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns:        4 * c.clients,
		MaxIdleConnsPerHost: 4 * c.clients,
		IdleConnTimeout:     time.Minute,
	}}
	callOn := func(ctx context.Context, url string, r runToken) error {
		if c.shape != "" {
			return shapeCall(ctx, client, url, r, c)
		}
		if c.page {
			return postTool(ctx, client, url+"/v1/runs/"+r.id+"/loom_page_read", r.token, `{"target":"Projects/Atlas"}`, `"status":"ok"`)
		}
		return toolCall(ctx, client, url, r)
	}
	call := func(ctx context.Context, r runToken) error { return callOn(ctx, tg.agentURL, r) }
	if c.memory > 0 {
		describeShape(c, w)
		sit := beginSitting(w)
		defer sit.end(w)
		return memory(ctx, c, tg, call, w)
	}
	if c.mcp {
		sit := beginSitting(w)
		defer sit.end(w)
		return mcpMode(ctx, c, tg, client, w)
	}
	direct := func(ctx context.Context) error { return execLoom(ctx, loomPath) }
	// The sides measured side by side: direct, then the bare server when
	// there is one, then the gateway.
	type side struct {
		name string
		f    func(ctx context.Context, k int) error
		lat  []time.Duration
		n    int64
		t    time.Duration
	}
	sides := []*side{{name: "direct os/exec:", f: func(ctx context.Context, _ int) error { return direct(ctx) }}}
	var bare *side
	barePid := 0
	if c.bare {
		bareURL, pid, stopBare, err := startBare(ctx, loomPath, false)
		barePid = pid
		if err != nil {
			return err
		}
		defer stopBare()
		bare = &side{name: "bare HTTP+exec:", f: func(ctx context.Context, _ int) error { return bareCall(ctx, client, bareURL) }}
		sides = append(sides, bare)
	}
	// --bare-contained: the bare server again, loom contained as the
	// gateway contains it.
	var boxed *side
	boxedPid := 0
	if c.bare && c.bareContained {
		boxedURL, pid, stopBoxed, err := startBare(ctx, loomPath, true)
		boxedPid = pid
		if err != nil {
			return fmt.Errorf("contained bare server: %w", err)
		}
		defer stopBoxed()
		boxed = &side{name: "bare contained:", f: func(ctx context.Context, _ int) error { return bareCall(ctx, client, boxedURL) }}
		sides = append(sides, boxed)
	}
	gwSide := &side{name: "gateway HTTP call:", f: func(ctx context.Context, k int) error { return call(ctx, tg.runs[k]) }}
	sides = append(sides, gwSide)
	// --beside-env, --beside-arg: a second gateway, the same but for its
	// environment or flags, timed as one more side of the same sitting.
	var beside *side
	var besideLog string
	besidePid := 0
	besideWhat := strings.Join(append(append([]string{}, c.besideEnv...), c.besideArgs...), " ")
	if len(c.besideEnv)+len(c.besideArgs) > 0 && c.cpuprofile == "" && c.trace == "" {
		cb := c
		cb.gatewayEnv = append(append([]string{}, c.gatewayEnv...), c.besideEnv...)
		cb.gatewayArgs = append(append([]string{}, c.gatewayArgs...), c.besideArgs...)
		cb.gatewayLog = ""
		dirB := filepath.Join(dir, "beside")
		if err := os.Mkdir(dirB, 0o700); err != nil {
			return err
		}
		tb, err := startGateway(ctx, cb, dirB, loomPath)
		if err != nil {
			return fmt.Errorf("beside gateway: %w", err)
		}
		defer tb.stop()
		besidePid, besideLog = tb.pid, tb.logPath
		beside = &side{name: "beside gateway:", f: func(ctx context.Context, k int) error { return callOn(ctx, tb.agentURL, tb.runs[k]) }}
		sides = append(sides, beside)
	}
	// --store-floor: two round trips to the store, nothing else.
	var floor *side
	if c.storeFloor != "" {
		f, closeFloor, err := storeFloor(ctx, c.storeFloor)
		if err != nil {
			return err
		}
		defer closeFloor()
		floor = &side{name: "store floor (2 RTT):", f: func(ctx context.Context, _ int) error { return f(ctx) }}
		sides = append(sides, floor)
	}
	dSide := sides[0]

	// Sanity: one call must answer with entries.
	if err := call(ctx, tg.runs[0]); err != nil {
		return fmt.Errorf("first call: %w", err)
	}

	fmt.Fprintf(w, "loadgen: gateway %s, fake loom %s (%d bytes of stdout), GOMAXPROCS %d, NumCPU %d\n",
		describe(c), loomPath, payloadSize(ctx, loomPath), runtime.GOMAXPROCS(0), runtime.NumCPU())
	sit := beginSitting(w)
	defer sit.end(w)

	// Latency: sequential, interleaved one for one, the order rotating so
	// that no side always follows the same other.
	for range c.warmup {
		for _, s := range sides {
			if err := s.f(ctx, 0); err != nil {
				return err
			}
		}
	}
	for i := range c.n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			if err := timeInto(&s.lat, func() error { return s.f(ctx, 0) }); err != nil {
				return err
			}
		}
	}
	// The bare round trip to the gateway process, for scale.
	rt := make([]time.Duration, 0, c.n)
	for range c.n {
		if err := timeInto(&rt, func() error { return healthz(ctx, client, tg.agentURL) }); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nlatency, %d sequential calls each, interleaved:\n", c.n)
	for _, s := range sides {
		st := stats(s.lat)
		fmt.Fprintf(w, "  %-22s p50 %8s  p90 %8s  p99 %8s  mean %8s\n", s.name, st.p50, st.p90, st.p99, st.mean)
	}
	h := stats(rt)
	fmt.Fprintf(w, "  %-22s p50 %8s  p90 %8s  p99 %8s  mean %8s\n", "GET /healthz:", h.p50, h.p90, h.p99, h.mean)
	d, g := stats(dSide.lat), stats(gwSide.lat)
	p50ratio := float64(g.p50) / float64(d.p50)
	fmt.Fprintf(w, "  p50 ratio gateway/direct: %.3f                    overhead p50 %s\n", p50ratio, g.p50-d.p50)
	// The targets (see the package comment): against the direct exec for
	// large payloads, against the bare server for small ones.
	against, p50Max, tputMin := "direct", 1.3, 0.75
	if c.payloadBytes < 1<<20 && bare != nil {
		against, p50Max, tputMin = "bare", 1.08, 0.92
	}
	if bare != nil {
		b := stats(bare.lat)
		if against == "bare" {
			p50ratio = float64(g.p50) / float64(b.p50)
		}
		fmt.Fprintf(w, "  p50 ratio bare/direct:    %.3f (the floor)       overhead p50 %s\n", float64(b.p50)/float64(d.p50), b.p50-d.p50)
		fmt.Fprintf(w, "  p50 ratio gateway/bare:   %.3f                    gateway's own p50 %s\n", float64(g.p50)/float64(b.p50), g.p50-b.p50)
	}
	if boxed != nil {
		b := stats(boxed.lat)
		fmt.Fprintf(w, "  p50 ratio gateway/bare contained: %.3f           gateway's own p50 %s\n", float64(g.p50)/float64(b.p50), g.p50-b.p50)
	}

	if beside != nil && bare != nil {
		b, bs := stats(bare.lat), stats(beside.lat)
		own, ownB := g.p50-b.p50, bs.p50-b.p50
		fmt.Fprintf(w, "  beside gateway (%s): p50 %.3f the gateway's; own p50 (less bare) %s against the gateway's %s", besideWhat, float64(bs.p50)/float64(g.p50), ownB, own)
		if own > 0 {
			fmt.Fprintf(w, ": %.2fx", float64(ownB)/float64(own))
		}
		fmt.Fprintf(w, "\n")
	}
	if floor != nil {
		fmt.Fprintf(w, "  store floor: two round trips p50 %s\n", stats(floor.lat).p50)
	}
	if tg.logPath != "" {
		if err := logSplit(w, "the gateway", tg.logPath, c.n); err != nil {
			fmt.Fprintf(w, "  (no split from the gateway's log: %v)\n", err)
		}
	}
	if besideLog != "" {
		if err := logSplit(w, "the beside gateway", besideLog, c.n); err != nil {
			fmt.Fprintf(w, "  (no split from the beside gateway's log: %v)\n", err)
		}
	}

	if c.rounds <= 0 {
		fmt.Fprintf(w, "\nsummary: p50 gateway/%s %.3f (target <= %.2f: %v); throughput not measured (--rounds 0); direct exec p50 %s\n", against, p50ratio, p50Max, p50ratio <= p50Max, d.p50)
		if c.ownCost {
			if err := ownCost(ctx, c, dir, loomPath, d.p50, 0, w); err != nil {
				return fmt.Errorf("own cost: %w", err)
			}
		}
		return nil
	}

	// Throughput: alternating rounds of equal length.
	fmt.Fprintf(w, "\nthroughput, %d concurrent, %d rounds of %s per side:\n", c.clients, c.rounds, c.duration)
	var directCPU, gatewayCPU cpuTimes // spent during the direct and the gateway phases
	var besideCPU time.Duration        // the beside gateway's process, in its phases
	var bareCPU cpuTimes               // the bare server's process and its looms, in its phases (gateway, gatewayChildren)
	var boxedCPU cpuTimes              // the contained bare server's, alike
	for r := range c.rounds {
		fmt.Fprintf(w, "  round %d:", r+1)
		for _, s := range sides {
			if s == floor {
				continue
			}
			before, beforeB, beforeBare, beforeBoxed := readCPU(tg.pid), readCPU(besidePid), readCPU(barePid), readCPU(boxedPid)
			n, t, err := burst(ctx, c.clients, c.duration, func(ctx context.Context, k int) error { return s.f(ctx, 1+k) })
			if err != nil {
				return err
			}
			switch spent := readCPU(tg.pid).minus(before); s {
			case dSide:
				directCPU = directCPU.plus(spent)
			case gwSide:
				gatewayCPU = gatewayCPU.plus(spent)
			case beside:
				besideCPU += readCPU(besidePid).minus(beforeB).gateway
			case bare:
				bareCPU = bareCPU.plus(readCPU(barePid).minus(beforeBare))
			case boxed:
				boxedCPU = boxedCPU.plus(readCPU(boxedPid).minus(beforeBoxed))
			}
			s.n, s.t = s.n+n, s.t+t
			fmt.Fprintf(w, "  %s %7.1f/s", strings.Fields(s.name)[0], rate(n, t))
		}
		fmt.Fprintf(w, "\n")
	}
	dRate, gRate := rate(dSide.n, dSide.t), rate(gwSide.n, gwSide.t)
	tput := gRate / dRate
	fmt.Fprintf(w, "  all:     direct %7.1f/s  gateway %7.1f/s  ratio gateway/direct %.3f\n", dRate, gRate, tput)
	if bare != nil {
		bRate := rate(bare.n, bare.t)
		if against == "bare" {
			tput = gRate / bRate
		}
		fmt.Fprintf(w, "           bare   %7.1f/s  ratio bare/direct %.3f (the floor), gateway/bare %.3f\n", bRate, bRate/dRate, gRate/bRate)
	}

	if tg.pid > 0 && dSide.n > 0 && gwSide.n > 0 {
		fmt.Fprintf(w, "  CPU per call (8-client phases): direct: loom %s + reading it %s = %s;  gateway: loom %s + gateway process %s = %s (%.2fx)\n",
			per(directCPU.children, dSide.n), per(directCPU.self, dSide.n), per(directCPU.children+directCPU.self, dSide.n),
			per(gatewayCPU.gatewayChildren, gwSide.n), per(gatewayCPU.gateway, gwSide.n), per(gatewayCPU.gatewayChildren+gatewayCPU.gateway, gwSide.n),
			float64(per(gatewayCPU.gatewayChildren+gatewayCPU.gateway, gwSide.n))/float64(per(directCPU.children+directCPU.self, dSide.n)))
	}

	// The bare server's own process against the gateway's: what the
	// gateway's process costs a call beyond the least HTTP front of loom
	// (issue 39: at most 1.5x at 10 KB).
	cpuRatio := 0.0
	if tg.pid > 0 && bare != nil && bare.n > 0 && gwSide.n > 0 {
		gp, bp := per(gatewayCPU.gateway, gwSide.n), per(bareCPU.gateway, bare.n)
		if bp > 0 {
			cpuRatio = float64(gp) / float64(bp)
		}
		fmt.Fprintf(w, "  CPU per call (8-client phases): bare: loom %s + bare process %s;  gateway process %s against the bare process %s: %.2fx (target <= 1.5: %v)\n",
			per(bareCPU.gatewayChildren, bare.n), bp, gp, bp, cpuRatio, cpuRatio > 0 && cpuRatio <= 1.5)
	}
	// The contained bare server's: the same ratio's floor once loom is
	// contained (no front that contains loom so can read below it).
	floorRatio, ownRatio := 0.0, 0.0
	if tg.pid > 0 && bare != nil && boxed != nil && bare.n > 0 && boxed.n > 0 && gwSide.n > 0 {
		gp, bp, xp := per(gatewayCPU.gateway, gwSide.n), per(bareCPU.gateway, bare.n), per(boxedCPU.gateway, boxed.n)
		if bp > 0 && xp > 0 {
			floorRatio, ownRatio = float64(xp)/float64(bp), float64(gp)/float64(xp)
		}
		fmt.Fprintf(w, "  CPU per call (8-client phases): bare contained: loom and its init %s + process %s: %.2fx the bare process (the floor of gateway/bare once loom is contained); gateway process %.2fx the contained bare process (gateway's own %s)\n",
			per(boxedCPU.gatewayChildren, boxed.n), xp, floorRatio, ownRatio, gp-xp)
	}

	if beside != nil && beside.n > 0 && gwSide.n > 0 {
		gp, bp := per(gatewayCPU.gateway, gwSide.n), per(besideCPU, beside.n)
		fmt.Fprintf(w, "  beside gateway (%s) against the gateway, same sitting: p50 %.3f, calls/s %.3f, gateway process CPU per call %s against %s: %.3f\n",
			besideWhat, float64(stats(beside.lat).p50)/float64(g.p50), rate(beside.n, beside.t)/gRate, bp, gp, float64(bp)/float64(gp))
	}

	fmt.Fprintf(w, "\nsummary: against %s: p50 ratio %.3f (target <= %.2f: %v), throughput ratio %.3f (target >= %.2f: %v)",
		against, p50ratio, p50Max, p50ratio <= p50Max, tput, tputMin, tput >= tputMin)
	if cpuRatio > 0 {
		fmt.Fprintf(w, ", gateway/bare process CPU %.2f (target <= 1.5: %v)", cpuRatio, cpuRatio <= 1.5)
	}
	if floorRatio > 0 {
		fmt.Fprintf(w, ", contained bare/bare process CPU %.2f (the floor), gateway/contained bare %.2f", floorRatio, ownRatio)
	}
	// The direct exec's p50 says how fast this machine starts loom in
	// this sitting: a slow start hides the gateway's fixed cost.
	fmt.Fprintf(w, "; direct exec p50 %s\n", d.p50)
	if c.ownCost {
		if err := ownCost(ctx, c, dir, loomPath, d.p50, dRate, w); err != nil {
			return fmt.Errorf("own cost: %w", err)
		}
	}
	return nil
}

// ownCost serves the handlers in process with a runner that returns the
// fake loom's stdout at once, and reports the latency and throughput of
// full HTTP calls that start no process: the gateway's own cost, beside
// what running loom costs.
func ownCost(ctx context.Context, c config, dir, loomPath string, directP50 time.Duration, directRate float64, w io.Writer) error {
	stdout, err := exec.CommandContext(ctx, loomPath, searchArgv...).Output()
	if err != nil {
		return err
	}
	tg, err := startInProcess(ctx, dir, loomPath, c.clients+1, "", "", fixedRunner{stdout})
	if err != nil {
		return err
	}
	defer tg.stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * c.clients, MaxIdleConnsPerHost: 4 * c.clients}}
	call := func(ctx context.Context, r runToken) error { return toolCall(ctx, client, tg.agentURL, r) }
	for range c.warmup {
		if err := call(ctx, tg.runs[0]); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, 0, c.n)
	for range c.n {
		if err := timeInto(&lat, func() error { return call(ctx, tg.runs[0]) }); err != nil {
			return err
		}
	}
	s := stats(lat)
	n, t, err := burst(ctx, c.clients, c.duration, func(ctx context.Context, k int) error { return call(ctx, tg.runs[1+k]) })
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ngateway's own cost (in process, loom answered without a process, %d calls):\n", c.n)
	fmt.Fprintf(w, "  %-22s p50 %8s  p90 %8s  p99 %8s  mean %8s\n", "HTTP call, no loom:", s.p50, s.p90, s.p99, s.mean)
	fmt.Fprintf(w, "  p50 is %.1f%% of the direct os/exec p50; %d clients: %.0f calls/s", 100*float64(s.p50)/float64(directP50), c.clients, rate(n, t))
	if directRate > 0 {
		fmt.Fprintf(w, ", %.1fx the direct executions' rate", rate(n, t)/directRate)
	}
	fmt.Fprintln(w)
	return nil
}

func describe(c config) string {
	if c.cpuprofile != "" || c.trace != "" {
		return "in process (profiling)"
	}
	return c.gateway
}

func timeInto(into *[]time.Duration, f func() error) error {
	t := time.Now()
	err := f()
	*into = append(*into, time.Since(t))
	return err
}

func rate(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() }

// burst runs f from k workers for d and returns the calls completed and
// the time taken until the last worker stopped.
func burst(ctx context.Context, k int, d time.Duration, f func(ctx context.Context, worker int) error) (int64, time.Duration, error) {
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if err := f(ctx, i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return n.Load(), time.Since(start), firstErr
}

type summary struct{ p50, p90, p99, mean time.Duration }

func stats(ds []time.Duration) summary {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	return summary{r(at(0.50)), r(at(0.90)), r(at(0.99)), r(sum / time.Duration(len(s)))}
}

// searchArgv is the argv the gateway builds for {"query":"atlas"}; the
// fake ignores it, but the direct side passes the same.
var searchArgv = []string{"search", "atlas", "--json"}

// execLoom runs the fake loom directly and reads its stdout as the pipe
// delivers it, into a 32 KB buffer it reuses (stdin and stderr on the null
// device): the least any reader of loom's output costs.
func execLoom(ctx context.Context, path string) error {
	cmd := exec.CommandContext(ctx, path, searchArgv...)
	cmd.Env = []string{}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("direct run: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("direct run: %w", err)
	}
	n, cerr := io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil || cerr != nil {
		return fmt.Errorf("direct run: %w", errors.Join(err, cerr))
	}
	if n == 0 {
		return errors.New("direct run: no output")
	}
	return nil
}

func payloadSize(ctx context.Context, path string) int {
	out, _ := exec.CommandContext(ctx, path).Output()
	return len(out)
}

// healthz is one GET /healthz: the HTTP round trip without a tool.
func healthz(ctx context.Context, client *http.Client, agentURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, agentURL+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: status %d", resp.StatusCode)
	}
	return nil
}

// toolCall makes one loom_search call and checks that it answered with
// entries.
func toolCall(ctx context.Context, client *http.Client, agentURL string, r runToken) error {
	return postSearch(ctx, client, agentURL+"/v1/runs/"+r.id+"/loom_search", r.token, `"entries":[{`)
}

// postSearch POSTs {"query":"atlas"} to url with token and checks that the
// answer is 200 and holds want.
func postSearch(ctx context.Context, client *http.Client, url, token, want string) error {
	return postTool(ctx, client, url, token, `{"query":"atlas"}`, want)
}

// postTool POSTs input to url with token and checks that the answer is
// 200 and holds want.
func postTool(ctx context.Context, client *http.Client, url, token, input, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(input))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(want)) {
		return fmt.Errorf("POST %s: status %d: %.300s", url, resp.StatusCode, body)
	}
	return nil
}

// writeConfig writes the host config pointing at the fake loom.
func writeConfig(dir, loomPath string) (string, error) {
	cfg := map[string]any{
		"cliPath":   loomPath,
		"transport": map[string]any{"kind": "direct", "instanceDir": dir, "runId": "loadgen"},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "loom-retrieval.json")
	return path, os.WriteFile(path, b, 0o600)
}

// startGateway starts the gateway binary on loopback ports chosen by the
// kernel, reads them from its "gateway listening" log line, and creates the
// runs.
func startGateway(ctx context.Context, c config, dir, loomPath string) (*target, error) {
	cfgPath, err := writeConfig(dir, loomPath)
	if err != nil {
		return nil, err
	}
	hostToken := "loadgen-host-token-0123456789abcdef"
	tokenPath := filepath.Join(dir, "host-token")
	if err := os.WriteFile(tokenPath, []byte(hostToken), 0o600); err != nil {
		return nil, err
	}
	args := []string{
		"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", tokenPath,
		"--loom-retrieval-config", cfgPath, "--log-format", "json",
		"--max-concurrent-loom", fmt.Sprint(2 * c.clients),
		// One run per client for the whole burst: no call-log cap.
		"--max-calls-per-run", "0", "--run-rate", "0",
	}
	args = append(args, c.gatewayArgs...)
	// The log goes to a file the gateway writes itself, so that draining
	// it costs this process nothing while it measures.
	logPath := c.gatewayLog
	if logPath == "" {
		logPath = filepath.Join(dir, "gateway.log")
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(c.gateway, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, c.gatewayEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	a, err := listeners(ctx, logPath)
	if err != nil {
		stop()
		return nil, err
	}
	for _, addr := range a {
		if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
			stop()
			return nil, fmt.Errorf("gateway listens on %q, not loopback", addr)
		}
	}
	tg := &target{agentURL: "http://" + a[0], stop: stop, logPath: logPath, pid: cmd.Process.Pid, hostURL: "http://" + a[1], hostToken: hostToken}
	for i := range c.clients + 1 {
		r, err := createRun(ctx, "http://"+a[1], hostToken, fmt.Sprintf("load-%d-%d", cmd.Process.Pid, i))
		if err != nil {
			stop()
			return nil, err
		}
		tg.runs = append(tg.runs, r)
	}
	return tg, nil
}

// listeners waits for the gateway's "gateway listening" log line and
// returns the agent and host addresses it names.
func listeners(ctx context.Context, logPath string) ([2]string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		b, _ := os.ReadFile(logPath)
		for _, line := range bytes.Split(b, []byte("\n")) {
			var l struct{ Msg, Agent, Host string }
			if json.Unmarshal(line, &l) == nil && l.Msg == "gateway listening" {
				return [2]string{l.Agent, l.Host}, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return [2]string{}, errors.New("the gateway did not report its listeners within 30s (see its log)")
}

// createRun creates a run with the work-only ceiling through the host API.
func createRun(ctx context.Context, hostURL, hostToken, id string) (runToken, error) {
	body := `{"runId":"` + id + `","maxConfidentiality":["https://loom.example/facet/work"],"ttlSeconds":3600}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hostURL+"/host/v1/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+hostToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return runToken{}, fmt.Errorf("create run: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var created struct{ RunID, Token string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &created) != nil || created.Token == "" {
		return runToken{}, fmt.Errorf("create run: status %d: %.300s", resp.StatusCode, raw)
	}
	return runToken{created.RunID, created.Token}, nil
}

// cpuTimes is CPU time used so far: by this program (self: the direct
// side's exec and read) and its reaped children (the direct side's fake
// looms), and by the gateway process and its reaped children (its looms).
type cpuTimes struct {
	self, children           time.Duration
	gateway, gatewayChildren time.Duration
}

func (a cpuTimes) minus(b cpuTimes) cpuTimes {
	return cpuTimes{a.self - b.self, a.children - b.children, a.gateway - b.gateway, a.gatewayChildren - b.gatewayChildren}
}

func (a cpuTimes) plus(b cpuTimes) cpuTimes {
	return cpuTimes{a.self + b.self, a.children + b.children, a.gateway + b.gateway, a.gatewayChildren + b.gatewayChildren}
}

// per is d per call over n calls, to the microsecond.
func per(d time.Duration, n int64) time.Duration {
	return (d / time.Duration(n)).Round(time.Microsecond)
}

// readCPU reads getrusage for this program and /proc/<pid>/stat (utime,
// stime, cutime, cstime) for the gateway; pid 0 leaves the gateway's at 0.
func readCPU(pid int) cpuTimes {
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	c := cpuTimes{self: tv(self.Utime) + tv(self.Stime), children: tv(kids.Utime) + tv(kids.Stime)}
	if pid <= 0 {
		return c
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return c
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 15 {
		return c
	}
	tick := func(s string) time.Duration {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Second / 100 // USER_HZ
	}
	c.gateway = tick(f[11]) + tick(f[12])
	c.gatewayChildren = tick(f[13]) + tick(f[14])
	return c
}
