package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/handlers"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/mcpface"
	"github.com/loom-gateway/gateway/internal/metrics"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/telemetry/otelsetup"
	"github.com/loom-gateway/gateway/internal/version"
	"github.com/loom-gateway/gateway/web"
)

// usageError is a flag or configuration error: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

var errHelp = errors.New("help requested")

// options are the parsed flags.
type options struct {
	listen, hostListen, hostTokenFile string
	configPath                        string
	allowTools                        []string
	mcpAllowOrigins                   []string
	mcpIFCLabels                      bool
	mcpIFCTrustedIntegrity            []string
	allowedHosts                      []string
	maxConfidentiality                string
	commandTimeout                    time.Duration
	maxStdoutBytes                    int64
	maxConcurrentLoom                 int
	maxConcurrentPerRun               int
	busyWait                          time.Duration
	maxRequestBytes                   int64
	maxRuns, maxHandlesPerRun         int
	maxHandleBytesPerRun              int64
	maxCallsPerRun                    int
	runRate                           float64
	runBurst                          int
	maxLabelClauses                   int
	runTTL, shutdownTimeout           time.Duration
	readHeaderTimeout, readTimeout    time.Duration
	idleTimeout                       time.Duration
	maxConnections                    int
	storeURL                          string
	demo                              bool
	demoQuietLog                      bool // --demo without --log-level: warn
	logFormat, logLevel               string
	auditArgShape                     bool
	version                           bool
	receipt                           receiptOptions
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "agent listener `address` (TCP); the only port a sandbox may reach")
	fs.StringVar(&o.hostListen, "host-listen", "unix:/tmp/loom-gateway-host.sock", "host listener: `unix:/path` for a unix socket (mode 0600) or host:port for TCP (then a host token is required)")
	fs.StringVar(&o.hostTokenFile, "host-token-file", "", "`file` holding the host token for a TCP host listener (or env LOOM_GATEWAY_HOST_TOKEN)")
	fs.StringVar(&o.configPath, "loom-retrieval-config", getenv("CF_HARNESS_LOOM_RETRIEVAL_CONFIG"), "absolute `path` of the loom retrieval host config (or env CF_HARNESS_LOOM_RETRIEVAL_CONFIG); without it the eight tools answer not_configured")
	fs.Var((*multiFlag)(&o.mcpAllowOrigins), "mcp-allow-origin", "let a browser page of this `origin` (scheme://host[:port]) call the agent listener, either face (repeatable; default none: a request with an Origin header answers 403)")
	fs.BoolVar(&o.mcpIFCLabels, "mcp-ifc-labels", false, "write on every MCP tool result a _meta.ifc label (integrity trusted|untrusted, confidentiality public|private) for IFC-aware clients, never less restrictive than the rows' labels (docs/agents.md)")
	fs.Var((*multiFlag)(&o.mcpIFCTrustedIntegrity), "mcp-ifc-trusted-integrity", "with --mcp-ifc-labels, an integrity atom `type` the host vouches for: a result whose every admitted row carries one is labelled trusted (repeatable; default none: every loom result is untrusted)")
	fs.Var((*multiFlag)(&o.allowedHosts), "allowed-hosts", "answer the agent listener only for this Host `name` (without port; repeatable; default any: the run token and the Origin rule stand against DNS rebinding); another answers 421")
	fs.Var((*multiFlag)(&o.allowTools), "allow-tool", "offer only this `tool` (repeatable; default all eight); needs --loom-retrieval-config")
	fs.StringVar(&o.maxConfidentiality, "max-confidentiality", "", "process-wide read ceiling: a JSON clause `list`, or @file holding one; met with each run's manifest ceiling")
	durationVar(fs, &o.commandTimeout, "command-timeout", 30*time.Second, "per-call loom timeout, from the process start until its output is measured; the whole process group is killed")
	fs.Int64Var(&o.maxStdoutBytes, "max-stdout-bytes", 64<<20, "cap on a loom process's stdout in `bytes`; past it the group is killed (command_failed)")
	fs.IntVar(&o.maxConcurrentLoom, "max-concurrent-loom", 4*runtime.NumCPU(), "loom calls at once, each from its process start until its output is measured; callers wait --busy-wait for a slot, then answer busy (429)")
	fs.IntVar(&o.maxConcurrentPerRun, "max-concurrent-per-run", 0, "tool calls one run may have in flight, across the replicas sharing the store; one more answers busy (429) at once (default half of --max-concurrent-loom, at least 1)")
	durationVar(fs, &o.busyWait, "busy-wait", 2*time.Second, "how long a call waits for a loom process slot before answering busy")
	fs.Int64Var(&o.maxRequestBytes, "max-request-bytes", 1<<20, "cap on a request body in `bytes` (413 past it)")
	fs.IntVar(&o.maxRuns, "max-runs", 10000, "live runs at most (run_limit_reached past it)")
	fs.IntVar(&o.maxHandlesPerRun, "max-handles-per-run", 100000, "handles one run may hold (handle_limit_reached past it)")
	fs.Int64Var(&o.maxHandleBytesPerRun, "max-handle-bytes-per-run", 64<<20, "`bytes` one run's handles may hold: each handle's value, label, source, kind and label source (handle_limit_reached past it); 0 means no cap")
	fs.IntVar(&o.maxCallsPerRun, "max-calls-per-run", 10000, "calls one run's call log may hold; every further tool call or describe_handle answers call_limit_reached (409); 0 means no cap")
	fs.Float64Var(&o.runRate, "run-rate", 50, "tool calls (and describe_handle) one run may make a second, on average, across every replica sharing the store; past it a call answers rate_limited (429, with Retry-After); 0 means no limit, else at least one call a day (0.0000115741)")
	fs.IntVar(&o.runBurst, "run-burst", 200, "tool calls one run may make at once above --run-rate, the size of its token bucket")
	fs.IntVar(&o.maxLabelClauses, "max-label-clauses", 1000, "clauses a run's model-context label may hold; a call whose rows would take it past answers label_limit_reached (409) and none of them, as does an observation; 0 means no cap")
	durationVar(fs, &o.runTTL, "run-ttl", time.Hour, "a run's lifetime when the host gives no ttlSeconds")
	durationVar(fs, &o.shutdownTimeout, "shutdown-timeout", 35*time.Second, "how long SIGTERM/SIGINT waits for calls in flight")
	durationVar(fs, &o.readHeaderTimeout, "read-header-timeout", 5*time.Second, "how long a client may take to send a request's headers; past it the connection is closed (slowloris)")
	durationVar(fs, &o.readTimeout, "read-timeout", 30*time.Second, "how long a client may take to send a whole request, headers and body; past it a body still unread answers 408 request_timeout and the connection is closed")
	durationVar(fs, &o.idleTimeout, "idle-timeout", 2*time.Minute, "how long a keep-alive connection may sit idle between requests before it is closed")
	fs.IntVar(&o.maxConnections, "max-connections", 0, "open connections per listener at most; past it an idle keep-alive connection is closed, else new ones wait in the accept queue (default 1024, less when the open-file limit leaves less room after loom's needs)")
	fs.StringVar(&o.storeURL, "store", "memory", "run store: memory (this process only), or `redis://[user:pass@]host:port/db` (rediss:// for TLS; ?addr=host:port, then &addr=host:port, per further node for Redis Cluster) shared by replicas")
	fs.BoolVar(&o.demo, "demo", false, "start with the built-in sample Loom and a demo run, and print curl lines to try it")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.auditArgShape, "audit-arg-shape", false, "add to each tool call's audit record the sorted names of the input fields present (never their values)")
	fs.BoolVar(&o.version, "version", false, "print the gateway's version and exit")
	receiptFlags(fs, &o.receipt)
	// The flag list is printed for --help only; a bad flag gets one line.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintf(stderr, "Usage: gateway [flags]\n\nServes the eight read-only Loom retrieval tools to sandboxed agents.\n\nFlags:\n")
			fs.PrintDefaults()
			return nil, errHelp
		}
		return nil, usagef("%v (gateway --help lists the flags and their values)", durationRefusal(fs, err))
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.demo && !isSet(fs, "log-level") {
		// The demo's banner is for a person at a terminal: request logs
		// would scroll it away.
		o.logLevel, o.demoQuietLog = "warn", true
	}
	return o, nil
}

