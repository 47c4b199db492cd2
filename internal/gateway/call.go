package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/telemetry"
)

// call is one output of a run in progress: what its call log record and
// audit record say.
type call struct {
	// run is the run as Begin read it when the call took its number.
	run      store.Run
	tool     string
	outputID string
	started  time.Time
	exitCode *int
	// loomTime is the loom process's wall time, nil when none ran.
	loomTime *time.Duration
	// argNames are the input's member names (AuditArgShape), else nil.
	argNames []string
	// released is set once the store has no in-flight mark of the call
	// left (run.Marked): a Finish gave it back, or the run is gone.
	released bool
	// argv is what loom was given, out what it left (its exit, stderr
	// tail and stdout as read) and exited that it ran to an exit: what
	// a failure of the call is read from (failureOf).
	argv   []string
	out    loom.Output
	exited bool
	// chain is the call's record in the run's chain, once sealed
	// (Config.Receipts); response the bytes it digested (receipt.go).
	chain    *chained
	response []byte
}

// Call runs one of the eight tools for run (as Authenticate opened it)
// with input, the tool's JSON arguments as the contract has checked them,
// and returns the result object the agent sees (SEMANTICS (h) without
// cfc), in the reference's key order. The check order is the reference's:
// not_configured, cancelled, the ceiling record, the argument builder, the
// process, the outcome (loom.Outcome: the payload's reading bounds, the
// exit code and facts, the stage's end, the payload shape), then
// measurement and handles.
//
// Every error is an *Error; after the output number is taken it carries
// the outputId, and the call log holds the call's record.
func (s *Service) Call(ctx context.Context, run store.Run, tool loom.Tool, input []byte) ([]byte, error) {
	return s.CallClaim(ctx, claimOf(run), tool, input)
}

// CallClaim is Call for a claim to a run, checked as the call takes its
// output number: the run is read once, by Begin, before the process.
func (s *Service) CallClaim(ctx context.Context, cl Claim, tool loom.Tool, input []byte) ([]byte, error) {
	ctx, span := startCall(ctx, string(tool))
	defer span.End()
	perRun := 0
	if s.offered(tool) {
		perRun = s.cfg.MaxConcurrentPerRun // a tool not offered runs nothing
	}
	c, err := s.beginOutput(ctx, cl, string(tool), perRun)
	if err != nil {
		return nil, err
	}
	defer s.unmark(ctx, c)
	if !s.offered(tool) || !runAllows(c.run, tool) {
		return nil, s.fail(ctx, c, ErrNotConfigured)
	}
	if s.cfg.AuditArgShape {
		c.argNames = argNames(input)
	}
	if perRun > 0 && !c.run.Marked {
		// The run has MaxConcurrentPerRun calls in flight, on any replica.
		return nil, s.fail(ctx, c, loom.ErrBusy)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer s.inflight.add(c.run.ID, &cancel)()
	if ctx.Err() != nil {
		return nil, s.fail(ctx, c, ErrCancelled)
	}

	record, err := loom.ReadCeiling(s.cfg.Loom)
	if err != nil {
		return nil, s.fail(ctx, c, err)
	}
	ceiling := ifc.Meet(c.run.Ceiling, record)
	inv, err := loom.BuildArgv(s.cfg.Loom, tool, input)
	if ie, ok := errors.AsType[*loom.InputError](err); ok {
		err = builderFault(ie)
	}
	if err != nil {
		return nil, s.fail(ctx, c, err)
	}
	c.argv = inv.Argv
	// The query label is the model-context label at invocation, as
	// Begin read it.
	fresh := c.run

	// The process and the reading of its output run under one loom slot
	// and one deadline (loomStage).
	stage, end, err := s.loomStage(ctx)
	if err != nil {
		return nil, s.fail(ctx, c, interrupted(ctx, nil, err))
	}
	defer end()
	lctx, lspan := startLoom(stage, tool)
	unlabeled := ifc.LabelForUnlabeledRow(fresh.ModelContext, s.cfg.Loom.UnlabeledRowLabel)
	// stdout is read knowing what the measurement below is given, so
	// that no more of it is kept than that can show.
	lctx = loom.WithMeasuring(lctx, loom.Measuring{Ceiling: ceiling, Unlabeled: unlabeled})
	env := loom.WithTraceparent(s.cfg.Env, telemetry.Traceparent(lctx))
	out, err := s.cfg.Runner.RunTool(lctx, tool, inv.Argv, env)
	c.out, c.exited = out, err == nil
	endLoom(lspan, &out, err)
	mspan := startMeasure(stage, tool)
	defer mspan.End()
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
	kept := &out.Condensed
	// What Condense kept goes back to it when the call ends: the result,
	// the handles and the records hold copies (ifc.Measure).
	defer kept.Release()
	var ended error
	if stage.Err() != nil {
		ended = stageEnded(stage)
	}
	if err := loom.Outcome(inv, out.ExitCode, kept, ended); err != nil {
		return nil, s.fail(ctx, c, err)
	}
	if s.cfg.BeforeMeasure != nil {
		s.cfg.BeforeMeasure(stage)
	}
	res, err := ifc.MeasureContext(stage, ifc.Input{
		OutputID:  c.outputID,
		Command:   tool.Command(),
		Notice:    ifc.Notice,
		Rows:      kept.Rows,
		Labels:    kept.Labels,
		More:      kept.More,
		RowBytes:  kept.RowBytes,
		Envelope:  kept.Envelope,
		Ceiling:   ceiling,
		Unlabeled: unlabeled,
		// Where Condense found the labels: a row withheld is not written.
		LabelSpans: kept.LabelSpans,
	})
	if err != nil {
		return nil, s.fail(ctx, c, stageEnded(stage))
	}
	endMeasure(mspan, len(kept.Rows), kept.More)
	end()

	// A call whose rows would take the run's model-context label past
	// MaxLabelClauses answers none of them: the label could not record
	// what the agent read. Checked before minting against the label read
	// before loom ran; Observe checks again atomically.
	if s.cfg.MaxLabelClauses > 0 && res.Observed != nil && len(ifc.JoinModelContext(fresh.ModelContext, res.Observed)) > s.cfg.MaxLabelClauses {
		return nil, s.fail(ctx, c, store.ErrLabelLimit)
	}
	handles, rec, err := s.finish(ctx, c, res, fresh.ModelContext)
	if err != nil {
		return nil, s.fail(ctx, c, interrupted(ctx, nil, err))
	}
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.Minted(len(handles))
	}
	s.audit(ctx, c, rec)
	return c.answer(res, handles), nil
}

