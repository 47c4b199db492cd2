package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/loom-gateway/gateway/api/host"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

var _ host.StrictServerInterface = (*Host)(nil)

// Host implements the host listener's operations.
type Host struct{ d *Deps }

// NewHost returns the host listener's handlers over d.
func NewHost(d *Deps) *Host { return &Host{d: d} }

// CreateRun creates a run and issues its token: 256 random bits, returned
// once and stored only as a hash.
func (h *Host) CreateRun(ctx context.Context, req host.CreateRunRequestObject) (host.CreateRunResponseObject, error) {
	in := req.Body
	spec := gateway.RunSpec{ID: in.RunId}
	if in.MaxConfidentiality != nil {
		spec.MaxConfidentiality = clausesIn(*in.MaxConfidentiality)
	}
	if in.ModelContextLabel != nil {
		spec.ModelContext = clausesIn(in.ModelContextLabel.Confidentiality)
	}
	if in.TtlSeconds != nil {
		ttl := time.Duration(*in.TtlSeconds) * time.Second
		spec.TTL = &ttl
	}
	if in.Tools != nil {
		tools := make([]string, 0, len(*in.Tools))
		for _, t := range *in.Tools {
			tools = append(tools, string(t))
		}
		spec.Tools = &tools
	}
	c, err := h.d.Core.CreateRun(ctx, spec)
	if err != nil {
		return nil, err
	}
	return host.CreateRun201JSONResponse{RunId: c.Run.ID, Token: c.Token, ExpiresAt: gateway.WireTime(c.Run.ExpiresAt)}, nil
}

// ListRuns returns a page of the live runs, at most limit of them (the
// validator holds it to the contract's bounds) after cursor, with the
// cursor of the next page when more may follow.
func (h *Host) ListRuns(ctx context.Context, req host.ListRunsRequestObject) (host.ListRunsResponseObject, error) {
	cursor, limit := "", 0
	if req.Params.Cursor != nil {
		cursor = *req.Params.Cursor
	}
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	runs, next, err := h.d.Core.RunsPage(ctx, cursor, limit)
	if err != nil {
		return nil, err
	}
	out := host.ListRuns200JSONResponse{Runs: make([]host.RunSummary, 0, len(runs))}
	for _, r := range runs {
		out.Runs = append(out.Runs, h.summary(r))
	}
	if next != "" {
		out.NextCursor = &next
	}
	return out, nil
}

func (h *Host) GetRun(ctx context.Context, req host.GetRunRequestObject) (host.GetRunResponseObject, error) {
	r, err := h.d.Core.Run(ctx, req.RunId)
	if err != nil {
		return nil, err
	}
	return host.GetRun200JSONResponse(h.summary(r)), nil
}

// DeleteRun removes the run; its calls in flight answer cancelled.
func (h *Host) DeleteRun(ctx context.Context, req host.DeleteRunRequestObject) (host.DeleteRunResponseObject, error) {
	if err := h.d.Core.DeleteRun(ctx, req.RunId); err != nil {
		return nil, err
	}
	return host.DeleteRun204Response{}, nil
}

// ListCalls returns the run's call log, or the page of it after its first
// after records, at most limit of them (the validator holds both to the
// contract's bounds). next, the after of the following page, is set only
// when the log holds records past this page.
func (h *Host) ListCalls(ctx context.Context, req host.ListCallsRequestObject) (host.ListCallsResponseObject, error) {
	after, limit := 0, 0
	if req.Params.After != nil {
		after = *req.Params.After
	}
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	calls, total, err := h.d.Core.CallsPage(ctx, req.RunId, after, limit)
	if err != nil {
		return nil, err
	}
	out := host.ListCalls200JSONResponse{Calls: make([]host.CallRecord, 0, len(calls)), Total: &total}
	for _, c := range calls {
		out.Calls = append(out.Calls, callOut(c))
	}
	if next := after + len(calls); next < total {
		out.Next = &next
	}
	return out, nil
}

// AddObservation joins another tool's label into the run's model-context
// label, the query label of the run's next call.
func (h *Host) AddObservation(ctx context.Context, req host.AddObservationRequestObject) (host.AddObservationResponseObject, error) {
	if err := h.d.Core.Observe(ctx, req.RunId, clausesIn(req.Body.Label.Confidentiality)); err != nil {
		return nil, err
	}
	return host.AddObservation204Response{}, nil
}

// ListHandles returns the handle table with values and full labels: what a
// result writer on the host side needs.
func (h *Host) ListHandles(ctx context.Context, req host.ListHandlesRequestObject) (host.ListHandlesResponseObject, error) {
	refs, err := h.d.Core.Handles(ctx, req.RunId)
	if err != nil {
		return nil, err
	}
	out := host.HandleList{Handles: make([]host.Referent, 0, len(refs))}
	for _, r := range refs {
		v := json.RawMessage(r.Value)
		out.Handles = append(out.Handles, host.Referent{
			Token:       r.Token,
			Kind:        host.ReferentKind(r.Kind),
			Source:      host.ToolId(r.Source),
			Value:       v,
			Label:       fullLabel(r.Label),
			LabelSource: host.ReferentLabelSource(r.LabelSource),
		})
	}
	return marshalRaw(http.StatusOK, out)
}

