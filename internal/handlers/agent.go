package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/tooldef"
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

// tool runs one of the eight tools; the body is the result object the
// core wrote in the reference's key order.
func (a *Agent) tool(ctx context.Context, t loom.Tool, input []byte) (rawJSON, error) {
	cl, ok := claimOf(ctx)
	if !ok {
		return rawJSON{}, errUnauthorized
	}
	body, err := a.d.Core.CallClaim(ctx, cl, t, input)
	if err != nil {
		return rawJSON{}, err
	}
	return rawJSON{status: http.StatusOK, body: body}, nil
}

// claimOf is the request's claim to its run, for the core to check (a
// pending claim, agentClaims), or that of the run agentAuth opened.
func claimOf(ctx context.Context) (gateway.Claim, bool) {
	if p, ok := claimFrom(ctx); ok {
		return p.take(), true
	}
	run, ok := runFrom(ctx)
	if !ok {
		return gateway.Claim{}, false
	}
	return gateway.Claim{RunID: run.ID, Token: run.TokenHash}, true
}

// DescribeHandle reports a held referent's kind, source tool, labelSource
// and atom types, never its value (Gateway decision 10).
func (a *Agent) DescribeHandle(ctx context.Context, req agent.DescribeHandleRequestObject) (agent.DescribeHandleResponseObject, error) {
	cl, ok := claimOf(ctx)
	if !ok {
		return nil, errUnauthorized
	}
	desc, err := a.d.Core.DescribeClaim(ctx, cl, req.Body.Token)
	if err != nil {
		return nil, err
	}
	return marshalRaw(http.StatusOK, desc)
}

// WriteResult resolves the agent's structured result against the run's
// held referents and stores it; any unheld token stores nothing.
func (a *Agent) WriteResult(ctx context.Context, req agent.WriteResultRequestObject) (agent.WriteResultResponseObject, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, errUnauthorized
	}
	w, err := a.d.Core.WriteResult(ctx, run, req.Body.Value)
	if err != nil {
		return nil, err
	}
	return agent.WriteResult201JSONResponse{Status: agent.ResultWrittenStatusOk, Documents: w.Documents, Links: w.Links}, nil
}

// ListTools lists the definitions of what the run may call, for a
// model's function-calling API.
func (a *Agent) ListTools(ctx context.Context, req agent.ListToolsRequestObject) (agent.ListToolsResponseObject, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, errUnauthorized
	}
	tools := a.d.Defs.For(a.d.Core.Callable(run))
	var err error
	if req.Params.Dialect != nil {
		for i, t := range tools {
			if tools[i], err = tooldef.In(t, tooldef.Dialect(*req.Params.Dialect)); err != nil {
				return nil, err
			}
		}
	}
	return marshalRaw(http.StatusOK, struct {
		Tools []tooldef.Def `json:"tools"`
	}{tools})
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
func (r rawJSON) VisitListToolsResponse(w http.ResponseWriter) error        { return r.write(w) }

// marshalRaw writes v as a rawJSON response.
func marshalRaw(status int, v any) (rawJSON, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return rawJSON{}, err
	}
	return rawJSON{status: status, body: body}, nil
}