// refill is how long a run's rate bucket takes to refill one call, 0 with
// no rate.
func (s *Service) refill() time.Duration {
	if s.cfg.RunRate.PerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / s.cfg.RunRate.PerSecond)
}

// beginOutput checks the claim, takes a call from the run's rate bucket,
// the run's next output number and, when perRun > 0, an in-flight mark
// if the run holds fewer than perRun, in one store step (Store.Begin), and
// returns the call with the run as it then stands (run.Marked: the mark
// was taken; the caller answers busy without one). Every tool output of a
// run, errors and describe_handle included, gets a number (Gateway
// decision 7). A claim that opens no run answers as Authenticate does. A
// call past RunRate is refused with rate_limited, and one past
// MaxCallsPerRun outputs with ErrCallLimit: no process, nothing appended
// to the call log, no outputId, no number taken; each is audited and
// counted. Every numbered output appends at most one record, so the log
// stays within the cap exactly, however many calls race. A run Begin
// refused at its rate is refused here, without the store, until its
// bucket holds a call again (notBefore).
func (s *Service) beginOutput(ctx context.Context, cl Claim, tool string, perRun int) (*call, error) {
	now := s.now()
	if wait, ok := s.limited.wait(cl, now, s.refill()); ok {
		return nil, s.refuseCall(ctx, cl.RunID, tool, &store.RateLimitError{RetryAfter: wait})
	}
	b := store.Begin{
		Token:    &cl.Token,
		Rate:     s.cfg.RunRate,
		MaxCalls: int64(max(s.cfg.MaxCallsPerRun, 0)),
	}
	if perRun > 0 {
		b.MaxInFlight, b.Lease = perRun, s.lease()
	}
	begun, err := s.cfg.Store.Begin(ctx, cl.RunID, b)
	if rl, ok := errors.AsType[*store.RateLimitError](err); ok {
		s.limited.set(cl, now, now.Add(rl.RetryAfter))
		return nil, s.refuseCall(ctx, cl.RunID, tool, err)
	}
	if s.cfg.RunRate.PerSecond > 0 {
		s.limited.answered(cl, err == nil, s.now())
	}
	switch {
	case errors.Is(err, store.ErrRunNotFound):
		if err := s.AuthenticateClaim(ctx, cl); err != nil {
			return nil, err
		}
		return nil, Classify(store.ErrRunNotFound, "") // gone since Begin looked
	case errors.Is(err, store.ErrCallLimit):
		return nil, s.refuseCall(ctx, cl.RunID, tool, ErrCallLimit)
	case err != nil:
		return nil, Classify(err, "")
	}
	return &call{
		run:      begun,
		tool:     tool,
		outputID: fmt.Sprintf("%s:%s:%d", begun.ID, tool, begun.Seq),
		started:  s.now(),
	}, nil
}

