package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
)

// call is one output of a run in progress: what its call log record and
// audit record say.
type call struct {
	run      store.Run
	tool     string
	outputID string
	started  time.Time
	exitCode *int
	// loomTime is the loom process's wall time, nil when none ran.
	loomTime *time.Duration
	// argNames are the input's member names (AuditArgShape), else nil.
	argNames []string
}

// Call runs one of the eight tools for run (as Authenticate opened it)
// with input, the tool's JSON arguments as the contract has checked them,
// and returns the result object the agent sees (SEMANTICS (h) without
// cfc), in the reference's key order. The check order is the reference's:
// not_configured, cancelled, the ceiling record, the argument builder, the
// process, the outcome, the payload shape, then measurement and handles.
//
// Every error is an *Error; after the output number is taken it carries
// the outputId, and the call log holds the call's record.
func (s *Service) Call(ctx context.Context, run store.Run, tool loom.Tool, input []byte) ([]byte, error) {
	c, err := s.beginOutput(ctx, run, string(tool))
	if err != nil {
		return nil, err
	}
	if !s.Offers(tool) || !runAllows(c.run, tool) {
		return nil, s.fail(ctx, c, ErrNotConfigured)
	}
	if s.cfg.AuditArgShape {
		c.argNames = argNames(input)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done, ok := s.inflight.add(c.run.ID, &cancel, s.cfg.MaxConcurrentPerRun)
	if !ok {
		return nil, s.fail(ctx, c, loom.ErrBusy)
	}
	defer done()
	if ctx.Err() != nil {
		return nil, s.fail(ctx, c, ErrCancelled)
	}

	record, err := loom.ReadCeiling(s.cfg.Loom)
	if err != nil {
		return nil, s.fail(ctx, c, err)
	}
	ceiling := ifc.Meet(c.run.Ceiling, record)
	argv, err := loom.BuildArgv(s.cfg.Loom, tool, input)
	if ie, ok := errors.AsType[*loom.InputError](err); ok {
		err = builderFault(ie)
	}
	if err != nil {
		return nil, s.fail(ctx, c, err)
	}
	// The query label is the model-context label at invocation, read
	// fresh: another call of the run may have grown it since auth.
	fresh, err := s.cfg.Store.Run(ctx, c.run.ID)
	if err != nil {
		return nil, s.fail(ctx, c, interrupted(ctx, nil, err))
	}

	// The process and the reading of its output run under one loom slot
	// and one deadline (loomStage).
	stage, end, err := s.loomStage(ctx)
	if err != nil {
		return nil, s.fail(ctx, c, interrupted(ctx, nil, err))
	}
	defer end()
	out, err := s.cfg.Runner.RunTool(stage, tool, argv, s.cfg.Env)
	if err == nil || out.Duration > 0 {
		c.loomTime = &out.Duration
	}
	if err == nil && deleted(ctx) {
		// The run was deleted while loom ran: its output belongs to no
		// run, even when there is nothing to mint.
		err = ErrCancelled
	}
	if err != nil {
		return nil, s.fail(ctx, c, interrupted(ctx, stage, err))
	}
	code := out.ExitCode
	c.exitCode = &code
	kept := out.Condensed
	if kept == nil {
		kept = &loom.Condensed{}
	}
	if kept.Refused {
		// One JSON value past what the reading holds of a piece of it
		// (a name, a number, an envelope value, an object's names).
		return nil, s.fail(ctx, c, loom.ErrMalformedPayload)
	}
	err = loom.Decide(tool, loom.PersonLookup(tool, input), kept.Payload != nil, out.ExitCode, kept.Facts)
	if err == nil && stage.Err() != nil {
		err = stageEnded(stage)
	}
	if err == nil && !kept.Shaped {
		err = loom.ErrMalformedPayload
	}
	if err != nil {
		return nil, s.fail(ctx, c, err)
	}
	if s.cfg.BeforeMeasure != nil {
		s.cfg.BeforeMeasure(stage)
	}
	res, err := ifc.MeasureContext(stage, ifc.Input{
		OutputID:  c.outputID,
		Kind:      tool.Kind(),
		Notice:    ifc.Notice,
		Rows:      kept.Rows,
		More:      kept.Dropped,
		RowBytes:  kept.RowBytes,
		Envelope:  kept.Envelope,
		Ceiling:   ceiling,
		Unlabeled: ifc.LabelForUnlabeledRow(fresh.ModelContext, s.cfg.Loom.UnlabeledRowLabel),
	})
	if err != nil {
		return nil, s.fail(ctx, c, stageEnded(stage))
	}
	end()

	// A call whose rows would take the run's model-context label past
	// MaxLabelClauses answers none of them: the label could not record
	// what the agent read. Checked before minting against the label read
	// before loom ran; Observe checks again atomically.
	if s.cfg.MaxLabelClauses > 0 && res.Observed != nil && len(ifc.JoinModelContext(fresh.ModelContext, res.Observed)) > s.cfg.MaxLabelClauses {
		return nil, s.fail(ctx, c, store.ErrLabelLimit)
	}
	handles, err := s.mint(ctx, c, res)
	if err != nil {
		return nil, s.fail(ctx, c, interrupted(ctx, nil, err))
	}
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.Minted(len(handles))
	}
	if res.Observed != nil {
		// A label grown by a racing call since the check above may still
		// refuse: the call then answers nothing, its handles unreturned.
		if _, err := s.cfg.Store.Observe(context.WithoutCancel(ctx), c.run.ID, res.Observed); err != nil {
			return nil, s.fail(ctx, c, interrupted(ctx, nil, err))
		}
	}
	s.record(ctx, c, callRecord(c, res, handles, s.now()))
	return res.AppendJSON(make([]byte, 0, 4096), handles), nil
}

