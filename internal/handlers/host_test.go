package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

const (
	work   = "https://loom.example/facet/work"
	home   = "https://loom.example/facet/home"
	health = "https://loom.example/facet/health"
)

var (
	runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
)

// runSummary is a run as the host reads it.
type runSummary struct {
	RunID             string          `json:"runId"`
	CreatedAt         time.Time       `json:"createdAt"`
	ExpiresAt         time.Time       `json:"expiresAt"`
	Ceiling           json.RawMessage `json:"ceiling"`
	ModelContextLabel json.RawMessage `json:"modelContextLabel"`
	Tools             []string        `json:"tools"`
	Calls             int             `json:"calls"`
	Handles           int             `json:"handles"`
	HasResult         bool            `json:"hasResult"`
}

func (g *testGateway) summary(t *testing.T, id string) runSummary {
	t.Helper()
	rec := g.hostDo(http.MethodGet, "/host/v1/runs/"+id, "")
	wantStatus(t, rec, http.StatusOK)
	var s runSummary
	decode(t, rec, &s)
	return s
}

// compactJSON returns s compacted, so JSON texts compare independently
// of white space.
func compactJSON(t *testing.T, s []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, s); err != nil {
		t.Fatalf("compact %q: %v", s, err)
	}
	return b.String()
}

func TestCreateRun(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})

	rec := g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"run-7","ttlSeconds":120}`)
	wantStatus(t, rec, http.StatusCreated)
	if diff := cmp.Diff([]string{"expiresAt", "runId", "token"}, testkit.ObjectKeys(t, rec.Body.Bytes()), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("create response members mismatch (-want +got):\n%s", diff)
	}
	var created struct {
		RunID     string    `json:"runId"`
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	decode(t, rec, &created)
	if created.RunID != "run-7" {
		t.Errorf("runId = %q, want run-7", created.RunID)
	}
	if want := testStart.Add(120 * time.Second); !created.ExpiresAt.Equal(want) {
		t.Errorf("expiresAt = %v, want %v", created.ExpiresAt, want)
	}
	if !tokenPattern.MatchString(created.Token) {
		t.Errorf("token %q is not 43 base64url characters (256 bits)", created.Token)
	}

	// The store keeps the hash only.
	run, err := g.store.Run(context.Background(), "run-7")
	if err != nil {
		t.Fatalf("store.Run(run-7): %v", err)
	}
	if run.TokenHash != store.HashToken(created.Token) {
		t.Errorf("stored TokenHash is not HashToken(token)")
	}
	if dump := fmt.Sprintf("%#v", run); strings.Contains(dump, created.Token) {
		t.Errorf("the stored run holds the token text: %s", dump)
	}
	// Neither the summary nor the list shows it.
	for _, path := range []string{"/host/v1/runs", "/host/v1/runs/run-7"} {
		if rec := g.hostDo(http.MethodGet, path, ""); strings.Contains(rec.Body.String(), created.Token) {
			t.Errorf("GET %s shows the run token: %s", path, rec.Body)
		}
	}

	// Generated ids match the runId pattern; every run gets its own token.
	id1, tok1 := g.createRun(t, "")
	id2, tok2 := g.createRun(t, `{"ttlSeconds":60}`)
	for _, id := range []string{id1, id2} {
		if !runIDPattern.MatchString(id) {
			t.Errorf("generated run id %q does not match %s", id, runIDPattern)
		}
	}
	if id1 == id2 || tok1 == tok2 || tok1 == created.Token {
		t.Errorf("runs share an id or a token: %q %q / %q %q", id1, id2, tok1, tok2)
	}
	// The default TTL applies when none is given.
	if s := g.summary(t, id1); !s.ExpiresAt.Equal(testStart.Add(g.deps.RunTTL)) {
		t.Errorf("default expiresAt = %v, want %v", s.ExpiresAt, testStart.Add(g.deps.RunTTL))
	}

	// The same id again is refused.
	wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"run-7"}`), http.StatusConflict, "run_exists")
}

func TestCreateRunRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string // "" means application/json
		body        string
		status      int
		code        string
		pointer     string
		choices     []string
	}{
		{name: "bad id pattern", body: `{"runId":"bad id"}`, status: 400, code: "invalid_input", pointer: "/runId"},
		{name: "id too long", body: `{"runId":"` + strings.Repeat("a", 129) + `"}`, status: 400, code: "invalid_input", pointer: "/runId"},
		{name: "empty id", body: `{"runId":""}`, status: 400, code: "invalid_input", pointer: "/runId"},
		{name: "unknown field", body: `{"runId":"r","ceiling":[]}`, status: 400, code: "invalid_input", pointer: "/ceiling"},
		{name: "duplicate key", body: `{"runId":"a","runId":"b"}`, status: 400, code: "invalid_input", pointer: "/runId"},
		{name: "trailing data", body: `{"runId":"a"} {}`, status: 400, code: "invalid_input"},
		{name: "not JSON", body: `{"runId":`, status: 400, code: "invalid_input", pointer: ""}, // a syntax error names no member
		{name: "not JSON content type", contentType: "text/plain", body: `{"runId":"a"}`, status: 415, code: "unsupported_media_type"},
		{name: "no content type", contentType: "-", body: `{"runId":"a"}`, status: 415, code: "unsupported_media_type"},
		{name: "too large", body: `{"runId":"` + strings.Repeat("a", 2000) + `"}`, status: 413, code: "request_too_large"},
		{name: "ttl zero", body: `{"ttlSeconds":0}`, status: 400, code: "invalid_input", pointer: "/ttlSeconds"},
		{name: "ttl over 30 days", body: `{"ttlSeconds":2592001}`, status: 400, code: "invalid_input", pointer: "/ttlSeconds"},
		{name: "ttl not an integer", body: `{"ttlSeconds":1.5}`, status: 400, code: "invalid_input", pointer: "/ttlSeconds"},
		{name: "clause of the wrong type", body: `{"maxConfidentiality":[42]}`, status: 400, code: "invalid_input", pointer: "/maxConfidentiality/0"},
		{name: "clause without type", body: `{"maxConfidentiality":[{"owner":"x"}]}`, status: 400, code: "invalid_input", pointer: "/maxConfidentiality"},
		{name: "clause with type and anyOf", body: `{"maxConfidentiality":[{"type":"A","anyOf":["B"]}]}`, status: 400, code: "invalid_input", pointer: "/maxConfidentiality"},
		{name: "empty anyOf in a label", body: `{"modelContextLabel":{"confidentiality":[{"anyOf":[]}]}}`, status: 400, code: "invalid_input", pointer: "/modelContextLabel/confidentiality"},
		{name: "bad model-context clause", body: `{"modelContextLabel":{"confidentiality":[{"x":1}]}}`, status: 400, code: "invalid_input", pointer: "/modelContextLabel/confidentiality"},
		{name: "unknown tool", body: `{"tools":["loom_write"]}`, status: 400, code: "invalid_input", pointer: "/tools/0",
			choices: []string{"loom_search", "loom_page_discover", "loom_page_inspect", "loom_page_read", "loom_people", "loom_calendar_list", "loom_context", "loom_profile"}},
		{name: "tool not offered", body: `{"tools":["loom_search","loom_profile"]}`, status: 400, code: "invalid_input", pointer: "/tools/1",
			choices: []string{"loom_search", "loom_page_read"}},
		{name: "tools repeated", body: `{"tools":["loom_search","loom_search"]}`, status: 400, code: "invalid_input", pointer: "/tools"},
		{name: "null body member", body: `{"runId":null}`, status: 400, code: "invalid_input", pointer: "/runId"},
		{name: "empty body", body: ``, status: 400, code: "invalid_input"},
		{name: "array body", body: `[]`, status: 400, code: "invalid_input"},
	}
	g := newTestGateway(t, gatewayOptions{Tools: []loom.Tool{loom.Search, loom.PageRead}, MaxRequestBytes: 1024})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "/host/v1/runs", strings.NewReader(tt.body))
			switch tt.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			g.host.ServeHTTP(rec, req)
			p := wantProblem(t, rec, tt.status, tt.code)
			if p.Pointer != tt.pointer {
				t.Errorf("pointer = %q, want %q", p.Pointer, tt.pointer)
			}
			if diff := cmp.Diff(tt.choices, p.Choices, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("choices mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Cleanup(func() {
		if runs, _ := g.store.Runs(context.Background()); len(runs) != 0 {
			t.Errorf("refused creates left %d runs in the store", len(runs))
		}
	})
}