// refuseCall audits and counts a call refused before it took an output
// number (call_limit_reached, rate_limited), which has no outputId and no
// call log record.
func (s *Service) refuseCall(ctx context.Context, runID, tool string, cause error) error {
	c := &call{run: store.Run{ID: runID}, tool: tool, started: s.now()}
	err := Classify(cause, "")
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
		Failure:   s.failureOf(ctx, c, err, e.Code),
	})
	return e
}

// failureOf is why call c failed with err, classified as code, for the
// host (the call record, the audit record, the failures metric): nil
// but for command_failed, malformed_payload, schema_version_mismatch and
// cancelled. The reason is loom's (loom.Explain) when loom's error or
// verdict carries one; the gateway's own are cancelled and the command
// timeout reached by the call's loom stage: timeout while loom ran,
// stage_deadline once it had exited and its output was being read.
func (s *Service) failureOf(ctx context.Context, c *call, err error, code problem.Code) *store.Failure {
	switch code {
	case problem.CommandFailed, problem.MalformedPayload, problem.SchemaVersionMismatch, problem.Cancelled:
	default:
		return nil
	}
	var f *loom.Failure
	if _, ok := errors.AsType[*loom.Failure](err); ok || !errors.Is(err, loom.ErrTimeout) {
		f = loom.Explain(loom.Tool(c.tool), err, c.out)
	}
	switch {
	case f != nil:
	case code == problem.Cancelled && deleted(ctx):
		f = &loom.Failure{Reason: loom.ReasonCancelled, Detail: "the run was deleted"}
	case code == problem.Cancelled && ctx.Err() != nil:
		f = &loom.Failure{Reason: loom.ReasonCancelled, Detail: "the client went away"}
	case code == problem.Cancelled:
		f = &loom.Failure{Reason: loom.ReasonCancelled, Detail: "the run ended or the gateway stopped"}
	case errors.Is(err, loom.ErrTimeout) && !c.exited: // the stage's deadline (stageEnded)
		f = &loom.Failure{Reason: loom.ReasonTimeout}
		if s.cfg.CommandTimeout > 0 {
			f.Detail = loom.TimeoutDetail(s.cfg.CommandTimeout)
		}
	case errors.Is(err, loom.ErrTimeout):
		f = &loom.Failure{Reason: loom.ReasonStageDeadline,
			Detail: "loom had exited; reading its output passed the command timeout (" + s.cfg.CommandTimeout.String() + ")"}
	default:
		f = &loom.Failure{Reason: loom.ReasonNoExitStatus}
	}
	return &store.Failure{Reason: string(f.Reason), Detail: f.Detail, StderrTail: loom.StderrText(c.out), Argv: c.argv}
}

