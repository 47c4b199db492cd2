package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
)

// call is one tool call in progress: the outcome the call log records.
type call struct {
	run      store.Run
	tool     string
	outputID string
	started  time.Time
	exitCode *int
	// loomTime is the loom process's wall time, nil when none ran.
	loomTime *time.Duration
	// argNames are the input's member names (--audit-arg-shape), else nil.
	argNames []string
}

// beginOutput takes the run's next output number: every tool output of a
// run, errors and describe_handle included, gets one (Gateway decision 7).
// Past MaxCallsPerRun outputs a call is refused with errCallLimit: no
// process, nothing appended to the call log, no outputId; it is audited and
// counted. Every numbered output appends at most one record, so refusing
// every number past the cap keeps the log within it exactly, however many
// calls race; the run as auth read it refuses most of them before they
// take a number at all.
func (d *Deps) beginOutput(ctx context.Context, tool string) (*call, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, errUnauthorized
	}
	if d.MaxCallsPerRun > 0 && run.Calls >= d.MaxCallsPerRun {
		return nil, d.refuseCall(ctx, run, tool)
	}
	n, err := d.Store.NextOutput(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	if d.MaxCallsPerRun > 0 && n > int64(d.MaxCallsPerRun) {
		return nil, d.refuseCall(ctx, run, tool)
	}
	return &call{
		run:      run,
		tool:     tool,
		outputID: fmt.Sprintf("%s:%s:%d", run.ID, tool, n),
		started:  d.now(),
	}, nil
}

// refuseCall audits and counts a call refused call_limit_reached, which has
// no outputId and no call log record, and returns errCallLimit.
func (d *Deps) refuseCall(ctx context.Context, run store.Run, tool string) error {
	c := &call{run: run, tool: tool, started: d.now()}
	d.audit(ctx, c, store.Call{Tool: tool, Status: "error", Code: codeOf(errCallLimit), StartedAt: c.started})
	return errCallLimit
}

// fail records a failed call and returns its error with the outputId.
func (d *Deps) fail(ctx context.Context, c *call, err error) error {
	rec := store.Call{
		OutputID:  c.outputID,
		Tool:      c.tool,
		Status:    "error",
		Code:      codeOf(err),
		ExitCode:  c.exitCode,
		Duration:  d.now().Sub(c.started),
		StartedAt: c.started,
	}
	if hr, ok := errors.AsType[*loom.HostRefusedError](err); ok && hr.HasHostCode {
		rec.HostCode = hr.HostCode
	}
	d.record(ctx, c, rec)
	return &callError{OutputID: c.outputID, Err: err}
}

// record audits the call and appends it to the call log even when the
// client has gone away; a run deleted meanwhile has no log to append to.
func (d *Deps) record(ctx context.Context, c *call, rec store.Call) {
	d.audit(ctx, c, rec)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := d.Store.AppendCall(ctx, c.run.ID, rec); err != nil && !errors.Is(err, store.ErrRunNotFound) {
		d.logger().ErrorContext(ctx, "call log append failed", "runId", c.run.ID, "outputId", c.outputID, "code", codeOf(err))
	}
}