// isSet reports whether the command line gave the flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run is the whole gateway: flags, configuration, listeners, serving and
// graceful shutdown. It returns when ctx is cancelled and the calls in
// flight have drained.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == "check-loom" {
		return checkLoom(ctx, args[2:], getenv, stdout, stderr)
	}
	if len(args) > 1 && args[1] == "verify-receipt" {
		return verifyReceipt(ctx, args[2:], os.Stdin, stdout, stderr)
	}
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	if o.version {
		_, err := fmt.Fprintln(stdout, "loom-gateway", version.String())
		return err
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	// Traces, when OTEL_* asks for them (docs/operators.md, Observability).
	stopTracing, err := otelsetup.Setup(ctx, getenv, version.String())
	if err != nil {
		return fmt.Errorf("tracing (OTEL_*): %w", err)
	}
	defer flushTraces(stopTracing, log)
	var demo *demoSetup
	if o.demo {
		if demo, err = setUpDemo(o); err != nil {
			return err
		}
		defer demo.cleanup()
	}

	d, err := buildDeps(o, getenv, log)
	if err != nil {
		return err
	}
	maxConns, err := connectionCap(o.maxConnections, o.maxConcurrentLoom, fdLimit())
	if err != nil {
		return err
	}
	agentConns, hostConns := newConnLimit(maxConns), newConnLimit(maxConns)
	st, closeStore := openStore(o, log)
	defer closeStore()
	chainsOf(d.Receipts, st)
	mountMetrics, err := instrument(d, st, log, map[string]*connLimit{"agent": agentConns, "host": hostConns})
	if err != nil {
		return err
	}

	agentLn, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usagef("--listen %s: %v%s", o.listen, err, portHint(err))
	}
	defer agentLn.Close()
	hostLn, err := listenHost(o.hostListen)
	if err != nil {
		return err
	}
	defer hostLn.Close()
	if hostLn.Addr().Network() == "tcp" && d.HostToken == "" {
		return usagef("--host-listen %s is TCP: a host token is required (--host-token-file or LOOM_GATEWAY_HOST_TOKEN)", o.hostListen)
	}

	console, err := web.New(web.Options{AgentURL: "http://" + agentLn.Addr().String()})
	if err != nil {
		return err
	}
	fc := d.faces()
	fc.AllowOrigins, fc.AllowedHosts = o.mcpAllowOrigins, o.allowedHosts
	fc.IFC = mcpface.IFCLabels{On: o.mcpIFCLabels, TrustedIntegrity: o.mcpIFCTrustedIntegrity}
	fc.HostExtra = func(r chi.Router) {
		console.Mount(r)
		mountMetrics(r)
	}
	f, err := handlers.New(fc)
	if err != nil {
		return err
	}
	core := f.Core
	agentSrv := newServer(f.Agent, o, agentConns, log)
	hostSrv := newServer(console.Public(f.Host), o, hostConns, log)

	// A store shared by replicas reports the runs deleted through the
	// others, whose calls here are cancelled. The watch outlives ctx: the
	// calls draining after it still answer to deletes. It stops before
	// the store closes (defers run last first).
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	var watching sync.WaitGroup
	defer func() { stopWatch(); watching.Wait() }()
	if w, ok := st.(gateway.DeleteWatcher); ok {
		watching.Go(func() { core.FollowDeletes(watchCtx, w) })
	}

	errc := make(chan error, 2)
	go func() { errc <- serve(agentSrv, agentConns.listener(agentLn)) }()
	go func() { errc <- serve(hostSrv, hostConns.listener(hostLn)) }()
	if mem, ok := st.(*memstore.Store); ok {
		go sweep(ctx, mem, core)
	}
	log.Info("gateway listening", "version", version.String(), "agent", agentLn.Addr().String(), "host", hostLn.Addr().String(), "tools", len(d.Tools), "configured", d.Loom != nil, "maxConnections", maxConns)
	warnMisconfigured(log, o, d)

	if demo != nil {
		if err := demo.start(ctx, d, agentLn.Addr().String(), hostLn.Addr(), stdout); err != nil {
			return err
		}
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down; draining calls in flight")
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	err = errors.Join(agentSrv.Shutdown(sctx), hostSrv.Shutdown(sctx))
	if err != nil {
		// The drain deadline passed with calls in flight: no loom they
		// started may outlive the gateway.
		killed := killLoom(d.Runner)
		log.Warn("stopped", "drained", false, "shutdownTimeout", o.shutdownTimeout.String(), "loomKilled", killed)
	} else {
		log.Info("stopped", "drained", true)
	}
	return err
}