// beginOutput takes the run's next output number: every tool output of a
// run, errors and describe_handle included, gets one (Gateway decision 7).
// Past MaxCallsPerRun outputs a call is refused with ErrCallLimit: no
// process, nothing appended to the call log, no outputId; it is audited and
// counted. Every numbered output appends at most one record, so refusing
// every number past the cap keeps the log within it exactly, however many
// calls race; the run as auth read it refuses most of them before they
// take a number at all.
func (s *Service) beginOutput(ctx context.Context, run store.Run, tool string) (*call, error) {
	if max := s.cfg.MaxCallsPerRun; max > 0 && run.Calls >= max {
		return nil, s.refuseCall(ctx, run, tool)
	}
	n, err := s.cfg.Store.NextOutput(ctx, run.ID)
	if err != nil {
		return nil, Classify(err, "")
	}
	if max := s.cfg.MaxCallsPerRun; max > 0 && n > int64(max) {
		return nil, s.refuseCall(ctx, run, tool)
	}
	return &call{
		run:      run,
		tool:     tool,
		outputID: fmt.Sprintf("%s:%s:%d", run.ID, tool, n),
		started:  s.now(),
	}, nil
}

// refuseCall audits and counts a call refused call_limit_reached, which has
// no outputId and no call log record.
func (s *Service) refuseCall(ctx context.Context, run store.Run, tool string) error {
	c := &call{run: run, tool: tool, started: s.now()}
	err := Classify(ErrCallLimit, "")
	s.audit(ctx, c, store.Call{Tool: tool, Status: "error", Code: string(err.Code), StartedAt: c.started})
	return err
}

// fail records a failed call and returns its classified error.
func (s *Service) fail(ctx context.Context, c *call, err error) error {
	e := Classify(err, c.outputID)
	s.record(ctx, c, store.Call{
		OutputID:  c.outputID,
		Tool:      c.tool,
		Status:    "error",
		Code:      string(e.Code),
		HostCode:  e.HostCode,
		ExitCode:  c.exitCode,
		Duration:  s.now().Sub(c.started),
		StartedAt: c.started,
	})
	return e
}

// record audits the call and appends it to the call log even when the
// client has gone away; a run deleted meanwhile has no log to append to.
func (s *Service) record(ctx context.Context, c *call, rec store.Call) {
	s.audit(ctx, c, rec)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.cfg.Store.AppendCall(ctx, c.run.ID, rec); err != nil && !errors.Is(err, store.ErrRunNotFound) {
		s.log.ErrorContext(ctx, "call log append failed", "runId", c.run.ID, "outputId", c.outputID, "code", CodeOf(err))
	}
}