// runTool is a tool call, in the reference's check order: not_configured,
// cancelled, the ceiling record, the argument builder, the process, the
// outcome, the payload shape, then measurement and handles.
func (d *Deps) runTool(ctx context.Context, tool loom.Tool, input []byte) ([]byte, error) {
	c, err := d.beginOutput(ctx, string(tool))
	if err != nil {
		return nil, err
	}
	if !d.offers(tool) || !runAllows(c.run, tool) {
		return nil, d.fail(ctx, c, errNotConfigured)
	}
	if d.AuditArgShape {
		c.argNames = argNames(input)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done, ok := d.inflight.add(c.run.ID, &cancel, d.MaxConcurrentPerRun)
	if !ok {
		return nil, d.fail(ctx, c, loom.ErrBusy)
	}
	defer done()
	if ctx.Err() != nil {
		return nil, d.fail(ctx, c, errCancelled)
	}

	record, err := loom.ReadCeiling(d.Config)
	if err != nil {
		return nil, d.fail(ctx, c, err)
	}
	ceiling := ifc.Meet(c.run.Ceiling, record)
	argv, err := loom.BuildArgv(d.Config, tool, input)
	if err != nil {
		return nil, d.fail(ctx, c, err)
	}
	// The query label is the model-context label at invocation, read
	// fresh: another call of the run may have grown it since auth.
	run, err := d.Store.Run(ctx, c.run.ID)
	if err != nil {
		return nil, d.fail(ctx, c, goneIsCancelled(err))
	}

	// The process and the reading of its output run under one loom slot
	// and one deadline (loomStage).
	stage, end, err := d.loomStage(ctx)
	if err != nil {
		if errors.Is(err, loom.ErrCancelled) {
			err = errCancelled
		}
		return nil, d.fail(ctx, c, err)
	}
	defer end()
	out, err := d.Runner.Run(stage, argv, d.Env)
	if err == nil || out.Duration > 0 {
		c.loomTime = &out.Duration
	}
	if err == nil && context.Cause(ctx) == errCancelled {
		// The run was deleted while loom ran: its output belongs to no
		// run, even when there is nothing to mint.
		err = errCancelled
	}
	if err != nil {
		if context.Cause(ctx) == errCancelled || errors.Is(err, loom.ErrCancelled) {
			err = stageEnded(stage)
		}
		return nil, d.fail(ctx, c, err)
	}
	code := out.ExitCode
	c.exitCode = &code
	payload, err := loom.Interpret(tool, loom.PersonLookup(tool, input), out)
	if err == nil && stage.Err() != nil {
		err = stageEnded(stage)
	}
	if err != nil {
		return nil, d.fail(ctx, c, err)
	}
	rows, more, envelope, err := loom.SplitContext(stage, tool, payload, ifc.MaxMeasuredRows)
	if err != nil {
		if stage.Err() != nil {
			err = stageEnded(stage)
		}
		return nil, d.fail(ctx, c, err)
	}
	if d.beforeMeasure != nil {
		d.beforeMeasure(stage)
	}
	res, err := ifc.MeasureContext(stage, ifc.Input{
		OutputID:  c.outputID,
		Kind:      tool.Kind(),
		Notice:    ifc.Notice,
		Rows:      rows,
		More:      more,
		Envelope:  envelope,
		Ceiling:   ceiling,
		Unlabeled: ifc.LabelForUnlabeledRow(run.ModelContext, d.Config.UnlabeledRowLabel),
	})
	if err != nil {
		return nil, d.fail(ctx, c, stageEnded(stage))
	}
	end()

	// A call whose rows would take the run's model-context label past
	// MaxLabelClauses answers none of them: the label could not record
	// what the agent read. Checked before minting against the label read
	// before loom ran; Observe checks again atomically.
	if d.MaxLabelClauses > 0 && res.Observed != nil && len(ifc.JoinModelContext(run.ModelContext, res.Observed)) > d.MaxLabelClauses {
		return nil, d.fail(ctx, c, store.ErrLabelLimit)
	}
	handles, err := d.mint(ctx, c, res)
	if err != nil {
		return nil, d.fail(ctx, c, goneIsCancelled(err))
	}
	d.Metrics.minted(len(handles))
	if res.Observed != nil {
		// A label grown by a racing call since the check above may still
		// refuse: the call then answers nothing, its handles unreturned.
		if _, err := d.Store.Observe(context.WithoutCancel(ctx), c.run.ID, res.Observed); err != nil {
			return nil, d.fail(ctx, c, goneIsCancelled(err))
		}
	}
	d.record(ctx, c, callRecord(c, res, handles, d.now()))
	return res.AppendJSON(make([]byte, 0, 4096), handles), nil
}

// loomStage begins a call's loom stage: the process and the reading of its
// output (Interpret, Split, Measure). It takes a slot of Slots, waiting as
// the Limiter says (loom.ErrBusy, loom.ErrCancelled), and the stage must
// end within CommandTimeout of taking it: the returned context expires then
// with cause loom.ErrTimeout. end gives the slot back; calling it again
// does nothing.
func (d *Deps) loomStage(ctx context.Context) (stage context.Context, end func(), err error) {
	release := func() {}
	if d.Slots != nil {
		if release, err = d.Slots.Acquire(ctx); err != nil {
			return nil, nil, err
		}
	}
	if d.CommandTimeout <= 0 {
		return ctx, release, nil
	}
	stage, stop := context.WithTimeoutCause(ctx, d.CommandTimeout, loom.ErrTimeout)
	return stage, func() { stop(); release() }, nil
}

// stageEnded is the error of a call whose loom stage ended before its
// output was measured: its deadline passed (loom.ErrTimeout, which is
// command_failed, as a process timeout), or the client went away or the
// run was deleted (cancelled).
func stageEnded(stage context.Context) error {
	if context.Cause(stage) == loom.ErrTimeout {
		return loom.ErrTimeout
	}
	return errCancelled
}

// mint registers the admitted entries in the run's handle table, in one
// atomic step, and returns their tokens in entry order.
func (d *Deps) mint(ctx context.Context, c *call, res ifc.Result) ([]string, error) {
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
	if err := context.Cause(ctx); err == errCancelled {
		return nil, errCancelled
	}
	lim := store.MintLimits{Handles: d.MaxHandlesPerRun, Bytes: d.MaxHandleBytesPerRun}
	return d.Store.Mint(context.WithoutCancel(ctx), c.run.ID, refs, lim)
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

// goneIsCancelled reads a run that vanished mid-call as a cancelled call.
func goneIsCancelled(err error) error {
	if errors.Is(err, store.ErrRunNotFound) {
		return errCancelled
	}
	return err
}

// runAllows reports whether the run may call the tool.
func runAllows(r store.Run, t loom.Tool) bool {
	if r.Tools == nil {
		return true
	}
	for _, n := range r.Tools {
		if n == string(t) {
			return true
		}
	}
	return false
}