// deps is what run wires: the core's configuration and what the HTTP
// faces take besides the core.
type deps struct {
	gateway.Config
	// HostToken, when set, is required on the host listener.
	HostToken string
	// MaxRequestBytes caps request bodies.
	MaxRequestBytes int64
	// Metrics are the gateway's metrics (instrument), the core's
	// Recorder.
	Metrics *metrics.Metrics
}

// faces returns the configuration of the faces over d.
func (d *deps) faces() handlers.Config {
	cfg := handlers.Config{Core: d.Config, HostToken: d.HostToken, MaxRequestBytes: d.MaxRequestBytes, Version: version.String()}
	if d.Metrics != nil {
		cfg.Core.Recorder, cfg.Requests = d.Metrics, d.Metrics
	}
	return cfg
}

// minRunRate is the slowest --run-rate the gateway takes, one call a day:
// a refused call then waits at most a day, which Retry-After says in whole
// seconds (86400 at most), rounded up, and the bucket keeps.
const minRunRate = 1.0 / 86400

// minHostToken is the shortest host token the gateway takes, in bytes.
const minHostToken = 32

// buildDeps validates the configuration flags and builds the handlers'
// dependencies, except the store.
func buildDeps(o *options, getenv func(string) string, log *slog.Logger) (*deps, error) {
	d := &deps{
		Config: gateway.Config{
			Logger:               log,
			MaxHandlesPerRun:     o.maxHandlesPerRun,
			MaxCallsPerRun:       o.maxCallsPerRun,
			RunRate:              store.Rate{PerSecond: o.runRate, Burst: o.runBurst},
			MaxLabelClauses:      o.maxLabelClauses,
			MaxHandleBytesPerRun: o.maxHandleBytesPerRun,
			RunTTL:               o.runTTL,
			AuditArgShape:        o.auditArgShape,
		},
		MaxRequestBytes: o.maxRequestBytes,
	}
	if o.storeURL != "memory" {
		if _, _, err := redisOptions(o.storeURL); err != nil {
			return nil, usagef("--store: %v", err)
		}
	}
	for _, name := range o.allowTools {
		if _, ok := loom.ParseTool(name); !ok {
			return nil, usagef("--allow-tool %q: not one of the eight tools: %s", name, toolNames())
		}
	}
	if len(o.mcpIFCTrustedIntegrity) > 0 && !o.mcpIFCLabels {
		return nil, usagef("--mcp-ifc-trusted-integrity needs --mcp-ifc-labels: it says which results the labels call trusted")
	}
	for _, t := range o.mcpIFCTrustedIntegrity {
		if t == "" {
			return nil, usagef("--mcp-ifc-trusted-integrity: an empty atom type")
		}
	}
	if o.configPath == "" && len(o.allowTools) > 0 {
		return nil, usagef("--allow-tool %s needs --loom-retrieval-config: a retrieval tool without the host config is a contradiction", o.allowTools[0])
	}
	if o.configPath != "" {
		cfg, err := loom.LoadConfig(o.configPath)
		if err != nil {
			return nil, usagef("--loom-retrieval-config %s: %v", o.configPath, err)
		}
		d.Loom, d.LoomPath = cfg, cfg.CLIPath
		hostPath, set := os.LookupEnv("PATH")
		d.Env = loom.Env(cfg, hostPath, set)
		// A call keeps its slot, and its deadline, until loom's output
		// is measured, not only while the process lives.
		d.Slots = loom.NewLimiter(o.maxConcurrentLoom, o.busyWait)
		d.CommandTimeout = o.commandTimeout
		d.BusyWait = o.busyWait
		d.Runner = loom.New(loom.Options{
			Timeout:   o.commandTimeout,
			MaxStdout: o.maxStdoutBytes,
			Limiter:   d.Slots,
			Contain:   loomContainment(log, os.Executable, loom.Contain),
		})
		d.Tools = loom.Tools
		if len(o.allowTools) > 0 {
			d.Tools = nil
			for _, name := range o.allowTools {
				t, ok := loom.ParseTool(name)
				if !ok {
					return nil, usagef("--allow-tool %q: not one of the eight tools", name)
				}
				d.Tools = append(d.Tools, t)
			}
		}
	}
	if o.maxConfidentiality != "" {
		text := []byte(o.maxConfidentiality)
		if name, ok := strings.CutPrefix(o.maxConfidentiality, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, usagef("--max-confidentiality: cannot read %s", name)
			}
			text = b
		}
		conf, err := ifc.ParseCeiling(text)
		if err != nil {
			return nil, usagef("--max-confidentiality: not a JSON clause list")
		}
		d.MaxConfidentiality = ifc.CeilingOf(conf)
	}
	token := getenv("LOOM_GATEWAY_HOST_TOKEN")
	if o.hostTokenFile != "" {
		t, err := readTokenFile(o.hostTokenFile, getenv("CREDENTIALS_DIRECTORY"))
		if err != nil {
			return nil, err
		}
		token = t
	}
	if token != "" && len(token) < minHostToken {
		return nil, usagef("the host token is %d bytes; it must be at least %d (make one with: head -c 32 /dev/urandom | base64 > host-token)", len(token), minHostToken)
	}
	d.HostToken = token
	receipts, err := receiptConfig(o.receipt, getenv("CREDENTIALS_DIRECTORY"))
	if err != nil {
		return nil, err
	}
	d.Receipts = receipts
	for name, v := range map[string]int64{"--max-stdout-bytes": o.maxStdoutBytes, "--max-request-bytes": o.maxRequestBytes, "--max-concurrent-loom": int64(o.maxConcurrentLoom), "--max-runs": int64(o.maxRuns)} {
		if v <= 0 {
			return nil, usagef("%s must be positive", name)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"--command-timeout", o.commandTimeout}, {"--run-ttl", o.runTTL}, {"--read-header-timeout", o.readHeaderTimeout}, {"--read-timeout", o.readTimeout}, {"--idle-timeout", o.idleTimeout}} {
		if f.v <= 0 {
			return nil, usagef("%s %v: must be a positive duration, such as 30s or 2m", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
		zero string // what 0 means
	}{
		{"--max-concurrent-per-run", int64(o.maxConcurrentPerRun), "the default"},
		{"--max-connections", int64(o.maxConnections), "the default"},
		{"--max-calls-per-run", int64(o.maxCallsPerRun), "no cap"},
		{"--max-label-clauses", int64(o.maxLabelClauses), "no cap"},
		{"--max-handle-bytes-per-run", o.maxHandleBytesPerRun, "no cap"},
	} {
		if f.v < 0 {
			return nil, usagef("%s must not be negative (0: %s)", f.name, f.zero)
		}
	}
	if o.runRate < 0 || math.IsNaN(o.runRate) || math.IsInf(o.runRate, 0) {
		return nil, usagef("--run-rate %v: must be a number of calls a second, 0 or more (0: no limit)", o.runRate)
	}
	if o.runRate > 0 && o.runRate < minRunRate {
		return nil, usagef("--run-rate %v: below the floor of one call a day (1/86400 calls a second: 0.0000115741 or more), under which a refused call's Retry-After could not say when the bucket refills; 0 means no limit", o.runRate)
	}
	if o.runRate > 0 && o.runBurst < 1 {
		return nil, usagef("--run-burst %d: must be at least 1 with a --run-rate", o.runBurst)
	}
	d.MaxConcurrentPerRun = o.maxConcurrentPerRun
	if d.MaxConcurrentPerRun == 0 {
		d.MaxConcurrentPerRun = max(1, o.maxConcurrentLoom/2)
	}
	return d, nil
}

// listenHost opens the host listener: a unix socket (mode 0600) for
// "unix:/path", TCP otherwise.
func listenHost(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		if hint := hostListenHint(addr); hint != "" {
			return nil, usagef("--host-listen %s: %s", addr, hint)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, usagef("--host-listen %s: %v%s", addr, err, portHint(err))
		}
		return ln, nil
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := removeStaleSocket(path); err != nil {
			return nil, usagef("--host-listen %s: %v", addr, err)
		}
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, usagef("--host-listen %s: %v", addr, err)
	}
	return ln, nil
}

