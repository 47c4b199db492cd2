// Package handlers implements the generated strict server interfaces of
// both listeners: api/agent (the eight tools, describe_handle, the result
// writer) and api/host (runs, calls, observations, handles, results). The
// methods are thin: they read the request object, call loom, ifc, store and
// result, and return a response. Every error becomes a problem in one
// function, toProblem.
package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
)

// Runner runs one loom process (loom.CLI in production).
type Runner interface {
	Run(ctx context.Context, argv, env []string) (loom.Output, error)
}

// RunStore is the run state the handlers read and write (store.Memory,
// store.Redis).
type RunStore interface {
	CreateRun(ctx context.Context, r store.Run) error
	Run(ctx context.Context, id string) (store.Run, error)
	RunByToken(ctx context.Context, h store.TokenHash) (store.Run, error)
	Runs(ctx context.Context) ([]store.Run, error)
	DeleteRun(ctx context.Context, id string) error
	NextOutput(ctx context.Context, id string) (int64, error)
	Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error)
	AppendCall(ctx context.Context, id string, c store.Call) error
	CallsPage(ctx context.Context, id string, after, limit int) ([]store.Call, int, error)
	Mint(ctx context.Context, id string, refs []store.Referent, lim store.MintLimits) ([]string, error)
	Handles(ctx context.Context, id string) ([]store.Referent, error)
	Handle(ctx context.Context, id, token string) (store.Referent, bool, error)
	PutResult(ctx context.Context, id string, res store.Result) error
	Result(ctx context.Context, id string) (store.Result, error)
	Ping(ctx context.Context) error
}

// Deps is what both listeners' handlers share.
type Deps struct {
	Store  RunStore
	Runner Runner
	// Config is the loom retrieval configuration; nil means the eight
	// tools are not configured and answer not_configured.
	Config *loom.Config
	// Env is the child environment built from Config (loom.Env).
	Env []string
	// Slots, when set, bounds the calls in their loom stage: a call takes
	// a slot before its process starts and keeps it until its output is
	// measured (--max-concurrent-loom, --busy-wait). Runner must then take
	// no slot of its own (loom.Options.Limiter). Nil: only the Runner
	// bounds anything.
	Slots *loom.Limiter
	// CommandTimeout bounds a call's loom stage, the process and the
	// measuring of its output, from the moment it takes its slot
	// (--command-timeout); past it the call answers command_failed. Zero:
	// only the Runner's own timeout.
	CommandTimeout time.Duration
	// Tools is the set of tools the gateway offers (--allow-tool).
	Tools []loom.Tool
	// MaxConfidentiality is the process-wide ceiling (--max-confidentiality).
	MaxConfidentiality ifc.Ceiling
	// MaxHandlesPerRun caps a run's handle table; 0 means no cap.
	MaxHandlesPerRun int
	// MaxHandleBytesPerRun caps the bytes a run's handle table holds
	// (store.ReferentBytes summed); 0 means no cap.
	MaxHandleBytesPerRun int64
	// MaxCallsPerRun caps a run's call log: a run whose log holds this
	// many calls refuses every further output (call_limit_reached) before
	// it takes an output number. 0 means no cap.
	MaxCallsPerRun int
	// MaxLabelClauses caps the clauses of a run's model-context label, as
	// the store's option of that name does (the store enforces it; the
	// handlers check it first to mint nothing for a call it refuses, and
	// at run creation). 0 means no cap.
	MaxLabelClauses int
	// MaxConcurrentPerRun caps the tool calls one run has in flight on
	// this replica; one more answers busy at once. 0 means no cap.
	MaxConcurrentPerRun int
	// MaxRequestBytes caps request bodies; 0 means 1 MiB.
	MaxRequestBytes int64
	// RunTTL is a run's lifetime when the host gives none.
	RunTTL time.Duration
	// HostToken, when set, is required on the host listener.
	HostToken string
	// LoomPath is checked by /readyz; empty when not configured.
	LoomPath string
	Logger   *slog.Logger
	Now      func() time.Time
	// Metrics, when set, counts calls, rows, processes and requests
	// (NewMetrics); set Store to Metrics.InstrumentStore of the store.
	Metrics *Metrics
	// AuditArgShape adds the sorted names of a tool input's top-level
	// members to its audit record; values are never logged.
	AuditArgShape bool

	inflight inflight
	// beforeMeasure, when set (tests), runs in a call's loom stage, under
	// its slot and deadline, just before its output is measured.
	beforeMeasure func(stage context.Context)
}

func (d *Deps) maxRequestBytes() int64 {
	if d.MaxRequestBytes > 0 {
		return d.MaxRequestBytes
	}
	return 1 << 20
}

// runTTL is a run's lifetime when the host gives none (an hour when unset).
func (d *Deps) runTTL() time.Duration {
	if d.RunTTL > 0 {
		return d.RunTTL
	}
	return time.Hour
}

// logger returns the logger, discarding when none is set.
func (d *Deps) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// offers reports whether the gateway offers the tool at all.
func (d *Deps) offers(t loom.Tool) bool {
	if d.Config == nil {
		return false
	}
	for _, o := range d.Tools {
		if o == t {
			return true
		}
	}
	return false
}

// inflight tracks the cancel functions of the calls in flight per run, so
// deleting a run cancels its calls (they answer cancelled): a DELETE served
// here, or one served by another replica (FollowDeletes).
type inflight struct {
	mu    sync.Mutex
	calls map[string]map[*context.CancelCauseFunc]struct{}
}

// add registers a call of the run, unless the run already has max calls
// in flight (max <= 0: no cap); it returns the function that removes it.
func (f *inflight) add(runID string, cancel *context.CancelCauseFunc, max int) (func(), bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if max > 0 && len(f.calls[runID]) >= max {
		return nil, false
	}
	if f.calls == nil {
		f.calls = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if f.calls[runID] == nil {
		f.calls[runID] = map[*context.CancelCauseFunc]struct{}{}
	}
	f.calls[runID][cancel] = struct{}{}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.calls[runID], cancel)
		if len(f.calls[runID]) == 0 {
			delete(f.calls, runID)
		}
	}, true
}

// cancelRun cancels the run's calls in flight and returns how many there
// were.
func (f *inflight) cancelRun(runID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.calls[runID] {
		(*c)(errCancelled)
	}
	return len(f.calls[runID])
}

// runs returns the ids of the runs with calls in flight.
func (f *inflight) runs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.calls))
	for id := range f.calls {
		ids = append(ids, id)
	}
	return ids
}

// readyz answers 200 when the store answers and the loom executable is
// there; 503 naming the failing check otherwise.
func (d *Deps) readyz(w http.ResponseWriter, r *http.Request) {
	checks := map[string]string{"store": "ok"}
	ok := true
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := d.Store.Ping(ctx); err != nil {
		checks["store"], ok = "unreachable", false
	}
	if d.LoomPath != "" {
		checks["loom"] = "ok"
		if !executable(d.LoomPath) {
			checks["loom"], ok = "missing", false
		}
	}
	writeHealth(w, ok, checks)
}

// executable reports whether path names a regular file someone may execute.
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func writeHealth(w http.ResponseWriter, ok bool, checks map[string]string) {
	status, code := "ok", http.StatusOK
	if !ok {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(map[string]any{"status": status, "checks": checks})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
