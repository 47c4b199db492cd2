package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/metrics"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// Compile-time checks that the concrete types satisfy the interfaces the
// handlers consume (STYLE 4).
var (
	_ gateway.Store  = (*memstore.Store)(nil)
	_ gateway.Runner = (*loom.CLI)(nil)
	_ gateway.Runner = (*loomtest.Fake)(nil)
)

// testStart is the fake clock's starting instant.
var testStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fakeClock is a settable clock shared by the handlers and the store.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gatewayOptions configures newTestGateway. The zero value is a gateway
// over the sample loom, offering all eight tools, no ceiling, no host
// token.
type gatewayOptions struct {
	// RunFunc answers loom calls; nil means loomtest.Sample.
	RunFunc func(ctx context.Context, argv, env []string) (loomref.Output, error)
	// NoConfig leaves Deps.Config nil (the tools are not configured).
	NoConfig bool
	// ReadCeilingFile and Facets go into the loom config.
	ReadCeilingFile string
	Facets          []string
	// Tools is the set the gateway offers; nil means loom.Tools.
	Tools []loom.Tool
	// MaxConfidentiality is the process-wide ceiling as a JSON clause
	// list; "" means none.
	MaxConfidentiality string
	HostToken          string
	MaxRequestBytes    int64
	MaxHandlesPerRun   int
	// MaxHandleBytesPerRun caps the bytes each run's handles hold.
	MaxHandleBytesPerRun int64
	// MaxCallsPerRun caps each run's call log.
	MaxCallsPerRun int
	// MaxConcurrentPerRun caps each run's tool calls in flight.
	MaxConcurrentPerRun int
	// MaxLabelClauses caps each run's model-context label, in the
	// handlers and the store.
	MaxLabelClauses int
	// WrapStore, when set, wraps the memory store the handlers use.
	WrapStore func(*memstore.Store) gateway.Store
	// Registry, when set, gets the gateway's metrics (metrics.New), and
	// the store is instrumented as in production.
	Registry      prometheus.Registerer
	AuditArgShape bool
	// HostExtra mounts more routes on the host router, behind the host
	// token, as cmd/gateway mounts /metrics and the console.
	HostExtra func(chi.Router)
}

// testDeps is a test gateway's configuration: the core's and the
// handlers'. Tests may change it until the gateway serves its first
// request, when the core and the routers are built from it; beforeMeasure
// may change at any time.
type testDeps struct {
	gateway.Config
	HostToken       string
	MaxRequestBytes int64
	Metrics         *metrics.Metrics
	HostExtra       func(chi.Router)
	beforeMeasure   func(stage context.Context)

	once  sync.Once
	core  *gateway.Service
	agent http.Handler
	host  http.Handler
}

// build builds the core and the routers, once, as the binary does (New).
func (d *testDeps) build() {
	d.once.Do(func() {
		cfg := Config{
			Core: d.Config, MaxRequestBytes: d.MaxRequestBytes, HostToken: d.HostToken,
			HostExtra: d.HostExtra, Version: "test",
		}
		cfg.Core.BeforeMeasure = func(stage context.Context) {
			if d.beforeMeasure != nil {
				d.beforeMeasure(stage)
			}
		}
		if d.Metrics != nil {
			cfg.Core.Recorder, cfg.Requests = d.Metrics, d.Metrics
		}
		f, err := New(cfg)
		if err != nil {
			panic(err) // the embedded contract: only a broken build
		}
		d.core, d.agent, d.host = f.Core, f.Agent, f.Host
	})
}

// Core is the gateway's core, built on first use.
func (d *testDeps) Core() *gateway.Service {
	d.build()
	return d.core
}

// lazy serves through the router that pick returns, once built.
func (d *testDeps) lazy(pick func() http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.build()
		pick().ServeHTTP(w, r)
	})
}

// testGateway is both routers over one set of deps.
type testGateway struct {
	deps  *testDeps
	store *memstore.Store
	fake  *loomtest.Fake
	clock *fakeClock
	logs  *testkit.Buffer
	agent http.Handler
	host  http.Handler
}

// testConfig is the loom configuration every test gateway uses.
func testConfig() *loom.Config {
	return &loom.Config{
		CLIPath:   "/usr/bin/loom",
		Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: "/srv/loom", RunID: "t"},
	}
}