// removeStaleSocket removes the socket at path only when nothing answers
// on it: a socket that refuses connections is the leftover of a process
// that is gone. One that accepts is another gateway's live host API (the
// default path is shared by every gateway started with defaults), and one
// that cannot be probed is left alone too.
func removeStaleSocket(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return errors.New("the path is in use: a process is serving on that socket (stop it or choose another path)")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return errors.New("a socket is at the path and cannot be probed; remove it or choose another path")
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.New("a stale socket is at the path and cannot be removed")
	}
	return nil
}

// newServer is one listener's server. Its write deadline runs from the end
// of a request's headers, so it covers everything a call may take before
// its answer is written: the body (--read-timeout), the wait for a loom
// slot (--busy-wait), loom and the measuring of its output
// (--command-timeout, which bounds both), and a margin for WaitDelay. The
// server's own errors (accept failures, TLS, panics it recovered) go to the
// gateway's log as JSON, not to stderr. conns learns from it which
// connections are idle.
func newServer(h http.Handler, o *options, conns *connLimit, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readTimeout,
		WriteTimeout:      o.readTimeout + o.busyWait + o.commandTimeout + 30*time.Second,
		IdleTimeout:       o.idleTimeout,
		ConnState:         conns.ConnState,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// sweep drops expired runs from the memory store once a minute, each
// run's receipt signed as it goes (core.Expired).
func sweep(ctx context.Context, m *memstore.Store, core *gateway.Service) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.SweepEnded(core.Expired)
		}
	}
}