func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{Tools: []loom.Tool{loom.Search, loom.PageRead, loom.Profile}})
	g.createRun(t, `{"runId":"a","tools":["loom_page_read","loom_search"],"ttlSeconds":600}`)
	g.clock.Advance(time.Second)
	g.createRun(t, `{"runId":"b","modelContextLabel":{"confidentiality":["`+work+`"]}}`)

	got := g.summary(t, "a")
	want := runSummary{
		RunID:             "a",
		CreatedAt:         testStart,
		ExpiresAt:         testStart.Add(600 * time.Second),
		Ceiling:           json.RawMessage(`null`),
		ModelContextLabel: json.RawMessage(`{"confidentiality":[]}`),
		Tools:             []string{"loom_page_read", "loom_search"},
	}
	if diff := cmp.Diff(want, got, jsonRawEqual); diff != "" {
		t.Errorf("GET run a mismatch (-want +got):\n%s", diff)
	}
	// A run without a tools list offers every tool the gateway offers.
	if got := g.summary(t, "b"); !cmp.Equal(got.Tools, []string{"loom_search", "loom_page_read", "loom_profile"}) ||
		compactJSON(t, got.ModelContextLabel) != `{"confidentiality":["`+work+`"]}` {
		t.Errorf("GET run b = tools %v, modelContextLabel %s", got.Tools, got.ModelContextLabel)
	}

	// The list is oldest first.
	rec := g.hostDo(http.MethodGet, "/host/v1/runs", "")
	wantStatus(t, rec, http.StatusOK)
	var list struct{ Runs []runSummary }
	decode(t, rec, &list)
	var ids []string
	for _, r := range list.Runs {
		ids = append(ids, r.RunID)
	}
	if diff := cmp.Diff([]string{"a", "b"}, ids); diff != "" {
		t.Errorf("GET runs ids mismatch (-want +got):\n%s", diff)
	}

	// Delete, then the run is gone on every route.
	rec = g.hostDo(http.MethodDelete, "/host/v1/runs/a", "")
	wantStatus(t, rec, http.StatusNoContent)
	if rec.Body.Len() != 0 {
		t.Errorf("DELETE body = %q, want empty", rec.Body)
	}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/host/v1/runs/a", ""},
		{http.MethodDelete, "/host/v1/runs/a", ""},
		{http.MethodGet, "/host/v1/runs/a/calls", ""},
		{http.MethodGet, "/host/v1/runs/a/handles", ""},
		{http.MethodGet, "/host/v1/runs/a/result", ""},
		{http.MethodPost, "/host/v1/runs/a/observations", `{"label":{"confidentiality":[]}}`},
	} {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			wantProblem(t, g.hostDo(r.method, r.path, r.body), http.StatusNotFound, "run_not_found")
		})
	}
	// An expired run is gone too.
	g.clock.Advance(2 * time.Hour)
	wantProblem(t, g.hostDo(http.MethodGet, "/host/v1/runs/b", ""), http.StatusNotFound, "run_not_found")
}

// jsonRawEqual compares json.RawMessage values as compact JSON.
var jsonRawEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
})

