package handlers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/loom-gateway/gateway/api/host"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
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
	run := store.Run{CreatedAt: wireTime(h.d.now()), Ceiling: h.d.MaxConfidentiality}
	if in.RunId != nil {
		// The contract's pattern admits them, but no client reaches a
		// path segment "." or "..": URL resolution removes it.
		if *in.RunId == "." || *in.RunId == ".." {
			return nil, &inputError{Pointer: "/runId"}
		}
		run.ID = *in.RunId
	} else {
		run.ID = "run-" + randomText(12)
	}
	if in.MaxConfidentiality != nil {
		manifest, err := parseClauses(*in.MaxConfidentiality, "/maxConfidentiality")
		if err != nil {
			return nil, err
		}
		run.Ceiling = ifc.Meet(h.d.MaxConfidentiality, ifc.CeilingOf(manifest))
	}
	if in.ModelContextLabel != nil {
		start, err := parseClauses(in.ModelContextLabel.Confidentiality, "/modelContextLabel/confidentiality")
		if err != nil {
			return nil, err
		}
		run.ModelContext = ifc.JoinModelContext(nil, start)
		if h.d.MaxLabelClauses > 0 && len(run.ModelContext) > h.d.MaxLabelClauses {
			return nil, store.ErrLabelLimit
		}
	}
	ttl := h.d.runTTL()
	if in.TtlSeconds != nil {
		ttl = time.Duration(*in.TtlSeconds) * time.Second
	}
	run.ExpiresAt = run.CreatedAt.Add(ttl)
	if in.Tools != nil {
		run.Tools = []string{}
		for i, t := range *in.Tools {
			tool, ok := loom.ParseTool(string(t))
			if !ok || !h.d.offers(tool) {
				return nil, &inputError{Pointer: fmt.Sprintf("/tools/%d", i), Choices: h.d.toolNames()}
			}
			run.Tools = append(run.Tools, string(tool))
		}
	}
	token := randomText(32)
	run.TokenHash = store.HashToken(token)
	if err := h.d.Store.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	h.d.logger().LogAttrs(ctx, slog.LevelInfo, "run created",
		slog.String("requestId", requestID(ctx)), slog.String("runId", run.ID),
		slog.Time("expiresAt", wireTime(run.ExpiresAt)))
	return host.CreateRun201JSONResponse{RunId: run.ID, Token: token, ExpiresAt: wireTime(run.ExpiresAt)}, nil
}

func (h *Host) ListRuns(ctx context.Context, _ host.ListRunsRequestObject) (host.ListRunsResponseObject, error) {
	runs, err := h.d.Store.Runs(ctx)
	if err != nil {
		return nil, err
	}
	out := host.ListRuns200JSONResponse{Runs: make([]host.RunSummary, 0, len(runs))}
	for _, r := range runs {
		out.Runs = append(out.Runs, h.d.summary(r))
	}
	return out, nil
}

func (h *Host) GetRun(ctx context.Context, req host.GetRunRequestObject) (host.GetRunResponseObject, error) {
	r, err := h.d.Store.Run(ctx, req.RunId)
	if err != nil {
		return nil, err
	}
	return host.GetRun200JSONResponse(h.d.summary(r)), nil
}

// DeleteRun removes the run; its calls in flight answer cancelled.
func (h *Host) DeleteRun(ctx context.Context, req host.DeleteRunRequestObject) (host.DeleteRunResponseObject, error) {
	if err := h.d.Store.DeleteRun(ctx, req.RunId); err != nil {
		return nil, err
	}
	h.d.inflight.cancelRun(req.RunId)
	h.d.logger().LogAttrs(ctx, slog.LevelInfo, "run deleted",
		slog.String("requestId", requestID(ctx)), slog.String("runId", req.RunId))
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
	calls, total, err := h.d.Store.CallsPage(ctx, req.RunId, after, limit)
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
	conf, err := parseClauses(req.Body.Label.Confidentiality, "/label/confidentiality")
	if err != nil {
		return nil, err
	}
	if _, err := h.d.Store.Observe(ctx, req.RunId, conf); err != nil {
		return nil, err
	}
	return host.AddObservation204Response{}, nil
}

// ListHandles returns the handle table with values and full labels: what a
// result writer on the host side needs.
func (h *Host) ListHandles(ctx context.Context, req host.ListHandlesRequestObject) (host.ListHandlesResponseObject, error) {
	refs, err := h.d.Store.Handles(ctx, req.RunId)
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
	res, err := h.d.Store.Result(ctx, req.RunId)
	if errors.Is(err, store.ErrNoResult) {
		return nil, errNoResult
	}
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
func (d *Deps) summary(r store.Run) host.RunSummary {
	s := host.RunSummary{
		RunId:             r.ID,
		CreatedAt:         wireTime(r.CreatedAt),
		ExpiresAt:         wireTime(r.ExpiresAt),
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
	tools := r.Tools
	if tools == nil {
		tools = d.toolNames()
	}
	for _, t := range tools {
		s.Tools = append(s.Tools, host.ToolId(t))
	}
	return s
}

func (d *Deps) toolNames() []string {
	names := make([]string, 0, len(d.Tools))
	if d.Config == nil {
		return names
	}
	for _, t := range d.Tools {
		names = append(names, string(t))
	}
	return names
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
		StartedAt:  wireTime(c.StartedAt),
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

// parseClauses reads a host-supplied clause list strictly; a bad clause is
// invalid_input at ptr.
func parseClauses(in []host.Clause, ptr string) (ifc.Confidentiality, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, &inputError{Pointer: ptr}
	}
	if in == nil {
		raw = []byte("[]")
	}
	conf, err := ifc.ParseConfidentiality(raw)
	if err != nil {
		return nil, &inputError{Pointer: ptr}
	}
	return conf, nil
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

// wireTime is a timestamp as the gateway writes it: UTC, to the
// millisecond.
func wireTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// randomText returns n random bytes as unpadded base64url.
func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errNoResult = errors.New("handlers: no result")

func (r rawJSON) VisitListRunsResponse(w http.ResponseWriter) error { return r.write(w) }