// loomStage begins a call's loom stage: the process and the reading of its
// output (Interpret, Split, Measure). It takes a slot of Slots, waiting as
// the Limiter says (loom.ErrBusy, loom.ErrCancelled), and the stage must
// end within CommandTimeout of taking it: the returned context expires then
// with cause loom.ErrTimeout. end gives the slot back; calling it again
// does nothing.
func (s *Service) loomStage(ctx context.Context) (stage context.Context, end func(), err error) {
	release := func() {}
	if s.cfg.Slots != nil {
		if release, err = s.cfg.Slots.Acquire(ctx); err != nil {
			return nil, nil, err
		}
	}
	if s.cfg.CommandTimeout <= 0 {
		return ctx, release, nil
	}
	stage, stop := context.WithTimeoutCause(ctx, s.cfg.CommandTimeout, loom.ErrTimeout)
	return stage, func() { stop(); release() }, nil
}

// deleted reports whether the call of ctx was cancelled because its run
// was deleted (inflight.cancelRun).
func deleted(ctx context.Context) bool { return context.Cause(ctx) == ErrCancelled }

// interrupted reads an error met while a call's context may have ended:
// the run deleted (the cancel cause) or the client gone (loom's
// ErrCancelled) ends the call as cancelled, or, within its loom stage, as
// stageEnded says; a run that vanished from the store (ErrRunNotFound) is
// a cancelled call too. Any other error is itself.
func interrupted(ctx, stage context.Context, err error) error {
	switch {
	case deleted(ctx) || errors.Is(err, loom.ErrCancelled):
		if stage != nil {
			return stageEnded(stage)
		}
		return ErrCancelled
	case errors.Is(err, store.ErrRunNotFound):
		return ErrCancelled
	}
	return err
}

// stageEnded is the error of a call whose loom stage ended before its
// output was measured: its deadline passed (loom.ErrTimeout, which is
// command_failed, as a process timeout), or the client went away or the
// run was deleted (cancelled).
func stageEnded(stage context.Context) error {
	if context.Cause(stage) == loom.ErrTimeout {
		return loom.ErrTimeout
	}
	return ErrCancelled
}

// mint registers the admitted entries in the run's handle table, in one
// atomic step, and returns their tokens in entry order.
func (s *Service) mint(ctx context.Context, c *call, res ifc.Result) ([]string, error) {
	refs := make([]store.Referent, 0, res.Admitted)
	for _, e := range res.Entries {
		if e.Admitted {
			refs = append(refs, store.Referent{
				Kind:        "document",
				Source:      c.tool,
				Value:       e.Value,
				Label:       e.Label,
				LabelSource: e.LabelSource,
			})
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	if deleted(ctx) {
		return nil, ErrCancelled
	}
	lim := store.MintLimits{Handles: s.cfg.MaxHandlesPerRun, Bytes: s.cfg.MaxHandleBytesPerRun}
	return s.cfg.Store.Mint(context.WithoutCancel(ctx), c.run.ID, refs, lim)
}

func callRecord(c *call, res ifc.Result, handles []string, now time.Time) store.Call {
	rec := store.Call{
		OutputID:  c.outputID,
		Tool:      c.tool,
		Status:    "ok",
		Admitted:  res.Admitted,
		Withheld:  res.Withheld,
		Omitted:   res.Omitted,
		Truncated: res.Truncated,
		Observed:  res.Observed,
		ExitCode:  c.exitCode,
		Duration:  now.Sub(c.started),
		StartedAt: c.started,
		Entries:   make([]store.CallEntry, 0, len(res.Entries)),
	}
	h := 0
	for _, e := range res.Entries {
		ce := store.CallEntry{Status: "withheld", ReasonCode: e.ReasonCode}
		if e.Admitted {
			ce = store.CallEntry{
				Status:      "admitted",
				LabelSource: e.LabelSource,
				Label:       ifc.DiscloseShared(e.Label), // AppendCall keeps a copy
				Handle:      handles[h],
				Truncated:   e.Truncated,
			}
			h++
		}
		rec.Entries = append(rec.Entries, ce)
	}
	return rec
}