// record appends the call to the call log even when the client has gone
// away, and audits it; a run deleted meanwhile has no log to append to.
// A call that holds an in-flight mark appends with Finish, which gives
// the mark back in the same store step, and so does every call when the
// run's chain is kept (Finish seals the record into it); any other with
// AppendCall.
func (s *Service) record(ctx context.Context, c *call, rec store.Call) {
	rec.TraceID = telemetry.TraceID(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var err error
	if marked := c.run.Marked && !c.released; marked || s.chained() {
		f := store.Finish{Call: rec, Seal: s.sealCall(c, rec, nil)}
		if marked {
			f.Mark = c.run.Seq
		}
		_, err = s.cfg.Store.Finish(sctx, c.run.ID, f)
		c.released = c.released || marked && (err == nil || errors.Is(err, store.ErrRunNotFound))
	} else {
		err = s.cfg.Store.AppendCall(sctx, c.run.ID, rec)
	}
	if err != nil {
		c.chain = nil // not in the chain
		if !errors.Is(err, store.ErrRunNotFound) {
			s.log.ErrorContext(ctx, "call log append failed", "runId", c.run.ID, "outputId", c.outputID, "code", CodeOf(err))
		}
	}
	s.audit(ctx, c, rec)
}

// leaseGrace is what a call's in-flight lease adds to the longest its
// wait for a slot and its loom stage may take: room for the end of the
// reading past the stage's deadline and for the store step that ends
// the call.
const leaseGrace = 5 * time.Second

// lease is the in-flight lease of a call (store.Begin.Lease): the
// longest a call lives from Begin, its wait for a loom slot (BusyWait)
// and its loom stage (CommandTimeout, else loom.DefaultTimeout), plus
// leaseGrace. A mark the call never gives back (its replica killed) is
// free once it passes.
func (s *Service) lease() time.Duration {
	d := s.cfg.CommandTimeout
	if d <= 0 {
		d = loom.DefaultTimeout
	}
	if s.cfg.Slots != nil {
		switch w := s.cfg.BusyWait; {
		case w == 0:
			d += loom.DefaultQueueWait
		case w > 0:
			d += w
		}
	}
	return d + leaseGrace
}

// unmark gives back the call's in-flight mark when no Finish did: the
// store step that ended the call failed (a full Redis refuses a Finish
// but not a Release, which only frees memory), or the call panicked.
// It is one more store step, on those paths alone; a mark it cannot give
// back frees itself when its lease passes.
func (s *Service) unmark(ctx context.Context, c *call) {
	if !c.run.Marked || c.released {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.cfg.Store.Release(ctx, c.run.ID, c.run.Seq); err != nil {
		s.log.WarnContext(ctx, "in-flight mark not released; it frees itself when its lease ends",
			"runId", c.run.ID, "outputId", c.outputID, "lease", s.lease().String(), "code", CodeOf(err))
	}
}

// loomStage begins a call's loom stage: the process and the reading of its
// output (Condense, Decide, Measure). It takes a slot of Slots, waiting as
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

// finish ends a call that has its result in one store step (Store.Finish):
// the admitted entries minted in the run's handle table, the observed
// label joined into the run's model-context label (base is the label as
// the call read it) and the call record appended, all or nothing; a label
// grown by a racing call past MaxLabelClauses refuses the whole step. It
// returns the tokens in entry order and the record. The step is not
// cancelled with the call: once it is sent, a client gone does not undo
// it.
func (s *Service) finish(ctx context.Context, c *call, res ifc.Result, base ifc.Confidentiality) ([]string, store.Call, error) {
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
	if len(refs) > 0 && deleted(ctx) {
		return nil, store.Call{}, ErrCancelled
	}
	rec := callRecord(c, res, s.now())
	rec.TraceID = telemetry.TraceID(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	f := store.Finish{
		Refs:     refs,
		Limits:   store.MintLimits{Handles: s.cfg.MaxHandlesPerRun, Bytes: s.cfg.MaxHandleBytesPerRun},
		Observed: res.Observed,
		Base:     base,
		Call:     rec,
		Seal:     s.sealCall(c, rec, &res),
	}
	if c.run.Marked {
		f.Mark = c.run.Seq
	}
	handles, err := s.cfg.Store.Finish(ctx, c.run.ID, f)
	c.released = err == nil || errors.Is(err, store.ErrRunNotFound)
	return handles, rec, err
}

// callRecord is the record of a call that has its result; the handles of
// its admitted entries are left for Store.Finish to set.
func callRecord(c *call, res ifc.Result, now time.Time) store.Call {
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
	for _, e := range res.Entries {
		ce := store.CallEntry{Status: "withheld", ReasonCode: e.ReasonCode}
		if e.Admitted {
			ce = store.CallEntry{
				Status:      "admitted",
				LabelSource: e.LabelSource,
				Label:       ifc.DiscloseShared(e.Label), // Finish keeps a copy
				Truncated:   e.Truncated,
			}
		}
		rec.Entries = append(rec.Entries, ce)
	}
	return rec
}
