package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/result"
	"github.com/loom-gateway/gateway/internal/store"
)

var _ agent.StrictServerInterface = (*Agent)(nil)

// Agent implements the agent listener's operations.
type Agent struct{ d *Deps }

// NewAgent returns the agent listener's handlers over d.
func NewAgent(d *Deps) *Agent { return &Agent{d: d} }

func (a *Agent) LoomSearch(ctx context.Context, req agent.LoomSearchRequestObject) (agent.LoomSearchResponseObject, error) {
	return a.tool(ctx, loom.Search, *req.Body)
}

func (a *Agent) LoomPageDiscover(ctx context.Context, req agent.LoomPageDiscoverRequestObject) (agent.LoomPageDiscoverResponseObject, error) {
	return a.tool(ctx, loom.PageDiscover, *req.Body)
}

func (a *Agent) LoomPageInspect(ctx context.Context, req agent.LoomPageInspectRequestObject) (agent.LoomPageInspectResponseObject, error) {
	return a.tool(ctx, loom.PageInspect, *req.Body)
}

func (a *Agent) LoomPageRead(ctx context.Context, req agent.LoomPageReadRequestObject) (agent.LoomPageReadResponseObject, error) {
	return a.tool(ctx, loom.PageRead, *req.Body)
}

func (a *Agent) LoomPeople(ctx context.Context, req agent.LoomPeopleRequestObject) (agent.LoomPeopleResponseObject, error) {
	return a.tool(ctx, loom.People, *req.Body)
}

func (a *Agent) LoomCalendarList(ctx context.Context, req agent.LoomCalendarListRequestObject) (agent.LoomCalendarListResponseObject, error) {
	return a.tool(ctx, loom.CalendarList, *req.Body)
}

func (a *Agent) LoomContext(ctx context.Context, req agent.LoomContextRequestObject) (agent.LoomContextResponseObject, error) {
	return a.tool(ctx, loom.Context, *req.Body)
}

func (a *Agent) LoomProfile(ctx context.Context, req agent.LoomProfileRequestObject) (agent.LoomProfileResponseObject, error) {
	return a.tool(ctx, loom.Profile, *req.Body)
}

// tool runs one of the eight tools; the body is the result object written
// by ifc in the reference's key order.
func (a *Agent) tool(ctx context.Context, t loom.Tool, input []byte) (rawJSON, error) {
	body, err := a.d.runTool(ctx, t, input)
	if err != nil {
		return rawJSON{}, err
	}
	return rawJSON{status: http.StatusOK, body: body}, nil
}

// DescribeHandle reports a held referent's kind, source tool, labelSource
// and atom types, never its value (Gateway decision 10).
func (a *Agent) DescribeHandle(ctx context.Context, req agent.DescribeHandleRequestObject) (agent.DescribeHandleResponseObject, error) {
	c, err := a.d.beginOutput(ctx, "describe_handle")
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(req.Body.Token)
	ref, held, err := a.d.Store.Handle(ctx, c.run.ID, token)
	if err != nil {
		return nil, a.d.fail(ctx, c, err)
	}
	resp := description{OutputID: c.outputID, Token: token, Known: held}
	if held {
		resp.Referent = &referentKind{Kind: ref.Kind, Source: ref.Source, LabelSource: ref.LabelSource}
		disclosed := ifc.Disclose(ref.Label)
		resp.Label = &disclosed
	}
	a.d.record(ctx, c, store.Call{
		OutputID: c.outputID, Tool: c.tool, Status: "ok",
		Duration: a.d.now().Sub(c.started), StartedAt: c.started,
	})
	return marshalRaw(http.StatusOK, resp)
}

// description is describe_handle's answer, in Gateway decision 10's order.
type description struct {
	OutputID string         `json:"outputId"`
	Token    string         `json:"token"`
	Known    bool           `json:"known"`
	Referent *referentKind  `json:"referent,omitempty"`
	Label    *ifc.Disclosed `json:"label,omitempty"`
}

type referentKind struct {
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	LabelSource string `json:"labelSource"`
}

// WriteResult resolves the agent's structured result against the run's
// held referents and stores it; any unheld token stores nothing.
func (a *Agent) WriteResult(ctx context.Context, req agent.WriteResultRequestObject) (agent.WriteResultResponseObject, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, errUnauthorized
	}
	// A run that has its result (as auth read it) refuses another before
	// the handle table is copied and the body resolved against it, so
	// repeating a write costs nothing; PutResult still holds the rule
	// atomically for writes that race.
	if run.HasResult {
		return nil, store.ErrResultExists
	}
	held, err := a.d.Store.Handles(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	res, links, err := result.Write(req.Body.Value, run.ID, held)
	if err != nil {
		return nil, err
	}
	res.WrittenAt = a.d.now()
	if err := a.d.Store.PutResult(ctx, run.ID, res); err != nil {
		return nil, err
	}
	return agent.WriteResult201JSONResponse{Status: agent.ResultWrittenStatusOk, Documents: len(res.Documents), Links: links}, nil
}

// rawJSON is a JSON body written as given; it answers every agent and host
// operation.
type rawJSON struct {
	status int
	body   []byte
}

// write sends the body with its length, so that net/http sends it as it is
// rather than in chunks.
func (r rawJSON) write(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(r.body)))
	w.WriteHeader(r.status)
	_, err := w.Write(r.body)
	return err
}

func (r rawJSON) VisitLoomSearchResponse(w http.ResponseWriter) error       { return r.write(w) }
func (r rawJSON) VisitLoomPageDiscoverResponse(w http.ResponseWriter) error { return r.write(w) }
func (r rawJSON) VisitLoomPageInspectResponse(w http.ResponseWriter) error  { return r.write(w) }
func (r rawJSON) VisitLoomPageReadResponse(w http.ResponseWriter) error     { return r.write(w) }
func (r rawJSON) VisitLoomPeopleResponse(w http.ResponseWriter) error       { return r.write(w) }
func (r rawJSON) VisitLoomCalendarListResponse(w http.ResponseWriter) error { return r.write(w) }
func (r rawJSON) VisitLoomContextResponse(w http.ResponseWriter) error      { return r.write(w) }
func (r rawJSON) VisitLoomProfileResponse(w http.ResponseWriter) error      { return r.write(w) }
func (r rawJSON) VisitDescribeHandleResponse(w http.ResponseWriter) error   { return r.write(w) }
func (r rawJSON) VisitGetResultResponse(w http.ResponseWriter) error        { return r.write(w) }
func (r rawJSON) VisitListHandlesResponse(w http.ResponseWriter) error      { return r.write(w) }

// marshalRaw writes v as a rawJSON response.
func marshalRaw(status int, v any) (rawJSON, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return rawJSON{}, err
	}
	return rawJSON{status: status, body: body}, nil
}
