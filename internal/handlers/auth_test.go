package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// agentRoutes are the agent operations with a body each accepts: the
// outputs and the result writer.
var agentRoutes = func() []struct{ op, body string } {
	var routes []struct{ op, body string }
	for _, o := range testkit.Outputs {
		routes = append(routes, struct{ op, body string }{o.Name, o.Input})
	}
	return append(routes, struct{ op, body string }{"result", `{"value":{"note":"done"}}`})
}()

func TestAgentAuth(t *testing.T) {
	t.Parallel()
	const hostToken = "host-token-for-the-host-listener"
	g := newTestGateway(t, gatewayOptions{HostToken: hostToken})
	_, tokA := g.createRun(t, `{"runId":"a"}`)
	_, tokB := g.createRun(t, `{"runId":"b"}`)
	_, tokDeleted := g.createRun(t, `{"runId":"deleted"}`)
	_, tokExpired := g.createRun(t, `{"runId":"expired","ttlSeconds":60}`)
	wantStatus(t, g.hostDo(http.MethodDelete, "/host/v1/runs/deleted", ""), http.StatusNoContent)
	g.clock.Advance(61 * time.Second)

	tests := []struct {
		name   string
		header string // the Authorization header; "" sends none
		runID  string // the run id of the path
		status int
		code   string
	}{
		{"no token", "", "a", 401, "unauthorized"},
		{"empty bearer", "Bearer ", "a", 401, "unauthorized"},
		{"bearer without space", "Bearer" + tokA, "a", 401, "unauthorized"},
		{"not bearer", "Basic " + tokA, "a", 401, "unauthorized"},
		{"bare token", tokA, "a", 401, "unauthorized"},
		{"unknown token", "Bearer " + strings.Repeat("x", 43), "a", 401, "unauthorized"},
		{"malformed token", "Bearer not a token!", "a", 401, "unauthorized"},
		{"truncated token", "Bearer " + tokA[:len(tokA)-1], "a", 401, "unauthorized"},
		{"token of another live run", "Bearer " + tokB, "a", 404, "run_not_found"},
		{"token of another live run, unknown run id", "Bearer " + tokB, "nope", 404, "run_not_found"},
		{"token of a deleted run", "Bearer " + tokDeleted, "a", 401, "unauthorized"},
		{"token of a deleted run, own id", "Bearer " + tokDeleted, "deleted", 410, "run_ended"},
		{"token of an expired run", "Bearer " + tokExpired, "a", 401, "unauthorized"},
		{"token of an expired run, own id", "Bearer " + tokExpired, "expired", 410, "run_ended"},
		{"host token", "Bearer " + hostToken, "a", 401, "unauthorized"},
		{"no token, unknown run id", "", "nope", 401, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range agentRoutes {
				req := httptest.NewRequest(http.MethodPost, "/v1/runs/"+tt.runID+"/"+r.op, strings.NewReader(r.body))
				req.Header.Set("Content-Type", "application/json")
				if tt.header != "" {
					req.Header.Set("Authorization", tt.header)
				}
				rec := httptest.NewRecorder()
				g.agent.ServeHTTP(rec, req)
				if rec.Code != tt.status {
					t.Errorf("POST %s: status %d, want %d; body %s", req.URL.Path, rec.Code, tt.status, rec.Body)
					continue
				}
				wantProblem(t, rec, tt.status, tt.code)
				// RFC 9110 11.6.1: a 401 carries a challenge; RFC 6750
				// 3.1: invalid_token when a token was sent.
				want := ""
				if tt.status == 401 {
					want = "Bearer"
					if tok, ok := strings.CutPrefix(tt.header, "Bearer "); ok && strings.TrimSpace(tok) != "" {
						want = `Bearer error="invalid_token"`
					}
				}
				if got := rec.Header().Get("WWW-Authenticate"); got != want {
					t.Errorf("POST %s: WWW-Authenticate = %q, want %q", req.URL.Path, got, want)
				}
			}
		})
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("refused calls ran loom %d times", n)
	}
	if s := g.summary(t, "a"); s.Calls != 0 {
		t.Errorf("refused calls took %d outputs of run a", s.Calls)
	}

	// The run's own token passes on every route.
	for _, r := range agentRoutes {
		rec := g.call("a", tokA, r.op, r.body)
		if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
			t.Errorf("POST /v1/runs/a/%s with its token: %d %s", r.op, rec.Code, rec.Body)
		}
	}
}

func TestAgentRoutes(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"a"}`)
	tests := []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"unknown tool", http.MethodPost, "/v1/runs/a/loom_write", tok, 404, "route_not_found"},
		{"unknown route under the run", http.MethodGet, "/v1/runs/a", tok, 404, "route_not_found"},
		{"unknown route outside runs", http.MethodGet, "/v1/other", tok, 404, "route_not_found"},
		{"host route on the agent listener", http.MethodPost, "/host/v1/runs", tok, 404, "route_not_found"},
		{"unknown route without token", http.MethodPost, "/v1/runs/a/loom_write", "", 401, "unauthorized"},
		{"host route without token", http.MethodGet, "/host/v1/runs", "", 401, "unauthorized"},
		{"GET on a tool route", http.MethodGet, "/v1/runs/a/loom_search", tok, 405, "method_not_allowed"},
		{"PUT on describe_handle", http.MethodPut, "/v1/runs/a/describe_handle", tok, 405, "method_not_allowed"},
		{"GET on result", http.MethodGet, "/v1/runs/a/result", tok, 405, "method_not_allowed"},
		{"GET on a tool route without token", http.MethodGet, "/v1/runs/a/loom_search", "", 401, "unauthorized"},
		// The run id is read as the router reads it, escaped: "%61" is not
		// "a", so its own token answers as another run's would.
		{"percent-encoded run id", http.MethodPost, "/v1/runs/%61/loom_profile", tok, 404, "run_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, g.agentDo(tt.method, tt.path, tt.token, ""), tt.status, tt.code)
		})
	}
	// The contract and liveness need no token.
	for _, path := range []string{"/openapi.yaml", "/healthz"} {
		wantStatus(t, testkit.Serve(g.agent, http.MethodGet, path, "", ""), http.StatusOK)
	}
}
