package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
)

// matching returns the metrics of family name whose labels include the
// name/value pairs kv.
func matching(t *testing.T, g prometheus.Gatherer, name string, kv ...string) []*dto.Metric {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []*dto.Metric
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if labels[kv[i]] != kv[i+1] {
					continue metrics
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// metricValue is the value of the one counter or gauge of family name with
// labels kv; 0 when there is none.
func metricValue(t *testing.T, g prometheus.Gatherer, name string, kv ...string) float64 {
	t.Helper()
	ms := matching(t, g, name, kv...)
	if len(ms) > 1 {
		t.Fatalf("%s%v matches %d series", name, kv, len(ms))
	}
	if len(ms) == 0 {
		return 0
	}
	return value(ms[0])
}

// metricSum adds up every series of family name.
func metricSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	var sum float64
	for _, m := range matching(t, g, name) {
		sum += value(m)
	}
	return sum
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// histogramCount is the observation count of the histogram of family name
// with labels kv; 0 when there is none.
func histogramCount(t *testing.T, g prometheus.Gatherer, name string, kv ...string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range matching(t, g, name, kv...) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

// scrape returns what /metrics serves for g.
func scrape(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	MetricsHandler(g, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// loadRunner is a Runner reporting fixed process slot counts.
type loadRunner struct {
	gateway.Runner
	inFlight, queued atomic.Int64
}

func (r *loadRunner) InFlight() int64 { return r.inFlight.Load() }
func (r *loadRunner) Queued() int64   { return r.queued.Load() }

// The production runner reports its slots.
var _ loadReporter = (*loom.CLI)(nil)

func TestMetricNames(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg, nil, memstore.New(memstore.Options{})); err != nil {
		t.Fatal(err)
	}
	// Only the gauges and pre-set series show before any traffic; a
	// failing lint would name a badly named metric.
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric lint: %s: %s", p.Metric, p.Text)
	}
	for _, name := range []string{
		"loom_gateway_loom_processes_in_flight", "loom_gateway_loom_processes_queued",
		"loom_gateway_runs_live", "loom_gateway_rows_withheld_total",
	} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
			t.Errorf("%s: %d series, %v; want it present before any traffic", name, n, err)
		}
	}
	if _, err := NewMetrics(reg, nil, nil); err == nil {
		t.Errorf("NewMetrics on a registry that has them: no error")
	}
}

func TestGauges(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	r := &loadRunner{}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, r, st)
	if err != nil {
		t.Fatal(err)
	}
	m.live.ttl = 0 // count at every scrape
	r.inFlight.Store(3)
	r.queued.Store(2)
	if got := metricValue(t, reg, "loom_gateway_loom_processes_in_flight"); got != 3 {
		t.Errorf("in flight = %v, want 3", got)
	}
	if got := metricValue(t, reg, "loom_gateway_loom_processes_queued"); got != 2 {
		t.Errorf("queued = %v, want 2", got)
	}
	for i := range 4 {
		if err := st.CreateRun(context.Background(), store.Run{ID: fmt.Sprint("run-", i), TokenHash: store.HashToken(fmt.Sprint("token-", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, reg, "loom_gateway_runs_live"); got != 4 {
		t.Errorf("runs_live = %v, want 4", got)
	}
	if err := st.DeleteRun(context.Background(), "run-0"); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, reg, "loom_gateway_runs_live"); got != 3 {
		t.Errorf("runs_live after a delete = %v, want 3", got)
	}

	// A runner that does not report its slots reads as idle.
	reg2 := prometheus.NewRegistry()
	if _, err := NewMetrics(reg2, &loadlessRunner{}, st); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, reg2, "loom_gateway_loom_processes_in_flight"); got != 0 {
		t.Errorf("in flight without a reporting runner = %v, want 0", got)
	}
}

type loadlessRunner struct{ gateway.Runner }

// countedRuns is a store that counts its runs cheaply and fails when
// asked to.
type countedRuns struct {
	gateway.Store
	n    int
	fail bool
	runs atomic.Int32 // Runs calls
}

func (c *countedRuns) CountRuns(context.Context) (int, error) {
	if c.fail {
		return 0, store.ErrStoreUnavailable
	}
	return c.n, nil
}

func (c *countedRuns) Runs(ctx context.Context) ([]store.Run, error) {
	c.runs.Add(1)
	return nil, errors.New("Runs called")
}

func TestLiveRunsCount(t *testing.T) {
	t.Parallel()
	c := &countedRuns{n: 7}
	l := &liveRuns{st: c, ttl: liveRunsTTL}
	if got := l.count(); got != 7 {
		t.Errorf("count = %v, want 7 (CountRuns)", got)
	}
	c.n = 9
	if got := l.count(); got != 7 {
		t.Errorf("count within the TTL = %v, want the cached 7", got)
	}
	l.ttl, c.fail = 0, true
	if got := l.count(); got != 7 {
		t.Errorf("count when the store fails = %v, want the last 7", got)
	}
	if c.runs.Load() != 0 {
		t.Errorf("Runs called %d times although CountRuns is there", c.runs.Load())
	}
}

// TestMetricsOnlyOnHost: /metrics, mounted through HostRouter's extra hook
// as cmd/gateway does, is served on the host listener behind the host
// token, and the agent listener answers 401 or 404 there, never the
// metrics.
func TestMetricsOnlyOnHost(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	g := newTestGateway(t, gatewayOptions{Registry: reg, HostToken: "host-secret"})
	hostSpec, err := LoadSpec("host")
	if err != nil {
		t.Fatal(err)
	}
	host := HostRouter(g.deps.handlersDeps(), NewHost(g.deps.handlersDeps()), hostSpec, func(r chi.Router) {
		r.Method(http.MethodGet, "/metrics", MetricsHandler(reg, g.deps.Logger))
	})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	wantStatus(t, g.call("r", tok, "loom_search", `{"query":"a"}`), http.StatusOK)

	rec := serve(host, http.MethodGet, "/metrics", "host-secret", "")
	wantStatus(t, rec, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`loom_gateway_tool_calls_total{code="ok",tool="loom_search"} 1`,
		`loom_gateway_http_requests_total{listener="agent",route="/v1/runs/{runId}/loom_search",status="200"} 1`,
		`loom_gateway_runs_live 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	wantProblem(t, serve(host, http.MethodGet, "/metrics", "", ""), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, serve(host, http.MethodGet, "/metrics", "wrong", ""), http.StatusUnauthorized, "unauthorized")

	for _, tt := range []struct {
		token  string
		status int
		code   string
	}{{tok, 404, "route_not_found"}, {"", 401, "unauthorized"}, {"host-secret", 401, "unauthorized"}} {
		rec := serve(g.agent, http.MethodGet, "/metrics", tt.token, "")
		wantProblem(t, rec, tt.status, tt.code)
		if strings.Contains(rec.Body.String(), "loom_gateway_") {
			t.Errorf("agent /metrics serves metrics: %s", rec.Body)
		}
	}
}

// TestStoreErrorsCounted: store failures are counted by operation and
// code; expected outcomes such as run_not_found are not failures.
func TestStoreErrorsCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	done, cancel := context.WithCancel(bg)
	cancel()
	m.storeError(bg, "run", store.ErrRunNotFound)
	m.storeError(bg, "create_run", store.ErrRunLimit)
	m.storeError(bg, "mint", store.ErrHandleLimit)
	m.storeError(bg, "run", fmt.Errorf("redis: %w", store.ErrStoreUnavailable))
	m.storeError(bg, "run", fmt.Errorf("redis: %w", store.ErrStoreUnavailable))
	m.storeError(bg, "calls", errors.New("odd"))
	m.storeError(done, "calls", context.Canceled) // the caller left
	m.storeError(bg, "ping", nil)
	if got := metricValue(t, reg, "loom_gateway_store_errors_total", "op", "run", "code", "store_unavailable"); got != 2 {
		t.Errorf("store_errors_total{run,store_unavailable} = %v, want 2", got)
	}
	if got := metricValue(t, reg, "loom_gateway_store_errors_total", "op", "calls", "code", "internal_error"); got != 1 {
		t.Errorf("store_errors_total{calls,internal_error} = %v, want 1", got)
	}
	if got := metricSum(t, reg, "loom_gateway_store_errors_total"); got != 3 {
		t.Errorf("store_errors_total over all labels = %v, want 3", got)
	}
	var nilMetrics *Metrics
	nilMetrics.storeError(bg, "run", store.ErrStoreUnavailable) // no panic
	if st := nilMetrics.InstrumentStore(nil); st != nil {
		t.Errorf("nil Metrics InstrumentStore wrapped the store")
	}
}

// TestStoreErrorsStartAtZero: every operation countingStore counts has its
// store_errors_total series at zero before the first failure, so an alert
// tells zero from missing.
func TestStoreErrorsStartAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The operations countingStore names, read from its source, so a new
	// method without a storeOps entry fails here.
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	ops := regexp.MustCompile(`s\.m\.storeError\(ctx, "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(ops) < 10 {
		t.Fatalf("found %d storeError calls in metrics.go; the pattern is stale", len(ops))
	}
	for _, op := range ops {
		for _, code := range []string{"store_unavailable", "internal_error"} {
			if ms := matching(t, reg, "loom_gateway_store_errors_total", "op", op[1], "code", code); len(ms) != 1 || value(ms[0]) != 0 {
				t.Errorf("store_errors_total{op=%q,code=%q}: %d series, want one at 0", op[1], code, len(ms))
			}
		}
	}
}
