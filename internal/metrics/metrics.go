// Package metrics is the gateway's Prometheus metrics: what the core
// records of its calls (gateway.Recorder), the requests the faces answer
// (Metrics.Request), the run store's failures and the gauges read at
// scrape time, and the /metrics handler.
//
// A store failure is counted where the core takes the step: Store wraps
// the core's store (gateway.Store), and each step it counts is a method
// that names its operation label and hands the answer back unchanged.
// Go has no proxy, so the wrapper is a method per counted step; it embeds
// the store, so a step it does not count (the tombstones, which were never
// counted) passes through as it is. A hook reporting from inside the
// stores instead would put the operation labels in every implementation
// and every test double, and would count the steps of storetest and of
// tools that no gateway takes.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/store"
)

// Metrics are the gateway's Prometheus metrics. Every label value comes
// from a fixed set: a tool name, a problem code, a failure reason, a withheld reason code, a
// route pattern, a listener, an HTTP status or a store operation. Nothing
// from a row, an argument, a run id, a token or loom's output is ever a
// label. A nil *Metrics records nothing. Metrics is safe for concurrent
// use.
type Metrics struct {
	calls           *prometheus.CounterVec
	failures        *prometheus.CounterVec
	callDuration    *prometheus.HistogramVec
	loomDuration    *prometheus.HistogramVec
	rowsAdmitted    *prometheus.CounterVec
	rowsWithheld    *prometheus.CounterVec
	rowsOmitted     *prometheus.CounterVec
	handlesMinted   prometheus.Counter
	storeErrors     *prometheus.CounterVec
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	live            liveRuns
}

// durationBuckets spans a cached lookup to a loom process at the default
// 30 s timeout.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// loadReporter is what a Runner may report about its process slots
// (loom.CLI does).
type loadReporter interface {
	InFlight() int64
	Queued() int64
}

// RunCounter counts the live runs for the live-runs gauge, at most once
// per liveRunsTTL (store.Store.CountRuns).
type RunCounter interface {
	CountRuns(ctx context.Context) (int, error)
}

// liveRunsTTL is how long a count of the live runs is reused: Runs copies
// every run, and a scrape should not.
const liveRunsTTL = 10 * time.Second

// New registers the gateway's metrics on reg. The process gauges
// read runner (nil when the tools are not configured) and the live-runs
// gauge reads st at scrape time. It returns an error when reg already holds
// a metric of the same name.
func New(reg prometheus.Registerer, runner any, st RunCounter) (*Metrics, error) {
	const ns = "loom_gateway"
	// One declaration per metric: the lines repeat in shape because each
	// metric is written out with its own name, help and labels.
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "tool_calls_total",
			Help: "Tool calls (describe_handle included) by tool and outcome: ok or the problem code.",
		}, []string{"tool", "code"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "call_failures_total",
			Help: "Failed tool calls by tool and reason (the call record's failure.reason, a closed set): why the command_failed, malformed_payload, schema_version_mismatch and cancelled of tool_calls_total failed.",
		}, []string{"tool", "reason"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "tool_call_duration_seconds",
			Help:    "Tool call duration, from the output number to the call log record.",
			Buckets: durationBuckets,
		}, []string{"tool"}),
		loomDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "loom_process_duration_seconds",
			Help:    "Wall time of a loom process, from start to the end of Wait.",
			Buckets: durationBuckets,
		}, []string{"tool"}),
		rowsAdmitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "rows_admitted_total",
			Help: "Rows admitted under the read ceiling, by tool.",
		}, []string{"tool"}),
		rowsWithheld: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "rows_withheld_total",
			Help: "Rows withheld, by tool and reason code.",
		}, []string{"tool", "reason"}),
		rowsOmitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "rows_omitted_total",
			Help: "Rows omitted for size, by tool.",
		}, []string{"tool"}),
		handlesMinted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "handles_minted_total",
			Help: "Handles minted for admitted rows.",
		}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "store_errors_total",
			Help: "Run store failures (not expected outcomes such as run_not_found), by operation and code.",
		}, []string{"op", "code"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "http_requests_total",
			Help: "HTTP requests by listener, route pattern and status.",
		}, []string{"listener", "route", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "http_request_duration_seconds",
			Help:    "HTTP request duration by listener and route pattern.",
			Buckets: durationBuckets,
		}, []string{"listener", "route"}),
		live: liveRuns{st: st, ttl: liveRunsTTL},
	}
	load, _ := runner.(loadReporter)
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		m.calls, m.failures, m.callDuration, m.loomDuration, m.rowsAdmitted, m.rowsWithheld, m.rowsOmitted,
		m.handlesMinted, m.storeErrors, m.requests, m.requestDuration,
		gauge("loom_processes_in_flight", "Calls holding a loom slot: a loom process alive, or its output being measured.", func() float64 {
			if load == nil {
				return 0
			}
			return float64(load.InFlight())
		}),
		gauge("loom_processes_queued", "Calls waiting for a loom slot.", func() float64 {
			if load == nil {
				return 0
			}
			return float64(load.Queued())
		}),
		gauge("runs_live", "Live runs in the store (counted at most every 10 s).", m.live.count),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	// Every withheld reason starts at zero, so a rate() over it exists
	// before the first withheld row.
	for _, t := range loom.Tools {
		for _, reason := range []string{ifc.ReasonCeilingExceeded, ifc.ReasonLabelReadFailed} {
			m.rowsWithheld.WithLabelValues(string(t), reason)
		}
	}
	// So do the store's failures, for every operation countingStore counts,
	// so an alert on them tells zero from missing.
	for _, op := range storeOps {
		for _, code := range []string{"store_unavailable", "internal_error"} {
			m.storeErrors.WithLabelValues(op, code)
		}
	}
	return m, nil
}

