package tests

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	host := g.hostClient(t)

	t.Run("create with a host-supplied id", func(t *testing.T) {
		t.Parallel()
		before := time.Now()
		resp, err := host.CreateRunWithResponse(ctx(t), client.CreateRunInput{
			RunId:              ptr("run-7.a_b"),
			MaxConfidentiality: &[]client.Clause{raw(`"` + atomWork + `"`)},
			TtlSeconds:         ptr(int64(600)),
			Tools:              &[]client.ToolId{"loom_search", "loom_page_read"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusCreated {
			t.Fatalf("status %d %s, want 201", resp.StatusCode(), resp.Body)
		}
		got := resp.JSON201
		if got.RunId != "run-7.a_b" {
			t.Errorf("runId = %q, want run-7.a_b", got.RunId)
		}
		if len(got.Token) < 43 {
			t.Errorf("token %q is shorter than 256 bits of base64", got.Token)
		}
		if lo, hi := before.Add(600*time.Second-2*time.Second), time.Now().Add(600*time.Second+2*time.Second); got.ExpiresAt.Before(lo) || got.ExpiresAt.After(hi) {
			t.Errorf("expiresAt = %v, want about now + 600s", got.ExpiresAt)
		}

		r := &run{ID: got.RunId, Token: got.Token, g: g}
		s := r.summary(t)
		if diff := cmp.Diff([]string{canon(t, raw(`"`+atomWork+`"`))}, canonList(t, derefClauses(s.Ceiling))); diff != "" {
			t.Errorf("ceiling (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]client.ToolId{"loom_search", "loom_page_read"}, s.Tools); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if s.Calls != 0 || s.Handles != 0 || s.HasResult || len(s.ModelContextLabel.Confidentiality) != 0 {
			t.Errorf("fresh run summary = %+v", s)
		}
		if !s.ExpiresAt.Equal(got.ExpiresAt) {
			t.Errorf("summary expiresAt %v != created %v", s.ExpiresAt, got.ExpiresAt)
		}
		// The token is shown once: never in a summary or the list.
		list, err := host.ListRunsWithResponse(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(list.Body), got.Token) {
			t.Error("the run list shows a run token")
		}
		sum, _ := host.GetRunWithResponse(ctx(t), got.RunId)
		if strings.Contains(string(sum.Body), got.Token) {
			t.Error("the run summary shows the run token")
		}
	})

	t.Run("create with a generated id", func(t *testing.T) {
		t.Parallel()
		resp, err := host.CreateRunWithResponse(ctx(t), client.CreateRunInput{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusCreated {
			t.Fatalf("status %d %s, want 201", resp.StatusCode(), resp.Body)
		}
		if !runIDPattern.MatchString(resp.JSON201.RunId) {
			t.Errorf("generated runId %q does not match the RunId pattern", resp.JSON201.RunId)
		}
		s := (&run{ID: resp.JSON201.RunId, g: g}).summary(t)
		if s.Ceiling != nil {
			t.Errorf("ceiling = %s, want null for a run without one", *s.Ceiling)
		}
		if diff := cmp.Diff(toolIDs(tools), s.Tools); diff != "" {
			t.Errorf("tools of an unrestricted run (-want +got):\n%s", diff)
		}
		again, _ := host.CreateRunWithResponse(ctx(t), client.CreateRunInput{})
		if again.StatusCode() != http.StatusCreated || again.JSON201.RunId == resp.JSON201.RunId || again.JSON201.Token == resp.JSON201.Token {
			t.Errorf("two generated runs share an id or token")
		}
	})

	t.Run("duplicate id", func(t *testing.T) {
		t.Parallel()
		g.newRun(t, client.CreateRunInput{RunId: ptr("dup-1")})
		resp, err := host.CreateRunWithResponse(ctx(t), client.CreateRunInput{RunId: ptr("dup-1")})
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusConflict, "run_exists", "")
	})

	malformed := []struct {
		name, method, path, contentType, body string
		status                                int
		code, pointer                         string
	}{
		{"bad runId pattern", "POST", "/host/v1/runs", "application/json", `{"runId":"bad id!"}`, 400, "invalid_input", "/runId"},
		{"runId too long", "POST", "/host/v1/runs", "application/json", `{"runId":"` + strings.Repeat("a", 129) + `"}`, 400, "invalid_input", "/runId"},
		{"unknown field", "POST", "/host/v1/runs", "application/json", `{"runID":"x"}`, 400, "invalid_input", ""},
		{"duplicate key", "POST", "/host/v1/runs", "application/json", `{"runId":"dk-1","runId":"dk-2"}`, 400, "invalid_input", ""},
		{"trailing data", "POST", "/host/v1/runs", "application/json", `{"runId":"td-1"} {}`, 400, "invalid_input", ""},
		{"half a document", "POST", "/host/v1/runs", "application/json", `{"runId":`, 400, "invalid_input", ""},
		{"null body", "POST", "/host/v1/runs", "application/json", `null`, 400, "invalid_input", ""},
		{"ttl zero", "POST", "/host/v1/runs", "application/json", `{"ttlSeconds":0}`, 400, "invalid_input", "/ttlSeconds"},
		{"unknown tool", "POST", "/host/v1/runs", "application/json", `{"tools":["loom_write"]}`, 400, "invalid_input", "/tools/0"},
		{"clause not an atom", "POST", "/host/v1/runs", "application/json", `{"maxConfidentiality":[17]}`, 400, "invalid_input", "/maxConfidentiality/0"},
		{"text body", "POST", "/host/v1/runs", "text/plain", `{"runId":"tp-1"}`, 415, "unsupported_media_type", ""},
		{"wrong method", "PUT", "/host/v1/runs", "application/json", `{}`, 405, "method_not_allowed", ""},
		{"wrong method on a run", "PATCH", "/host/v1/runs/run-x", "application/json", `{}`, 405, "method_not_allowed", ""},
		{"unknown route", "GET", "/host/v1/nothing", "", "", 404, "route_not_found", ""},
		{"unknown route below a run", "GET", "/host/v1/runs/run-x/secrets", "", "", 404, "route_not_found", ""},
	}
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			resp, b := rawRequest(t, tc.method, g.HostURL+tc.path, g.HostToken, tc.contentType, readerOrNil(body))
			wantProblemCode(t, resp.StatusCode, b, tc.status, tc.code, tc.pointer)
			for _, id := range []string{"dk-1", "dk-2", "td-1", "tp-1"} {
				if r, _ := host.GetRunWithResponse(ctx(t), id); r.StatusCode() != http.StatusNotFound {
					t.Errorf("run %s exists after a refused create", id)
				}
			}
		})
	}

	t.Run("get, list and delete", func(t *testing.T) {
		t.Parallel()
		a := g.newRun(t, client.CreateRunInput{RunId: ptr("gld-a")})
		b := g.newRun(t, client.CreateRunInput{RunId: ptr("gld-b")})
		list, err := host.ListRunsWithResponse(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, s := range list.JSON200.Runs {
			ids[s.RunId] = true
		}
		if !ids[a.ID] || !ids[b.ID] {
			t.Errorf("list lacks %s or %s: %v", a.ID, b.ID, ids)
		}
		del, err := host.DeleteRunWithResponse(ctx(t), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete: %d %s, want 204", del.StatusCode(), del.Body)
		}
		for name, status := range map[string]func() (int, []byte){
			"get":          func() (int, []byte) { r, _ := host.GetRunWithResponse(ctx(t), a.ID); return r.StatusCode(), r.Body },
			"delete again": func() (int, []byte) { r, _ := host.DeleteRunWithResponse(ctx(t), a.ID); return r.StatusCode(), r.Body },
			"calls": func() (int, []byte) {
				r, _ := host.ListCallsWithResponse(ctx(t), a.ID, nil)
				return r.StatusCode(), r.Body
			},
			"handles": func() (int, []byte) {
				r, _ := host.ListHandlesWithResponse(ctx(t), a.ID)
				return r.StatusCode(), r.Body
			},
			"result": func() (int, []byte) { r, _ := host.GetResultWithResponse(ctx(t), a.ID); return r.StatusCode(), r.Body },
			"observations": func() (int, []byte) {
				r, _ := host.AddObservationWithResponse(ctx(t), a.ID, client.ObservationInput{Label: client.ConfidentialityLabel{Confidentiality: []client.Clause{}}})
				return r.StatusCode(), r.Body
			},
		} {
			code, body := status()
			if code != http.StatusNotFound || problemOf(t, body).Code != "run_not_found" {
				t.Errorf("%s of a deleted run: %d %s, want 404 run_not_found", name, code, body)
			}
		}
		a.Agent = g.agentClient(t, a.Token)
		a.fails(t, "loom_search", validBody["loom_search"], http.StatusGone, "run_ended")
		if s := b.summary(t); s.RunId != b.ID {
			t.Errorf("the other run is gone too")
		}
	})

	t.Run("result before one is written", func(t *testing.T) {
		t.Parallel()
		r := g.newRun(t, client.CreateRunInput{})
		resp, err := host.GetResultWithResponse(ctx(t), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusNotFound, "result_not_found", "")
	})

	t.Run("expiry", func(t *testing.T) {
		t.Parallel()
		r := g.newRun(t, client.CreateRunInput{TtlSeconds: ptr(int64(1))})
		s := r.summary(t)
		if d := s.ExpiresAt.Sub(s.CreatedAt); d != time.Second {
			t.Errorf("expiresAt - createdAt = %v, want 1s", d)
		}
		time.Sleep(time.Until(s.ExpiresAt) + 150*time.Millisecond)
		resp, err := host.GetRunWithResponse(ctx(t), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusNotFound, "run_not_found", "")
		list, _ := host.ListRunsWithResponse(ctx(t), nil)
		for _, s := range list.JSON200.Runs {
			if s.RunId == r.ID {
				t.Errorf("expired run %s still listed", r.ID)
			}
		}
		r.fails(t, "loom_search", validBody["loom_search"], http.StatusGone, "run_ended")
		// Its id is free again.
		g.newRun(t, client.CreateRunInput{RunId: &r.ID})
	})

	t.Run("observations join into the model-context label", func(t *testing.T) {
		t.Parallel()
		r := g.newRun(t, client.CreateRunInput{ModelContextLabel: &client.ConfidentialityLabel{Confidentiality: []client.Clause{raw(`"` + atomWork + `"`)}}})
		observe := func(clauses ...string) {
			t.Helper()
			in := client.ObservationInput{Label: client.ConfidentialityLabel{Confidentiality: []client.Clause{}}}
			for _, c := range clauses {
				in.Label.Confidentiality = append(in.Label.Confidentiality, raw(c))
			}
			resp, err := host.AddObservationWithResponse(ctx(t), r.ID, in)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode() != http.StatusNoContent {
				t.Fatalf("observe: %d %s, want 204", resp.StatusCode(), resp.Body)
			}
		}
		user := `{"type":"` + atomUser + `","subject":"did:ex:ada"}`
		observe(`"` + atomHealth + `"`)
		observe(`"`+atomWork+`"`, user)
		observe()
		want := []string{canon(t, raw(`"`+atomWork+`"`)), canon(t, raw(`"`+atomHealth+`"`)), canon(t, raw(user))}
		if diff := cmp.Diff(want, canonList(t, r.summary(t).ModelContextLabel.Confidentiality)); diff != "" {
			t.Errorf("modelContextLabel (-want +got):\n%s", diff)
		}
		resp, b := rawRequest(t, "POST", g.HostURL+"/host/v1/runs/"+r.ID+"/observations", g.HostToken, "application/json", strings.NewReader(`{"label":{"confidentiality":[{"anyOf":[]}]}}`))
		wantProblemCode(t, resp.StatusCode, b, http.StatusBadRequest, "invalid_input", "")
		resp, b = rawRequest(t, "POST", g.HostURL+"/host/v1/runs/nobody/observations", g.HostToken, "application/json", strings.NewReader(`{"label":{"confidentiality":[]}}`))
		wantProblemCode(t, resp.StatusCode, b, http.StatusNotFound, "run_not_found", "")
	})

	t.Run("host token", func(t *testing.T) {
		t.Parallel()
		r := g.newRun(t, client.CreateRunInput{})
		routes := []struct{ method, path, body string }{
			{"GET", "/host/v1/runs", ""},
			{"POST", "/host/v1/runs", `{}`},
			{"GET", "/host/v1/runs/" + r.ID, ""},
			{"DELETE", "/host/v1/runs/" + r.ID, ""},
			{"GET", "/host/v1/runs/" + r.ID + "/calls", ""},
			{"POST", "/host/v1/runs/" + r.ID + "/observations", `{"label":{"confidentiality":[]}}`},
			{"GET", "/host/v1/runs/" + r.ID + "/handles", ""},
			{"GET", "/host/v1/runs/" + r.ID + "/result", ""},
			{"GET", "/host/v1/nothing", ""},
			{"GET", "/console/contract.json", ""},
			{"POST", "/console/agent/v1/runs/" + r.ID + "/loom_search", `{"query":"q"}`},
		}
		for _, tok := range []struct{ name, header string }{
			{"none", ""},
			{"wrong", "Bearer " + g.HostToken + "x"},
			{"run token", "Bearer " + r.Token},
			{"not bearer", "Basic " + g.HostToken},
			{"empty bearer", "Bearer "},
		} {
			for _, rt := range routes {
				req, _ := http.NewRequestWithContext(ctx(t), rt.method, g.HostURL+rt.path, strings.NewReader(rt.body))
				if tok.header != "" {
					req.Header.Set("Authorization", tok.header)
				}
				if rt.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := httpClient(t).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b := readAll(t, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || problemOf(t, b).Code != "unauthorized" {
					t.Errorf("%s %s with %s token: %d %s, want 401 unauthorized", rt.method, rt.path, tok.name, resp.StatusCode, b)
				}
			}
		}
		// Nothing happened: the run is still there, unobserved.
		if s := r.summary(t); len(s.ModelContextLabel.Confidentiality) != 0 {
			t.Errorf("an unauthorised observation was applied")
		}
		// The console's static page holds no data and is public.
		for _, path := range []string{"/healthz", "/readyz", "/console/"} {
			resp, b := rawRequest(t, "GET", g.HostURL+path, "", "", nil)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s without token: %d %s, want 200", path, resp.StatusCode, b)
			}
		}
	})

	t.Run("readyz", func(t *testing.T) {
		t.Parallel()
		resp, err := host.ReadyzWithResponse(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusOK || resp.JSON200 == nil || resp.JSON200.Checks == nil {
			t.Fatalf("readyz: %d %s", resp.StatusCode(), resp.Body)
		}
		if diff := cmp.Diff(map[string]string{"store": "ok", "loom": "ok"}, *resp.JSON200.Checks); diff != "" {
			t.Errorf("readyz checks (-want +got):\n%s", diff)
		}
	})
}

// wantProblemCode checks a problem answer (testkit.WantProblem); pointer
// "" is not checked.
func wantProblemCode(t testing.TB, status int, body []byte, wantStatus int, code, pointer string) {
	t.Helper()
	p := testkit.WantProblem(t, status, body, wantStatus, code)
	if pointer != "" && p.Pointer != pointer {
		t.Errorf("pointer = %q, want %q: %s", p.Pointer, pointer, body)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefClauses(p *[]client.Clause) []client.Clause {
	if p == nil {
		return nil
	}
	return *p
}

func toolIDs(names []string) []client.ToolId {
	out := make([]client.ToolId, len(names))
	for i, n := range names {
		out[i] = client.ToolId(n)
	}
	return out
}

// readerOrNil keeps a nil *strings.Reader from becoming a non-nil
// io.Reader.
func readerOrNil(r *strings.Reader) interface{ Read([]byte) (int, error) } {
	if r == nil {
		return nil
	}
	return r
}