func TestHostRoutes(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	g.createRun(t, `{"runId":"r"}`)
	tests := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{http.MethodPut, "/host/v1/runs", `{}`, 405, "method_not_allowed"},
		{http.MethodPatch, "/host/v1/runs/r", `{}`, 405, "method_not_allowed"},
		{http.MethodPost, "/host/v1/runs/r/calls", `{}`, 405, "method_not_allowed"},
		{http.MethodGet, "/host/v1/runs/r/observations", ``, 405, "method_not_allowed"},
		{http.MethodGet, "/host/v1/nothing", ``, 404, "route_not_found"},
		{http.MethodGet, "/host/v1/runs/r/nothing", ``, 404, "route_not_found"},
		{http.MethodPost, "/v1/runs/r/loom_search", `{"query":"x"}`, 404, "route_not_found"},
		{http.MethodGet, "/host/v1/runs/bad%20id", ``, 400, "invalid_input"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			wantProblem(t, g.hostDo(tt.method, tt.path, tt.body), tt.status, tt.code)
		})
	}
}

func TestHostToken(t *testing.T) {
	t.Parallel()
	const hostToken = "host-secret-token"
	g := newTestGateway(t, gatewayOptions{HostToken: hostToken})
	g.createRun(t, `{"runId":"r"}`)
	tests := []struct {
		name, header string
		status       int
	}{
		{"missing", "", 401},
		{"wrong", "Bearer not-the-token", 401},
		{"prefix of the token", "Bearer host-secret", 401},
		{"not bearer", "Basic " + hostToken, 401},
		{"right", "Bearer " + hostToken, 200},
		{"right, lower-case scheme", "bearer " + hostToken, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/host/v1/runs", "/host/v1/runs/r", "/host/v1/runs/r/calls"} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				if tt.header != "" {
					req.Header.Set("Authorization", tt.header)
				}
				rec := httptest.NewRecorder()
				g.host.ServeHTTP(rec, req)
				if tt.status == 401 {
					wantProblem(t, rec, 401, "unauthorized")
					// RFC 6750 3.1: invalid_token when a bearer token was sent.
					want := "Bearer"
					if strings.HasPrefix(tt.header, "Bearer ") {
						want = `Bearer error="invalid_token"`
					}
					if got := rec.Header().Get("WWW-Authenticate"); got != want {
						t.Errorf("WWW-Authenticate = %q, want %q", got, want)
					}
				} else {
					wantStatus(t, rec, tt.status)
				}
			}
		})
	}
	// Without the token no route is told apart: unknown routes and wrong
	// methods answer 401 too; health needs no token.
	for _, r := range []struct{ method, path string }{{http.MethodGet, "/host/v1/nothing"}, {http.MethodPut, "/host/v1/runs"}} {
		wantProblem(t, testkit.Serve(g.host, r.method, r.path, "", ""), 401, "unauthorized")
	}
	wantStatus(t, testkit.Serve(g.host, http.MethodGet, "/healthz", "", ""), 200)
	wantProblem(t, testkit.Serve(g.host, http.MethodPost, "/host/v1/runs", "", `{}`), 401, "unauthorized")
}

func TestObservations(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	g.createRun(t, `{"runId":"r","modelContextLabel":{"confidentiality":["`+work+`"]}}`)

	observe := func(body string) *httptest.ResponseRecorder {
		return g.hostDo(http.MethodPost, "/host/v1/runs/r/observations", body)
	}
	wantStatus(t, observe(`{"label":{"confidentiality":["`+health+`",{"anyOf":["`+work+`","`+home+`"]}]}}`), http.StatusNoContent)
	wantStatus(t, observe(`{"label":{"confidentiality":["`+work+`"]}}`), http.StatusNoContent)
	wantStatus(t, observe(`{"label":{"confidentiality":[]}}`), http.StatusNoContent)

	want := `{"confidentiality":["` + work + `","` + health + `",{"anyOf":["` + work + `","` + home + `"]}]}`
	if got := compactJSON(t, g.summary(t, "r").ModelContextLabel); got != want {
		t.Errorf("modelContextLabel = %s, want %s", got, want)
	}

	p := wantProblem(t, observe(`{"label":{"confidentiality":[{"owner":"x"}]}}`), 400, "invalid_input")
	if p.Pointer != "/label/confidentiality" {
		t.Errorf("pointer = %q, want /label/confidentiality", p.Pointer)
	}
	wantProblem(t, observe(`{"label":{}}`), 400, "invalid_input")
	wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs/nope/observations", `{"label":{"confidentiality":[]}}`), 404, "run_not_found")
}

