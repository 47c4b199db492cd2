package tests

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// TestMethods: the 405/Allow matrix and HEAD of every route are the REST
// face's (internal/handlers: TestMethodNotAllowed, TestHead,
// TestWrongMethodOnPublicPaths); over the built binary, one
// representative on each listener (405 method_not_allowed with its Allow,
// on a HEAD with no body), HEAD answering as GET does on what the binary
// mounts beside the face (/metrics, the console), and a load balancer's
// HEAD probes and the contract's (the file's length).
func TestMethods(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "default", behaviour{Stdout: `{"hits":[]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"q"}`)

	for _, tt := range []struct {
		method, url, token, allow string
	}{
		{"GET", g.AgentURL + "/v1/runs/" + r.ID + "/loom_search", r.Token, "POST"},
		{"HEAD", g.AgentURL + "/v1/runs/" + r.ID + "/loom_search", r.Token, "POST"},
		{"DELETE", g.HostURL + "/host/v1/runs", g.HostToken, "GET, HEAD, POST"},
		{"POST", g.HostURL + "/metrics", g.HostToken, "GET, HEAD"},
	} {
		resp, body := rawRequest(t, tt.method, tt.url, tt.token, "", nil)
		if tt.method == "HEAD" {
			if resp.StatusCode != 405 || len(body) != 0 {
				t.Errorf("HEAD %s: %d %q, want 405 with no body", tt.url, resp.StatusCode, body)
			}
		} else {
			wantProblemCode(t, resp.StatusCode, body, 405, "method_not_allowed", "")
		}
		if got := resp.Header.Values("Allow"); len(got) != 1 || got[0] != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.url, got, tt.allow)
		}
	}

	for _, tt := range []struct{ base, path, token string }{
		{g.HostURL, "/host/v1/runs/" + r.ID + "/calls", g.HostToken},
		{g.HostURL, "/console/", ""},
		{g.AgentURL, "/openapi.yaml", ""},
	} {
		get, getBody := rawRequest(t, "GET", tt.base+tt.path, tt.token, "", nil)
		head, headBody := rawRequest(t, "HEAD", tt.base+tt.path, tt.token, "", nil)
		if head.StatusCode != get.StatusCode || len(headBody) != 0 {
			t.Errorf("HEAD %s: %d %q; GET: %d %.200s", tt.path, head.StatusCode, headBody, get.StatusCode, getBody)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Allow", "WWW-Authenticate", "Cache-Control"} {
			if g, hd := get.Header.Values(h), head.Header.Values(h); !slices.Equal(g, hd) {
				t.Errorf("HEAD %s: %s %q, GET %q", tt.path, h, hd, g)
			}
		}
	}
	for _, tt := range []struct{ base, path, token, contentType string }{
		{g.HostURL, "/readyz", "", "application/json"},
		{g.HostURL, "/healthz", "", "application/json"},
		{g.AgentURL, "/healthz", "", "application/json"},
		{g.AgentURL, "/openapi.yaml", "", "application/yaml"},
		{g.HostURL, "/metrics", g.HostToken, "text/plain"},
	} {
		resp, body := rawRequest(t, "HEAD", tt.base+tt.path, tt.token, "", nil)
		if resp.StatusCode != 200 || len(body) != 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) {
			t.Errorf("HEAD %s: %d %s %q, want 200 %s with no body", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.contentType)
		}
		if tt.path == "/openapi.yaml" && resp.ContentLength != int64(len(specBytes)) {
			t.Errorf("HEAD /openapi.yaml: Content-Length %d, want %d", resp.ContentLength, len(specBytes))
		}
	}
}

// TestRequestChecks: the media type is checked before the body on both
// listeners (415 for an empty body too); "." and ".." are refused as run
// ids; the host API's run_not_found says nothing of a token; every
// timestamp is UTC to the millisecond.
func TestRequestChecks(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "default", behaviour{Stdout: `{"hits":[]}`})
	r := g.newRun(t, client.CreateRunInput{})

	for _, tt := range []struct{ url, token string }{
		{g.AgentURL + "/v1/runs/" + r.ID + "/loom_profile", r.Token},
		{g.HostURL + "/host/v1/runs", g.HostToken},
	} {
		for _, ct := range []string{"text/plain", "application/json; charset=latin1"} {
			for _, body := range []string{"", " ", "{}"} {
				resp, got := rawRequest(t, "POST", tt.url, tt.token, ct, strings.NewReader(body))
				wantProblemCode(t, resp.StatusCode, got, 415, "unsupported_media_type", "")
			}
		}
		resp, got := rawRequest(t, "POST", tt.url, tt.token, "", nil)
		wantProblemCode(t, resp.StatusCode, got, 400, "invalid_input", "")
	}

	for _, id := range []string{".", ".."} {
		resp, body := rawRequest(t, "POST", g.HostURL+"/host/v1/runs", g.HostToken, "application/json", strings.NewReader(`{"runId":"`+id+`"}`))
		wantProblemCode(t, resp.StatusCode, body, 400, "invalid_input", "/runId")
	}

	resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs/nope", g.HostToken, "", nil)
	wantProblemCode(t, resp.StatusCode, body, 404, "run_not_found", "")
	if p := problemOf(t, body); p.Detail == nil || strings.Contains(strings.ToLower(*p.Detail), "token") {
		t.Errorf("run_not_found on the host API: detail %v", deref(p.Detail))
	}

	r.ok(t, "loom_search", `{"query":"q"}`)
	r.fails(t, "loom_people", `{"query":"-x"}`, 400, "invalid_input")
	stamp := regexp.MustCompile(`"(createdAt|expiresAt|startedAt)":"([^"]*)"`)
	ms := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$`)
	n := 0
	for _, path := range []string{"/host/v1/runs", "/host/v1/runs/" + r.ID, "/host/v1/runs/" + r.ID + "/calls"} {
		_, body := rawRequest(t, "GET", g.HostURL+path, g.HostToken, "", nil)
		for _, m := range stamp.FindAllStringSubmatch(string(body), -1) {
			n++
			if !ms.MatchString(m[2]) {
				t.Errorf("GET %s: %s %q, want UTC to the millisecond", path, m[1], m[2])
			}
		}
	}
	if n < 6 {
		t.Errorf("%d timestamps seen, want at least 6", n)
	}
}
