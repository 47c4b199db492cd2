package handlers

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

// runCounter is a cheap count of the live runs a gateway.Store may offer; the
// live-runs gauge otherwise counts Runs, at most once per liveRunsTTL.
type runCounter interface {
	CountRuns(ctx context.Context) (int, error)
}

// liveRunsTTL is how long a count of the live runs is reused: Runs copies
// every run, and a scrape should not.
const liveRunsTTL = 10 * time.Second

// NewMetrics registers the gateway's metrics on reg. The process gauges
// read runner (nil when the tools are not configured) and the live-runs
// gauge reads st at scrape time. It returns an error when reg already holds
// a metric of the same name.
func NewMetrics(reg prometheus.Registerer, runner any, st gateway.Store) (*Metrics, error) {
	const ns = "loom_gateway"
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
			return nil, fmt.Errorf("handlers: metrics: %w", err)
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

// MetricsHandler serves what g gathers in the Prometheus text format. A
// collector that fails is logged and left out; the rest is still served.
func MetricsHandler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
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

// request records one HTTP request.
func (m *Metrics) request(listener, route string, status int, d time.Duration) {
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
	st  gateway.Store
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
	var n int
	var err error
	if c, ok := l.st.(runCounter); ok {
		n, err = c.CountRuns(ctx)
	} else {
		var runs []store.Run
		runs, err = l.st.Runs(ctx)
		n = len(runs)
	}
	if err == nil {
		l.n, l.at, l.valid = n, time.Now(), true
	}
	return float64(l.n)
}

// InstrumentStore returns st with its failures counted in
// loom_gateway_store_errors_total; the core is built on it
// (gateway.Config.Store).
func (m *Metrics) InstrumentStore(st gateway.Store) gateway.Store {
	if m == nil {
		return st
	}
	return &countingStore{st: st, m: m}
}

// storeOps are the operation labels countingStore counts failures under.
var storeOps = []string{
	"create_run", "run", "run_by_token", "runs", "runs_page", "delete_run", "begin", "release", "observe",
	"append_call", "calls", "mint", "finish", "handles", "handle", "holds", "put_result", "result", "ping",
}

// countingStore counts the failures of the store it wraps.
type countingStore struct {
	st gateway.Store
	m  *Metrics
}

func (s *countingStore) CreateRun(ctx context.Context, r store.Run) error {
	err := s.st.CreateRun(ctx, r)
	s.m.storeError(ctx, "create_run", err)
	return err
}

func (s *countingStore) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := s.st.Run(ctx, id)
	s.m.storeError(ctx, "run", err)
	return r, err
}

func (s *countingStore) RunByToken(ctx context.Context, h store.TokenHash) (store.Run, error) {
	r, err := s.st.RunByToken(ctx, h)
	s.m.storeError(ctx, "run_by_token", err)
	return r, err
}

func (s *countingStore) Runs(ctx context.Context) ([]store.Run, error) {
	rs, err := s.st.Runs(ctx)
	s.m.storeError(ctx, "runs", err)
	return rs, err
}

func (s *countingStore) RunsPage(ctx context.Context, after store.RunKey, limit int) ([]store.Run, bool, error) {
	rs, more, err := s.st.RunsPage(ctx, after, limit)
	s.m.storeError(ctx, "runs_page", err)
	return rs, more, err
}

func (s *countingStore) Finish(ctx context.Context, id string, f store.Finish) ([]string, error) {
	toks, err := s.st.Finish(ctx, id, f)
	s.m.storeError(ctx, "finish", err)
	return toks, err
}

func (s *countingStore) DeleteRun(ctx context.Context, id string) error {
	err := s.st.DeleteRun(ctx, id)
	s.m.storeError(ctx, "delete_run", err)
	return err
}

func (s *countingStore) Begin(ctx context.Context, id string, b store.Begin) (store.Run, error) {
	r, err := s.st.Begin(ctx, id, b)
	s.m.storeError(ctx, "begin", err)
	return r, err
}

func (s *countingStore) Release(ctx context.Context, id string, mark int64) error {
	err := s.st.Release(ctx, id, mark)
	s.m.storeError(ctx, "release", err)
	return err
}

func (s *countingStore) Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error) {
	c, err := s.st.Observe(ctx, id, conf)
	s.m.storeError(ctx, "observe", err)
	return c, err
}

func (s *countingStore) AppendCall(ctx context.Context, id string, c store.Call) error {
	err := s.st.AppendCall(ctx, id, c)
	s.m.storeError(ctx, "append_call", err)
	return err
}

func (s *countingStore) CallsPage(ctx context.Context, id string, after, limit int) ([]store.Call, int, error) {
	cs, total, err := s.st.CallsPage(ctx, id, after, limit)
	s.m.storeError(ctx, "calls", err)
	return cs, total, err
}

func (s *countingStore) Mint(ctx context.Context, id string, refs []store.Referent, lim store.MintLimits) ([]string, error) {
	toks, err := s.st.Mint(ctx, id, refs, lim)
	s.m.storeError(ctx, "mint", err)
	return toks, err
}

func (s *countingStore) Handles(ctx context.Context, id string) ([]store.Referent, error) {
	rs, err := s.st.Handles(ctx, id)
	s.m.storeError(ctx, "handles", err)
	return rs, err
}

func (s *countingStore) Handle(ctx context.Context, id, token string) (store.Referent, bool, error) {
	r, ok, err := s.st.Handle(ctx, id, token)
	s.m.storeError(ctx, "handle", err)
	return r, ok, err
}

func (s *countingStore) Holds(ctx context.Context, id string, tokens []string) ([]bool, bool, error) {
	held, has, err := s.st.Holds(ctx, id, tokens)
	s.m.storeError(ctx, "holds", err)
	return held, has, err
}

func (s *countingStore) PutResult(ctx context.Context, id string, res store.Result) error {
	err := s.st.PutResult(ctx, id, res)
	s.m.storeError(ctx, "put_result", err)
	return err
}

func (s *countingStore) Result(ctx context.Context, id string) (store.Result, error) {
	r, err := s.st.Result(ctx, id)
	s.m.storeError(ctx, "result", err)
	return r, err
}

func (s *countingStore) Ping(ctx context.Context) error {
	err := s.st.Ping(ctx)
	s.m.storeError(ctx, "ping", err)
	return err
}