func newLogger(o *options, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usagef("--log-level %q: one of debug, info, warn, error", o.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: json or text", o.logFormat)
}

// flushTraces sends the spans still held to the collector, for at most
// 5 s, when the gateway stops.
func flushTraces(stop func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("traces not flushed", "err", err)
	}
}

// killLoom kills the process group of every loom command still running
// and waits (a little) until each has been reaped; it returns how many
// it killed.
func killLoom(r gateway.Runner) int {
	cli, ok := r.(*loom.CLI)
	if !ok {
		return 0
	}
	n := cli.KillAll()
	for deadline := time.Now().Add(2 * time.Second); cli.Live() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// containmentFix is what the warning of a gateway without a namespace
// for loom's commands says would give it one: docs/operators.md, "Build and
// install", and docs/deploy/container.md say the same at length.
const containmentFix = "in a container, the seccomp profile deploy/seccomp/loom-gateway.json " +
	"(podman or docker run --security-opt seccomp=loom-gateway.json; Kubernetes: securityContext.seccompProfile " +
	"{type: Localhost, localhostProfile: loom-gateway.json}; Docker's default profile and Kubernetes' RuntimeDefault refuse namespaces) " +
	"or CAP_SYS_ADMIN; on a host, unprivileged user namespaces (kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0, " +
	"on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0; under systemd RestrictNamespaces= allowing user pid) or CAP_SYS_ADMIN"

// loomContainment returns the containment contain (loom.Contain) finds
// for loom's processes, with the gateway's own executable (as executable
// returns it) as the init it falls back on, and says at start-up which it
// is: a warning when it is the process group alone, naming what would
// give a namespace (containmentFix).
func loomContainment(log *slog.Logger, executable func() (string, error), contain func(string) (loom.Containment, error)) loom.Containment {
	exe, err := executable()
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		exe = "" // the C init may do
	}
	c, err := contain(exe)
	if err != nil {
		log.Warn("loom commands run in a process group only: what a loom command starts outside its group, or leaves behind when the gateway is killed, is not ended by the gateway",
			"err", err, "fix", containmentFix)
		return c
	}
	log.Info("loom commands run in a namespace of their own", "containment", c.String(), "init", c.Init)
	return c
}