func (h *Host) GetResult(ctx context.Context, req host.GetResultRequestObject) (host.GetResultResponseObject, error) {
	res, err := h.d.Core.Result(ctx, req.RunId)
	if err != nil {
		return nil, err
	}
	v := json.RawMessage(res.Value)
	out := host.ResultRecord{
		Value:     v,
		Documents: make([]host.Document, 0, len(res.Documents)),
		Receipt:   fullLabel(res.Receipt),
		Label:     fullLabel(res.Label),
	}
	for _, d := range res.Documents {
		dv := json.RawMessage(d.Value)
		out.Documents = append(out.Documents, host.Document{Id: d.ID, Source: host.ToolId(d.Source), Value: dv, Label: fullLabel(d.Label)})
	}
	return marshalRaw(http.StatusOK, out)
}

// summary is a run as the host sees it.
func (h *Host) summary(r store.Run) host.RunSummary {
	s := host.RunSummary{
		RunId:             r.ID,
		CreatedAt:         gateway.WireTime(r.CreatedAt),
		ExpiresAt:         gateway.WireTime(r.ExpiresAt),
		ModelContextLabel: host.ConfidentialityLabel{Confidentiality: clausesOut(r.ModelContext)},
		Tools:             []host.ToolId{},
		Calls:             r.Calls,
		Handles:           r.Handles,
		HasResult:         r.HasResult,
	}
	if r.Ceiling.Defined() {
		c := clausesOut(r.Ceiling.Clauses())
		s.Ceiling = &c
	}
	if r.Tools == nil {
		for _, t := range h.d.Core.Offered() {
			s.Tools = append(s.Tools, host.ToolId(t))
		}
	}
	for _, t := range r.Tools {
		s.Tools = append(s.Tools, host.ToolId(t))
	}
	return s
}

func callOut(c store.Call) host.CallRecord {
	out := host.CallRecord{
		OutputId:   c.OutputID,
		Tool:       c.Tool,
		Status:     host.CallRecordStatus(c.Status),
		Admitted:   c.Admitted,
		Withheld:   c.Withheld,
		Omitted:    c.Omitted,
		Truncated:  c.Truncated,
		ExitCode:   c.ExitCode,
		DurationMs: c.Duration.Milliseconds(),
		StartedAt:  gateway.WireTime(c.StartedAt),
	}
	out.Cfc.Version = 1
	if c.Observed != nil {
		out.Cfc.ObservedLabel = &host.ConfidentialityLabel{Confidentiality: clausesOut(c.Observed)}
	}
	if c.Code != "" {
		out.Code = &c.Code
	}
	if c.HostCode != "" {
		out.HostCode = &c.HostCode
	}
	if c.TraceID != "" {
		out.TraceId = &c.TraceID
	}
	if f := c.Failure; f != nil {
		out.Failure = &host.CallFailure{Reason: host.CallFailureReason(f.Reason)}
		if f.Detail != "" {
			out.Failure.Detail = &f.Detail
		}
		if f.StderrTail != "" {
			out.Failure.StderrTail = &f.StderrTail
		}
		if f.Argv != nil {
			out.Failure.Argv = &f.Argv
		}
	}
	if c.Entries != nil {
		entries := make([]host.CallEntry, 0, len(c.Entries))
		for _, e := range c.Entries {
			ce := host.CallEntry{Status: host.CallEntryStatus(e.Status)}
			if e.Status == "admitted" {
				ce.LabelSource, ce.Handle = ptr(e.LabelSource), ptr(e.Handle)
				ce.Label = &host.DisclosedLabel{Confidentiality: nonNil(e.Label.Confidentiality), Integrity: nonNil(e.Label.Integrity)}
				if e.Truncated {
					ce.Truncated = ptr(true)
				}
			} else {
				ce.ReasonCode = ptr(e.ReasonCode)
			}
			entries = append(entries, ce)
		}
		out.Entries = &entries
	}
	return out
}

// clausesIn is a host clause list as the JSON the core reads; an absent
// list is empty.
func clausesIn(in []host.Clause) []byte {
	if in == nil {
		return []byte("[]")
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return []byte("null") // refused by the core as invalid input
	}
	return raw
}

func clausesOut(c ifc.Confidentiality) []host.Clause {
	out := make([]host.Clause, 0, len(c))
	for _, cl := range c {
		out = append(out, json.RawMessage(cl))
	}
	return out
}

func fullLabel(l ifc.Label) host.FullLabel {
	out := host.FullLabel{Confidentiality: clausesOut(l.Confidentiality), Integrity: make([]host.Atom, 0, len(l.Integrity))}
	for _, a := range l.Integrity {
		out.Integrity = append(out.Integrity, json.RawMessage(a))
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}

func ptr[T any](v T) *T { return &v }

func (r rawJSON) VisitListRunsResponse(w http.ResponseWriter) error { return r.write(w) }