func newTestGateway(t testing.TB, opts gatewayOptions) *testGateway {
	t.Helper()
	clock := &fakeClock{now: testStart}
	st := memstore.New(memstore.Options{Now: clock.Now, MaxLabelClauses: opts.MaxLabelClauses})
	fake := &loomtest.Fake{RunFunc: opts.RunFunc}
	if fake.RunFunc == nil {
		fake.RunFunc = loomtest.Sample
	}
	logs := &testkit.Buffer{}
	var rs gateway.Store = st
	if opts.WrapStore != nil {
		rs = opts.WrapStore(st)
	}
	d := &testDeps{
		Config: gateway.Config{
			Store:            rs,
			Runner:           fake,
			MaxHandlesPerRun: opts.MaxHandlesPerRun,
			RunTTL:           time.Hour,
			Logger:           slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Now:              clock.Now,
			AuditArgShape:    opts.AuditArgShape,
		},
		MaxRequestBytes: opts.MaxRequestBytes,
		HostToken:       opts.HostToken,
		HostExtra:       opts.HostExtra,
	}
	d.MaxConcurrentPerRun = opts.MaxConcurrentPerRun
	d.MaxLabelClauses = opts.MaxLabelClauses
	d.MaxCallsPerRun = opts.MaxCallsPerRun
	d.MaxHandleBytesPerRun = opts.MaxHandleBytesPerRun
	if opts.Registry != nil {
		m, err := metrics.New(opts.Registry, fake, st)
		if err != nil {
			t.Fatalf("metrics.New: %v", err)
		}
		d.Metrics, d.Store = m, m.Store(rs)
	}
	if !opts.NoConfig {
		cfg := testConfig()
		cfg.ReadCeilingFile, cfg.Facets = opts.ReadCeilingFile, opts.Facets
		if err := cfg.Validate(); err != nil {
			t.Fatalf("test config: %v", err)
		}
		d.Loom, d.LoomPath = cfg, cfg.CLIPath
		d.Env = loom.Env(cfg, "/usr/bin:/bin", true)
		d.Tools = loom.Tools
		if opts.Tools != nil {
			d.Tools = opts.Tools
		}
	}
	if opts.MaxConfidentiality != "" {
		conf, err := ifc.ParseConfidentiality([]byte(opts.MaxConfidentiality))
		if err != nil {
			t.Fatalf("ParseConfidentiality(%s): %v", opts.MaxConfidentiality, err)
		}
		d.MaxConfidentiality = ifc.CeilingOf(conf)
	}
	return &testGateway{
		deps:  d,
		store: st,
		fake:  fake,
		clock: clock,
		logs:  logs,
		agent: d.lazy(func() http.Handler { return d.agent }),
		host:  d.lazy(func() http.Handler { return d.host }),
	}
}

// hostDo calls the host router, with the host token when one is set.
func (g *testGateway) hostDo(method, path, body string) *httptest.ResponseRecorder {
	return testkit.Serve(g.host, method, path, g.deps.HostToken, body)
}

// agentDo calls the agent router with a run token.
func (g *testGateway) agentDo(method, path, token, body string) *httptest.ResponseRecorder {
	return testkit.Serve(g.agent, method, path, token, body)
}

// call calls a tool (or describe_handle, result) of run id with token.
func (g *testGateway) call(id, token, op, body string) *httptest.ResponseRecorder {
	return g.agentDo(http.MethodPost, "/v1/runs/"+id+"/"+op, token, body)
}

// createRun creates a run through the host router and returns its id and
// token; body "" creates a run with every default.
func (g *testGateway) createRun(t testing.TB, body string) (id, token string) {
	t.Helper()
	if body == "" {
		body = "{}"
	}
	rec := g.hostDo(http.MethodPost, "/host/v1/runs", body)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /host/v1/runs %s = %d %s, want 201", body, rec.Code, rec.Body)
	}
	var out struct {
		RunID string `json:"runId"`
		Token string `json:"token"`
	}
	decode(t, rec, &out)
	return out.RunID, out.Token
}

// decode unmarshals the response body into v.
func decode(t testing.TB, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("response %d %q: %v", rec.Code, rec.Body, err)
	}
}

// wantProblem checks that rec is a problem with status and code, with
// the table's text (testkit.WantProblem), served as
// application/problem+json with the request's id, and returns it.
func wantProblem(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) testkit.Problem {
	t.Helper()
	p := testkit.WantProblem(t, rec.Code, rec.Body.Bytes(), status, code)
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	if p.RequestID == "" || p.RequestID != rec.Header().Get("X-Request-Id") {
		t.Errorf("requestId = %q, X-Request-Id = %q; want the same non-empty id", p.RequestID, rec.Header().Get("X-Request-Id"))
	}
	return p
}

// wantStatus fails the test unless rec answered status.
func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
}

// allNames returns every member name at any depth of the JSON value body.
func allNames(t *testing.T, body []byte) []string {
	t.Helper()
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	var names []string
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("reading %s: %v", body, err)
		}
		// A string read inside an object at an odd position is a name.
		if tok.Kind() == '"' {
			if k, n := dec.StackIndex(dec.StackDepth()); k == '{' && n%2 == 1 {
				names = append(names, tok.String())
			}
		}
	}
}

// toolResult is the agent's view of a tool result.
type toolResult struct {
	OutputID  string          `json:"outputId"`
	Status    string          `json:"status"`
	Kind      string          `json:"kind"`
	Notice    string          `json:"notice"`
	Admitted  int             `json:"admitted"`
	Withheld  int             `json:"withheld"`
	Omitted   int             `json:"omitted"`
	Truncated bool            `json:"truncated"`
	Envelope  json.RawMessage `json:"envelope"`
	Entries   []toolEntry     `json:"entries"`
}

type toolEntry struct {
	Status      string          `json:"status"`
	ReasonCode  string          `json:"reasonCode"`
	Label       *disclosedLabel `json:"label"`
	LabelSource string          `json:"labelSource"`
	Value       json.RawMessage `json:"value"`
	Truncated   bool            `json:"truncated"`
	Handle      string          `json:"handle"`
}

type disclosedLabel struct {
	Confidentiality [][]string `json:"confidentiality"`
	Integrity       []string   `json:"integrity"`
}

// problemInfo is the table's entry of a code; ok is false for a code the
// table lacks.
func problemInfo(code string) (problem.Info, bool) {
	for _, c := range problem.Codes() {
		if string(c) == code {
			return problem.Lookup(c), true
		}
	}
	return problem.Info{}, false
}
