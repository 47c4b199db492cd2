// Package gateway is the core of loom-gateway: one method per use case,
// called by every face (the REST handlers, MCP). A tool call (Call) runs
// the whole sequence: the output number, the run's in-flight cap, the
// ceiling meet, the argument builder, the loom slot and deadline, the
// process, the payload's interpretation and measurement, minting, the
// model-context observation, the call record and the audit event.
// Describe and WriteResult are describe_handle and the result writer; the
// host operations create, read and delete runs. Every error a method
// returns is classified: CodeOf names its problem code, and a call's
// errors carry its outputId (*Error).
//
// Faces translate between their wire types and these methods; they do no
// label arithmetic, locking, exec or JSON scanning of their own.
package gateway

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
)

// Runner runs one loom process of a tool and reads its stdout as it
// arrives (*loom.CLI in production): Output.Condensed is what
// loom.Condense learned of it.
type Runner interface {
	RunTool(ctx context.Context, tool loom.Tool, argv, env []string) (loom.Output, error)
}

// Store is the run state the core reads and writes: the steps of
// store.Store it takes, each as store.Store documents it (the memory and
// Redis stores implement them; storetest holds every implementation to
// them).
type Store interface {
	CreateRun(ctx context.Context, r store.Run) error
	Run(ctx context.Context, id string) (store.Run, error)
	RunByToken(ctx context.Context, h store.TokenHash) (store.Run, error)
	Runs(ctx context.Context) ([]store.Run, error)
	RunsPage(ctx context.Context, after store.RunKey, limit int) ([]store.Run, bool, error)
	DeleteRun(ctx context.Context, id string) error
	PutTombstone(ctx context.Context, h store.TokenHash, id string, until time.Time) error
	Tombstone(ctx context.Context, h store.TokenHash) (string, error)
	Begin(ctx context.Context, id string, b store.Begin) (store.Run, error)
	Release(ctx context.Context, id string, mark int64) error
	Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error)
	AppendCall(ctx context.Context, id string, c store.Call) error
	CallsPage(ctx context.Context, id string, after, limit int) ([]store.Call, int, error)
	Finish(ctx context.Context, id string, f store.Finish) ([]string, error)
	Handles(ctx context.Context, id string) ([]store.Referent, error)
	Handle(ctx context.Context, id, token string) (store.Referent, bool, error)
	Holds(ctx context.Context, id string, tokens []string) ([]bool, bool, error)
	PutResult(ctx context.Context, id string, res store.Result) error
	Result(ctx context.Context, id string) (store.Result, error)
	Ping(ctx context.Context) error
}

var _ Store = store.Store(nil)

// Recorder is told of every tool call the core records and of the handles
// it mints (the Prometheus metrics).
type Recorder interface {
	// Call records one call: its tool, its record, and the loom
	// process's wall time (nil when none ran).
	Call(tool string, rec store.Call, loomTime *time.Duration)
	// Minted counts n handles minted.
	Minted(n int)
}

// Config is what the core is built from.
type Config struct {
	Store  Store
	Runner Runner
	// Loom is the loom retrieval configuration; nil means the eight
	// tools are not configured and answer not_configured.
	Loom *loom.Config
	// Env is the child environment built from Loom (loom.Env).
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
	// BusyWait is how long a call waits for a slot of Slots, as Slots
	// was made with (--busy-wait; 0: loom.DefaultQueueWait, negative:
	// no wait). It only sets the in-flight lease (MaxConcurrentPerRun).
	BusyWait time.Duration
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
	// core checks it first to mint nothing for a call it refuses, and at
	// run creation). 0 means no cap.
	MaxLabelClauses int
	// RunRate limits how fast each run may call (--run-rate,
	// --run-burst): a token bucket per run, held in the store, so the
	// replicas sharing a store share it. A call past it answers
	// rate_limited before it takes an output number. The zero Rate is no
	// limit.
	RunRate store.Rate
	// MaxConcurrentPerRun caps the tool calls one run has in flight,
	// counted in the store (an in-flight mark per call, taken by Begin),
	// so the replicas sharing a store share the cap; one more answers
	// busy at once. A mark is a lease of the call's longest life
	// (lease): a replica that dies mid-call holds its calls' marks until
	// then. 0 means no cap.
	MaxConcurrentPerRun int
	// RunTTL is a run's lifetime when the host gives none (an hour when
	// zero).
	RunTTL time.Duration
	// LoomPath is checked by Ready; empty when not configured.
	LoomPath string
	Logger   *slog.Logger
	Now      func() time.Time
	// Recorder, when set, counts calls and handles.
	Recorder Recorder
	// Receipts, when set, keeps each run's chain and signs its receipt
	// (receipt.go); nil: no chain.
	Receipts *Receipts
	// AuditArgShape adds the sorted names of a tool input's top-level
	// members to its audit record; values are never logged.
	AuditArgShape bool
	// BeforeMeasure, when set (tests), runs in a call's loom stage, under
	// its slot and deadline, just before its output is measured.
	BeforeMeasure func(stage context.Context)
}

// Service runs the gateway's use cases. It is safe for concurrent use.
type Service struct {
	cfg      Config
	log      *slog.Logger
	inflight inflight
	// limited holds the runs Begin last refused at their rate, until
	// their bucket holds a call again.
	limited notBefore
	// writing holds the result writes in progress, one per run at a
	// time (WriteResult).
	writing runLocks
}

// New returns the core over cfg.
func New(cfg Config) *Service {
	s := &Service{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.cfg.Now == nil {
		s.cfg.Now = time.Now
	}
	if s.cfg.RunTTL <= 0 {
		s.cfg.RunTTL = time.Hour
	}
	return s
}

func (s *Service) now() time.Time { return s.cfg.Now() }

// Now is the service's clock, which run expiries are read against.
func (s *Service) Now() time.Time { return s.cfg.Now() }

// Offered are the tools the gateway offers at all, configured and named
// by --allow-tool, in --allow-tool order; empty when the tools are not
// configured. Callers must not modify it.
func (s *Service) Offered() []loom.Tool {
	if s.cfg.Loom == nil {
		return nil
	}
	return s.cfg.Tools
}

// offered reports whether the gateway offers the tool.
func (s *Service) offered(t loom.Tool) bool { return slices.Contains(s.Offered(), t) }

// Allowed are the loom tools run may call: those the gateway offers that
// the run's tools (nil: all) name, in the gateway's order.
func (s *Service) Allowed(run store.Run) []loom.Tool {
	var out []loom.Tool
	for _, t := range s.cfg.Tools {
		if s.offered(t) && runAllows(run, t) {
			out = append(out, t)
		}
	}
	return out
}

// Callable names what run may call on the agent face: its loom tools
// (Tools), then describe_handle and the result writer.
func (s *Service) Callable(run store.Run) []string {
	var names []string
	for _, t := range s.Allowed(run) {
		names = append(names, string(t))
	}
	return append(names, "describe_handle", "result")
}

// runAllows reports whether the run may call the tool.
func runAllows(r store.Run, t loom.Tool) bool {
	return r.Tools == nil || slices.Contains(r.Tools, string(t))
}