// Handler serves what g gathers in the Prometheus text format. A
// collector that fails is logged and left out; the rest is still served.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      promLogger{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// promLogger is promhttp's logger over slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	if l.log != nil {
		l.log.Error("metrics gathering failed", "err", fmt.Sprint(v...))
	}
}

// Call records one tool call: its outcome, durations and row counts
// (gateway.Recorder).
func (m *Metrics) Call(tool string, rec store.Call, loomTime *time.Duration) {
	if m == nil {
		return
	}
	code := "ok"
	if rec.Status != "ok" {
		code = rec.Code
	}
	m.calls.WithLabelValues(tool, code).Inc()
	if f := rec.Failure; f != nil && slices.Contains(loom.Reasons, loom.Reason(f.Reason)) {
		m.failures.WithLabelValues(tool, f.Reason).Inc()
	}
	m.callDuration.WithLabelValues(tool).Observe(rec.Duration.Seconds())
	if loomTime != nil {
		m.loomDuration.WithLabelValues(tool).Observe(loomTime.Seconds())
	}
	if rec.Status != "ok" || tool == "describe_handle" {
		return
	}
	m.rowsAdmitted.WithLabelValues(tool).Add(float64(rec.Admitted))
	m.rowsOmitted.WithLabelValues(tool).Add(float64(rec.Omitted))
	for _, e := range rec.Entries {
		if e.Status == "withheld" {
			m.rowsWithheld.WithLabelValues(tool, reasonLabel(e.ReasonCode)).Inc()
		}
	}
}

// reasonLabel keeps the reason label to ifc's codes.
func reasonLabel(code string) string {
	switch code {
	case ifc.ReasonCeilingExceeded, ifc.ReasonLabelReadFailed:
		return code
	}
	return "other"
}

// Minted counts n handles minted (gateway.Recorder).
func (m *Metrics) Minted(n int) {
	if m == nil || n == 0 {
		return
	}
	m.handlesMinted.Add(float64(n))
}

// Request records one HTTP request: its listener, route pattern, status
// and duration.
func (m *Metrics) Request(listener, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(listener, route, strconv.Itoa(status)).Inc()
	m.requestDuration.WithLabelValues(listener, route).Observe(d.Seconds())
}

// storeError counts err when it is a store failure: store_unavailable, or
// an unclassified error while the caller still waits. Expected outcomes
// (run_not_found, run_exists, limits) are not failures.
func (m *Metrics) storeError(ctx context.Context, op string, err error) {
	if m == nil || err == nil {
		return
	}
	switch code := gateway.CodeOf(err); {
	case code == problem.StoreUnavailable, code == problem.InternalError && ctx.Err() == nil:
		m.storeErrors.WithLabelValues(op, string(code)).Inc()
	}
}

// liveRuns counts the store's live runs for the runs_live gauge, reusing a
// count for ttl; a failed count keeps the last one.
type liveRuns struct {
	st  RunCounter
	ttl time.Duration

	mu    sync.Mutex
	at    time.Time
	n     int
	valid bool
}

