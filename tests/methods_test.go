package tests

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// allMethods are the methods sent to every path.
var allMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// allowOf is the Allow header of a path taking methods: in allMethods'
// order, HEAD wherever GET is.
func allowOf(methods []string) string {
	var allow []string
	for _, m := range allMethods {
		if slices.Contains(methods, m) || m == "HEAD" && slices.Contains(methods, "GET") {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

// TestMethods: on both listeners of the built binary, every path of the
// contract (and /metrics) answers a method it does not take with 405
// method_not_allowed and an Allow header naming the methods it takes
// (RFC 9110 15.5.6), the agent's public paths included; HEAD answers as
// GET does, with no body (RFC 9110 9.3.2), under the same authorisation.
func TestMethods(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "default", behaviour{Stdout: `{"hits":[]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"q"}`)

	// The methods of every path, by listener.
	agentPaths := map[string][]string{"/healthz": {"GET"}}
	hostPaths := map[string][]string{"/healthz": {"GET"}, "/readyz": {"GET"}, "/metrics": {"GET"}}
	for path, item := range contract.Paths.Map() {
		for method, op := range item.Operations() {
			p := strings.ReplaceAll(path, "{runId}", r.ID)
			switch {
			case hasTag(op.Tags, "agent"), p == "/openapi.yaml":
				agentPaths[p] = append(agentPaths[p], method)
			case hasTag(op.Tags, "host"):
				hostPaths[p] = append(hostPaths[p], method)
			}
		}
	}
	if len(agentPaths) != 13 || len(hostPaths) < 9 {
		t.Fatalf("%d agent and %d host paths, want 13 and at least 9", len(agentPaths), len(hostPaths))
	}

	for _, l := range []struct {
		name, base, token string
		paths             map[string][]string
	}{
		{"agent", g.AgentURL, r.Token, agentPaths},
		{"host", g.HostURL, g.HostToken, hostPaths},
	} {
		for path, methods := range l.paths {
			allow := allowOf(methods)
			t.Run(l.name+" "+path, func(t *testing.T) {
				t.Parallel()
				for _, m := range allMethods {
					if slices.Contains(strings.Split(allow, ", "), m) {
						continue
					}
					resp, body := rawRequest(t, m, l.base+path, l.token, "", nil)
					if m == "HEAD" {
						if resp.StatusCode != 405 || len(body) != 0 {
							t.Errorf("HEAD %s: %d %q, want 405 with no body", path, resp.StatusCode, body)
						}
					} else {
						wantProblemCode(t, resp.StatusCode, body, 405, "method_not_allowed", "")
					}
					if got := resp.Header.Values("Allow"); len(got) != 1 || got[0] != allow {
						t.Errorf("%s %s: Allow %q, want %q", m, path, got, allow)
					}
				}
			})
		}
	}

	t.Run("HEAD as GET", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct{ base, path, token string }{
			{g.HostURL, "/healthz", ""},
			{g.HostURL, "/readyz", ""},
			{g.HostURL, "/host/v1/runs", g.HostToken},
			{g.HostURL, "/host/v1/runs", ""}, // 401 for both
			{g.HostURL, "/host/v1/runs/" + r.ID, g.HostToken},
			{g.HostURL, "/host/v1/runs/" + r.ID + "/calls", g.HostToken},
			{g.HostURL, "/host/v1/runs/" + r.ID + "/handles", g.HostToken},
			{g.HostURL, "/host/v1/runs/" + r.ID + "/result", g.HostToken}, // 404 result_not_found
			{g.HostURL, "/host/v1/runs/nope", g.HostToken},                // 404 run_not_found
			{g.HostURL, "/host/v1/runs/bad!id", g.HostToken},              // 400 invalid_input
			{g.HostURL, "/console/", ""},
			{g.AgentURL, "/healthz", ""},
			{g.AgentURL, "/openapi.yaml", ""},
			{g.AgentURL, "/openapi.yaml", r.Token},
			{g.AgentURL, "/v1/runs/" + r.ID + "/loom_search", ""},      // 401 for both
			{g.AgentURL, "/v1/runs/" + r.ID + "/nothing", r.Token},     // 404 for both
			{g.AgentURL, "/v1/runs/" + r.ID + "/loom_search", r.Token}, // 405 for both
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
		// A load balancer's probe, the contract and the metrics.
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
	})

	t.Run("agent authorisation", func(t *testing.T) {
		t.Parallel()
		// Public: GET and HEAD of /healthz and /openapi.yaml only.
		for _, path := range []string{"/healthz", "/openapi.yaml"} {
			for _, m := range []string{"POST", "DELETE", "PUT"} {
				resp, body := rawRequest(t, m, g.AgentURL+path, "", "", nil)
				wantProblemCode(t, resp.StatusCode, body, 401, "unauthorized", "")
			}
		}
		resp, body := rawRequest(t, "DELETE", g.AgentURL+"/openapi.yaml", r.Token, "", nil)
		wantProblemCode(t, resp.StatusCode, body, 405, "method_not_allowed", "")
		resp, body = rawRequest(t, "POST", g.AgentURL+"/healthz", r.Token, "", nil)
		wantProblemCode(t, resp.StatusCode, body, 405, "method_not_allowed", "")
		resp, body = rawRequest(t, "DELETE", g.HostURL+"/healthz", g.HostToken, "", nil)
		wantProblemCode(t, resp.StatusCode, body, 405, "method_not_allowed", "")
	})
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