func TestRunCeilingSummary(t *testing.T) {
	t.Parallel()
	meet := func(a, b string) string {
		ca, _ := ifc.ParseConfidentiality([]byte(a))
		cb, _ := ifc.ParseConfidentiality([]byte(b))
		out, _ := json.Marshal(clausesOut(ifc.Meet(ifc.CeilingOf(ca), ifc.CeilingOf(cb)).Clauses()))
		return string(out)
	}
	tests := []struct {
		name     string
		flag     string // --max-confidentiality
		manifest string // maxConfidentiality of the create body
		want     string
	}{
		{"neither", "", "", `null`},
		{"flag only", `["` + work + `"]`, "", `["` + work + `"]`},
		{"manifest only", "", `["` + work + `"]`, `["` + work + `"]`},
		{"manifest public only", "", `[]`, `[]`},
		{"both, same atom", `["` + work + `"]`, `["` + work + `"]`, `["` + work + `"]`},
		{"both, different atoms", `["` + work + `"]`, `["` + home + `"]`, meet(`["`+work+`"]`, `["`+home+`"]`)},
		{"flag public only wins", `[]`, `["` + work + `"]`, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{MaxConfidentiality: tt.flag})
			body := `{"runId":"r"}`
			if tt.manifest != "" {
				body = `{"runId":"r","maxConfidentiality":` + tt.manifest + `}`
			}
			g.createRun(t, body)
			if got := compactJSON(t, g.summary(t, "r").Ceiling); got != tt.want {
				t.Errorf("ceiling = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	exe := filepath.Join(t.TempDir(), "loom")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, loomPath string
		status         int
		want           string
	}{
		{"loom present", exe, 200, `{"checks":{"loom":"ok","store":"ok"},"status":"ok"}`},
		{"loom missing", filepath.Join(t.TempDir(), "nope"), 503, `{"checks":{"loom":"missing","store":"ok"},"status":"unavailable"}`},
		{"not configured", "", 200, `{"checks":{"store":"ok"},"status":"ok"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newTestGateway(t, gatewayOptions{HostToken: "h"})
			g.deps.LoomPath = tt.loomPath
			rec := testkit.Serve(g.host, http.MethodGet, "/readyz", "", "") // no host token needed
			wantStatus(t, rec, tt.status)
			if got := compactJSON(t, rec.Body.Bytes()); got != tt.want {
				t.Errorf("readyz = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestServedContract(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	rec := testkit.Serve(g.agent, http.MethodGet, "/openapi.yaml", "", "")
	wantStatus(t, rec, http.StatusOK)
	if !bytes.Equal(rec.Body.Bytes(), api.Spec) {
		t.Errorf("GET /openapi.yaml does not serve api/openapi.yaml")
	}
}

// A run whose ceiling holds {"anyOf": []} is created, and its tool calls
// admit only public rows: every labelled row is withheld.
func TestEmptyAlternativeCeilingRun(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r","maxConfidentiality":[{"anyOf":[]}]}`)
	rec := g.call("r", tok, "loom_search", `{"query":"atlas"}`)
	wantStatus(t, rec, http.StatusOK)
	var res struct {
		Admitted, Withheld int
		Entries            []struct {
			Status string          `json:"status"`
			Label  json.RawMessage `json:"label"`
		}
	}
	decode(t, rec, &res)
	if res.Withheld == 0 {
		t.Fatalf("no row withheld under the empty-alternative ceiling: %s", rec.Body)
	}
	for _, e := range res.Entries {
		if e.Status == "admitted" && !strings.Contains(string(e.Label), `"confidentiality":[]`) {
			t.Errorf("a labelled row was admitted: %s", e.Label)
		}
	}
	if s := g.hostDo(http.MethodGet, "/host/v1/runs/r", ""); !strings.Contains(s.Body.String(), `"ceiling":[{"anyOf":[]}]`) {
		t.Errorf("summary does not show the ceiling: %s", s.Body)
	}
}
