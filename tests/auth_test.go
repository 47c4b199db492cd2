package tests

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// TestAgentAuthMatrix calls an agent route with every kind of wrong
// credential, and every agent route with another run's token, over the
// binary: 401 for a token that opens no run, 404 run_not_found for a live
// run's token on another run's path, 410 run_ended for a deleted or
// expired run's own token, never 200, and never a loom process.
func TestAgentAuthMatrix(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "default", behaviour{Stdout: `{"hits":[],"pages":[]}`})

	a := g.newRun(t, client.CreateRunInput{})
	b := g.newRun(t, client.CreateRunInput{})
	deleted := g.newRun(t, client.CreateRunInput{})
	expired := g.newRun(t, client.CreateRunInput{TtlSeconds: ptr(int64(1))})
	if r, err := g.hostClient(t).DeleteRunWithResponse(ctx(t), deleted.ID); err != nil || r.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v %v", err, r)
	}
	time.Sleep(time.Until(expired.summary(t).ExpiresAt) + 150*time.Millisecond)

	type cred struct {
		name   string
		header string // the whole Authorization header; "" sends none
		path   string // the run id in the path
		status int
		code   string
	}
	creds := []cred{
		{"no token", "", a.ID, 401, "unauthorized"},
		{"empty bearer", "Bearer ", a.ID, 401, "unauthorized"},
		{"basic scheme", "Basic " + a.Token, a.ID, 401, "unauthorized"},
		{"malformed token", "Bearer not a token!", a.ID, 401, "unauthorized"},
		{"truncated token", "Bearer " + a.Token[:len(a.Token)-1], a.ID, 401, "unauthorized"},
		{"another run's token", "Bearer " + b.Token, a.ID, 404, "run_not_found"},
		{"own token on an unknown run id", "Bearer " + a.Token, "no-such-run", 404, "run_not_found"},
		{"own token on a deleted run's id", "Bearer " + a.Token, deleted.ID, 404, "run_not_found"},
		{"deleted run's token", "Bearer " + deleted.Token, deleted.ID, 410, "run_ended"},
		{"deleted run's token on a live run", "Bearer " + deleted.Token, a.ID, 401, "unauthorized"},
		{"expired run's token", "Bearer " + expired.Token, expired.ID, 410, "run_ended"},
		{"expired run's token on a live run", "Bearer " + expired.Token, a.ID, 401, "unauthorized"},
		{"host token", "Bearer " + g.HostToken, a.ID, 401, "unauthorized"},
		{"no token, unknown run", "", "no-such-run", 401, "unauthorized"},
	}
	// Every credential on one route, and every route with one
	// credential: the matrix of every route and every credential is the
	// handlers' TestAgentAuth.
	type attempt struct {
		route string
		cred  int
	}
	var attempts []attempt
	for i := range creds {
		attempts = append(attempts, attempt{"loom_search", i})
	}
	for _, route := range agentRoutes {
		if route != "loom_search" {
			attempts = append(attempts, attempt{route, slices.IndexFunc(creds, func(c cred) bool { return c.name == "another run's token" })})
		}
	}
	for _, at := range attempts {
		route, cr := at.route, creds[at.cred]
		t.Run(route+"/"+cr.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(ctx(t), "POST", g.AgentURL+"/v1/runs/"+cr.path+"/"+route, strings.NewReader(validBody[route]))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if cr.header != "" {
				req.Header["Authorization"] = []string{cr.header}
			}
			resp, err := httpClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp.Body)
			resp.Body.Close()
			wantProblemCode(t, resp.StatusCode, body, cr.status, cr.code, "")
			if p := problemOf(t, body); p.OutputId != nil {
				t.Errorf("an unauthorised call got outputId %q", *p.OutputId)
			}
		})
	}

	t.Run("unknown agent route", func(t *testing.T) {
		t.Parallel()
		resp, body := rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+a.ID+"/loom_write", a.Token, "application/json", strings.NewReader(`{}`))
		wantProblemCode(t, resp.StatusCode, body, 404, "route_not_found", "")
		resp, body = rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+a.ID+"/loom_write", "", "application/json", strings.NewReader(`{}`))
		wantProblemCode(t, resp.StatusCode, body, 401, "unauthorized", "")
		resp, body = rawRequest(t, "GET", g.AgentURL+"/v1/runs/"+a.ID+"/loom_search", a.Token, "", nil)
		wantProblemCode(t, resp.StatusCode, body, 405, "method_not_allowed", "")
		// The host API is not on the agent listener.
		resp, body = rawRequest(t, "POST", g.AgentURL+"/host/v1/runs", g.HostToken, "application/json", strings.NewReader(`{}`))
		if resp.StatusCode != 401 && resp.StatusCode != 404 {
			t.Errorf("POST /host/v1/runs on the agent listener: %d %s, want 401 or 404", resp.StatusCode, body)
		}
		resp, body = rawRequest(t, "GET", g.AgentURL+"/host/v1/runs", a.Token, "", nil)
		if resp.StatusCode != 401 && resp.StatusCode != 404 {
			t.Errorf("GET /host/v1/runs on the agent listener with a run token: %d %s, want 401 or 404", resp.StatusCode, body)
		}
	})

	t.Cleanup(func() {
		if calls := g.loomCalls(t); len(calls) != 0 {
			t.Errorf("an unauthorised call ran loom %d times: %v", len(calls), calls[0].Argv)
		}
		// The valid token still works on its own run.
		if s := a.summary(t); s.Calls != 0 {
			t.Errorf("run %s counts %d calls, want 0", a.ID, s.Calls)
		}
	})
}