func (l *liveRuns) count() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st == nil {
		return 0
	}
	if l.valid && time.Since(l.at) < l.ttl {
		return float64(l.n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if n, err := l.st.CountRuns(ctx); err == nil {
		l.n, l.at, l.valid = n, time.Now(), true
	}
	return float64(l.n)
}

// Store returns st with its failures counted in
// loom_gateway_store_errors_total; the core is built on it
// (gateway.Config.Store).
func (m *Metrics) Store(st gateway.Store) gateway.Store {
	if m == nil {
		return st
	}
	return &countingStore{Store: st, m: m}
}

// storeOps are the operation labels countingStore counts failures under.
// "mint" has no step of its own since Finish mints (its failures count
// under "finish"); its series stays, at zero, so that what /metrics shows
// and the alerts on it do not change.
var storeOps = []string{
	"create_run", "run", "run_by_token", "runs", "runs_page", "delete_run", "begin", "release", "observe",
	"append_call", "calls", "mint", "finish", "handles", "handle", "holds", "put_result", "result", "ping",
}

// countingStore counts the failures of the store it embeds, one method a
// step it counts.
type countingStore struct {
	gateway.Store
	m *Metrics
}

// count counts err under op and returns it.
func (s *countingStore) count(ctx context.Context, op string, err error) error {
	s.m.storeError(ctx, op, err)
	return err
}

func (s *countingStore) CreateRun(ctx context.Context, r store.Run) error {
	return s.count(ctx, "create_run", s.Store.CreateRun(ctx, r))
}

func (s *countingStore) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := s.Store.Run(ctx, id)
	return r, s.count(ctx, "run", err)
}

func (s *countingStore) RunByToken(ctx context.Context, h store.TokenHash) (store.Run, error) {
	r, err := s.Store.RunByToken(ctx, h)
	return r, s.count(ctx, "run_by_token", err)
}

func (s *countingStore) Runs(ctx context.Context) ([]store.Run, error) {
	rs, err := s.Store.Runs(ctx)
	return rs, s.count(ctx, "runs", err)
}

func (s *countingStore) RunsPage(ctx context.Context, after store.RunKey, limit int) ([]store.Run, bool, error) {
	rs, more, err := s.Store.RunsPage(ctx, after, limit)
	return rs, more, s.count(ctx, "runs_page", err)
}

func (s *countingStore) DeleteRun(ctx context.Context, id string) error {
	return s.count(ctx, "delete_run", s.Store.DeleteRun(ctx, id))
}

func (s *countingStore) Begin(ctx context.Context, id string, b store.Begin) (store.Run, error) {
	r, err := s.Store.Begin(ctx, id, b)
	return r, s.count(ctx, "begin", err)
}

func (s *countingStore) Release(ctx context.Context, id string, mark int64) error {
	return s.count(ctx, "release", s.Store.Release(ctx, id, mark))
}

func (s *countingStore) Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error) {
	c, err := s.Store.Observe(ctx, id, conf)
	return c, s.count(ctx, "observe", err)
}

func (s *countingStore) AppendCall(ctx context.Context, id string, c store.Call) error {
	return s.count(ctx, "append_call", s.Store.AppendCall(ctx, id, c))
}

func (s *countingStore) CallsPage(ctx context.Context, id string, after, limit int) ([]store.Call, int, error) {
	cs, total, err := s.Store.CallsPage(ctx, id, after, limit)
	return cs, total, s.count(ctx, "calls", err)
}

func (s *countingStore) Finish(ctx context.Context, id string, f store.Finish) ([]string, error) {
	toks, err := s.Store.Finish(ctx, id, f)
	return toks, s.count(ctx, "finish", err)
}

func (s *countingStore) Handles(ctx context.Context, id string) ([]store.Referent, error) {
	rs, err := s.Store.Handles(ctx, id)
	return rs, s.count(ctx, "handles", err)
}

func (s *countingStore) Handle(ctx context.Context, id, token string) (store.Referent, bool, error) {
	r, ok, err := s.Store.Handle(ctx, id, token)
	return r, ok, s.count(ctx, "handle", err)
}

func (s *countingStore) Holds(ctx context.Context, id string, tokens []string) ([]bool, bool, error) {
	held, has, err := s.Store.Holds(ctx, id, tokens)
	return held, has, s.count(ctx, "holds", err)
}

func (s *countingStore) PutResult(ctx context.Context, id string, res store.Result) error {
	return s.count(ctx, "put_result", s.Store.PutResult(ctx, id, res))
}

func (s *countingStore) Result(ctx context.Context, id string) (store.Result, error) {
	r, err := s.Store.Result(ctx, id)
	return r, s.count(ctx, "result", err)
}

func (s *countingStore) Ping(ctx context.Context) error {
	return s.count(ctx, "ping", s.Store.Ping(ctx))
}
