package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

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
	if _, err := New(reg, nil, memstore.New(memstore.Options{})); err != nil {
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
	if _, err := New(reg, nil, nil); err == nil {
		t.Errorf("New on a registry that has them: no error")
	}
}

func TestGauges(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	r := &loadRunner{}
	reg := prometheus.NewRegistry()
	m, err := New(reg, r, st)
	if err != nil {
		t.Fatal(err)
	}
	m.live.ttl = 0 // count at every scrape
	r.inFlight.Store(3)
	r.queued.Store(2)
	if got := testkit.MetricValue(t, reg, "loom_gateway_loom_processes_in_flight"); got != 3 {
		t.Errorf("in flight = %v, want 3", got)
	}
	if got := testkit.MetricValue(t, reg, "loom_gateway_loom_processes_queued"); got != 2 {
		t.Errorf("queued = %v, want 2", got)
	}
	for i := range 4 {
		if err := st.CreateRun(context.Background(), store.Run{ID: fmt.Sprint("run-", i), TokenHash: store.HashToken(fmt.Sprint("token-", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if got := testkit.MetricValue(t, reg, "loom_gateway_runs_live"); got != 4 {
		t.Errorf("runs_live = %v, want 4", got)
	}
	if err := st.DeleteRun(context.Background(), "run-0"); err != nil {
		t.Fatal(err)
	}
	if got := testkit.MetricValue(t, reg, "loom_gateway_runs_live"); got != 3 {
		t.Errorf("runs_live after a delete = %v, want 3", got)
	}

	// A runner that does not report its slots reads as idle.
	reg2 := prometheus.NewRegistry()
	if _, err := New(reg2, &loadlessRunner{}, st); err != nil {
		t.Fatal(err)
	}
	if got := testkit.MetricValue(t, reg2, "loom_gateway_loom_processes_in_flight"); got != 0 {
		t.Errorf("in flight without a reporting runner = %v, want 0", got)
	}
}

type loadlessRunner struct{ gateway.Runner }

// countedRuns is a store that counts its runs and fails when asked to.
type countedRuns struct {
	n    int
	fail bool
}

func (c *countedRuns) CountRuns(context.Context) (int, error) {
	if c.fail {
		return 0, store.ErrStoreUnavailable
	}
	return c.n, nil
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
}

// TestStoreErrorsCounted: store failures are counted by operation and
// code; expected outcomes such as run_not_found are not failures.
func TestStoreErrorsCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := New(reg, nil, nil)
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
	if got := testkit.MetricValue(t, reg, "loom_gateway_store_errors_total", "op", "run", "code", "store_unavailable"); got != 2 {
		t.Errorf("store_errors_total{run,store_unavailable} = %v, want 2", got)
	}
	if got := testkit.MetricValue(t, reg, "loom_gateway_store_errors_total", "op", "calls", "code", "internal_error"); got != 1 {
		t.Errorf("store_errors_total{calls,internal_error} = %v, want 1", got)
	}
	if got := testkit.MetricSum(t, reg, "loom_gateway_store_errors_total"); got != 3 {
		t.Errorf("store_errors_total over all labels = %v, want 3", got)
	}
	var nilMetrics *Metrics
	nilMetrics.storeError(bg, "run", store.ErrStoreUnavailable) // no panic
	if st := nilMetrics.Store(nil); st != nil {
		t.Errorf("nil Metrics Store wrapped the store")
	}
}

// TestStoreErrorsStartAtZero: every operation countingStore counts has its
// store_errors_total series at zero before the first failure, so an alert
// tells zero from missing.
func TestStoreErrorsStartAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := New(reg, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The operations countingStore names, read from its source, so a new
	// method without a storeOps entry fails here.
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	ops := regexp.MustCompile(`s\.count\(ctx, "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(ops) < 10 {
		t.Fatalf("found %d counted steps in metrics.go; the pattern is stale", len(ops))
	}
	for _, op := range ops {
		for _, code := range []string{"store_unavailable", "internal_error"} {
			if ms := testkit.Matching(t, reg, "loom_gateway_store_errors_total", "op", op[1], "code", code); len(ms) != 1 || ms[0].GetCounter().GetValue() != 0 {
				t.Errorf("store_errors_total{op=%q,code=%q}: %d series, want one at 0", op[1], code, len(ms))
			}
		}
	}
}

// TestEveryStepCounted: countingStore counts every step of the core's
// store but the tombstones, which pass through as they always have; a
// step added to gateway.Store without a method here fails.
func TestEveryStepCounted(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^func \(s \*countingStore\) ([A-Z]\w*)\(`).FindAllStringSubmatch(string(src), -1) {
		counted[m[1]] = true
	}
	passes := map[string]bool{"PutTombstone": true, "Tombstone": true}
	steps := reflect.TypeFor[gateway.Store]()
	for i := range steps.NumMethod() {
		name := steps.Method(i).Name
		if counted[name] == passes[name] {
			t.Errorf("gateway.Store.%s: counted %v, passes through %v; want one of them", name, counted[name], passes[name])
		}
		delete(counted, name)
	}
	for name := range counted {
		t.Errorf("countingStore.%s counts no step of gateway.Store", name)
	}
}
