package handlers

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// otherMethods are the methods a test sends to a route besides its own.
var otherMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace,
}

// TestMethodNotAllowed: every known path answers a method it does not take
// with 405 method_not_allowed and an Allow header listing the methods it
// takes (HEAD wherever GET is), on both listeners, public paths included;
// without a valid token, the agent listener still answers 401.
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	const hostToken = "host-secret"
	g := newTestGateway(t, gatewayOptions{HostToken: hostToken, HostExtra: mountMetrics})
	_, tok := g.createRun(t, `{"runId":"a"}`)

	// The host listener: every path of the contract's host operations,
	// with the methods the contract gives it, and the paths beside it.
	hostSpec, err := LoadSpec("host")
	if err != nil {
		t.Fatal(err)
	}
	hostPaths := map[string][]string{
		"/healthz": {http.MethodGet},
		"/readyz":  {http.MethodGet},
		"/metrics": {http.MethodGet},
	}
	for path, item := range hostSpec.Paths.Map() {
		for m := range item.Operations() {
			hostPaths[strings.ReplaceAll(path, "{runId}", "a")] = append(hostPaths[strings.ReplaceAll(path, "{runId}", "a")], m)
		}
	}
	if len(hostPaths) < 9 {
		t.Fatalf("%d host paths, want at least 9", len(hostPaths))
	}
	host := g.host
	for path, methods := range hostPaths {
		allow := allowOf(methods)
		for _, m := range otherMethods {
			if slices.Contains(strings.Split(allow, ", "), m) {
				continue
			}
			t.Run("host "+m+" "+path, func(t *testing.T) {
				rec := testkit.Serve(host, m, path, hostToken, "")
				wantProblem(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
				if got := rec.Header().Values("Allow"); len(got) != 1 || got[0] != allow {
					t.Errorf("Allow = %q, want %q", got, allow)
				}
			})
		}
	}

	// The agent listener: every path of the contract's agent operations
	// (the tools, describe_handle, result, the tool list, MCP) and the two
	// public paths.
	agentSpec, err := LoadSpec("agent")
	if err != nil {
		t.Fatal(err)
	}
	agentMethods := map[string][]string{"/healthz": {http.MethodGet}, "/openapi.yaml": {http.MethodGet}}
	for path, item := range agentSpec.Paths.Map() {
		for m := range item.Operations() {
			agentMethods[strings.ReplaceAll(path, "{runId}", "a")] = append(agentMethods[strings.ReplaceAll(path, "{runId}", "a")], m)
		}
	}
	if len(agentMethods) != 13 {
		t.Fatalf("%d agent paths, want 13", len(agentMethods))
	}
	for path, methods := range agentMethods {
		allow := allowOf(methods)
		for _, m := range otherMethods {
			if slices.Contains(strings.Split(allow, ", "), m) {
				continue
			}
			t.Run("agent "+m+" "+path, func(t *testing.T) {
				rec := g.agentDo(m, path, tok, "")
				wantProblem(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
				if got := rec.Header().Values("Allow"); len(got) != 1 || got[0] != allow {
					t.Errorf("Allow = %q, want %q", got, allow)
				}
				// Without a token, only GET and HEAD of the public
				// paths answer; everything else is 401.
				wantProblem(t, g.agentDo(m, path, "", ""), http.StatusUnauthorized, "unauthorized")
			})
		}
	}

	// A method chi does not know: 405 on a known path, 404 elsewhere.
	for _, tt := range []struct {
		h           http.Handler
		path, token string
		status      int
		code, allow string
	}{
		{g.agent, "/v1/runs/a/loom_search", tok, 405, "method_not_allowed", "POST"},
		{g.agent, "/openapi.yaml", tok, 405, "method_not_allowed", "GET, HEAD"},
		{g.agent, "/v1/runs/a/nothing", tok, 404, "route_not_found", ""},
		{g.agent, "/nothing", tok, 404, "route_not_found", ""},
		{g.agent, "/nothing", "", 401, "unauthorized", ""},
		{host, "/host/v1/runs", hostToken, 405, "method_not_allowed", "GET, HEAD, POST"},
		{host, "/host/v1/nothing", hostToken, 404, "route_not_found", ""},
	} {
		rec := testkit.Serve(tt.h, "BREW", tt.path, tt.token, "")
		wantProblem(t, rec, tt.status, tt.code)
		if got := rec.Header().Get("Allow"); got != tt.allow {
			t.Errorf("BREW %s: Allow = %q, want %q", tt.path, got, tt.allow)
		}
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("refused methods ran loom %d times", n)
	}
}

// allowOf is the Allow header of a route taking methods.
func allowOf(methods []string) string {
	var allow []string
	for _, m := range routeMethods {
		if slices.Contains(methods, m) || m == http.MethodHead && slices.Contains(methods, http.MethodGet) {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

// TestHead: HEAD of every GET route answers as the GET does (status,
// Content-Type, Content-Length, Allow, WWW-Authenticate), with no body and
// the same authorisation rules, through a real net/http server; the
// contract's validator checks it as the GET (a bad run id is 400 for
// both).
func TestHead(t *testing.T) {
	t.Parallel()
	const hostToken = "host-secret"
	g := newTestGateway(t, gatewayOptions{HostToken: hostToken, HostExtra: mountMetrics})
	_, tok := g.createRun(t, `{"runId":"a"}`)
	wantStatus(t, g.call("a", tok, "loom_search", `{"query":"atlas"}`), http.StatusOK)
	host := httptest.NewServer(g.host)
	t.Cleanup(host.Close)
	agent := httptest.NewServer(g.agent)
	t.Cleanup(agent.Close)

	do := func(t *testing.T, method, url, token string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	for _, tt := range []struct {
		name, base, path, token string
		status                  int
	}{
		{"host healthz", host.URL, "/healthz", "", 200},
		{"host readyz", host.URL, "/readyz", "", 0}, // 200 or 503: the same for both
		{"host metrics", host.URL, "/metrics", hostToken, 200},
		{"host metrics without token", host.URL, "/metrics", "", 401},
		{"host runs", host.URL, "/host/v1/runs", hostToken, 200},
		{"host runs without token", host.URL, "/host/v1/runs", "", 401},
		{"host run", host.URL, "/host/v1/runs/a", hostToken, 200},
		{"host calls", host.URL, "/host/v1/runs/a/calls", hostToken, 200},
		{"host handles", host.URL, "/host/v1/runs/a/handles", hostToken, 200},
		{"host result", host.URL, "/host/v1/runs/a/result", hostToken, 404},
		{"host unknown run", host.URL, "/host/v1/runs/nope", hostToken, 404},
		{"host bad run id", host.URL, "/host/v1/runs/bad!id", hostToken, 400},
		{"host unknown route", host.URL, "/host/v1/nothing", hostToken, 404},
		{"host POST-only route", host.URL, "/host/v1/runs/a/observations", hostToken, 405},
		{"agent healthz", agent.URL, "/healthz", "", 200},
		{"agent healthz with token", agent.URL, "/healthz", tok, 200},
		{"agent contract", agent.URL, "/openapi.yaml", "", 200},
		{"agent contract with token", agent.URL, "/openapi.yaml", tok, 200},
		{"agent tool route", agent.URL, "/v1/runs/a/loom_search", tok, 405},
		{"agent tool route without token", agent.URL, "/v1/runs/a/loom_search", "", 401},
		{"agent unknown route", agent.URL, "/v1/runs/a/nothing", tok, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			get, getBody := do(t, http.MethodGet, tt.base+tt.path, tt.token)
			head, headBody := do(t, http.MethodHead, tt.base+tt.path, tt.token)
			if tt.status != 0 && get.StatusCode != tt.status {
				t.Fatalf("GET %s = %d %s, want %d", tt.path, get.StatusCode, getBody, tt.status)
			}
			if head.StatusCode != get.StatusCode {
				t.Errorf("HEAD %s = %d, GET = %d", tt.path, head.StatusCode, get.StatusCode)
			}
			if len(headBody) != 0 {
				t.Errorf("HEAD %s has a body: %q", tt.path, headBody)
			}
			headers := []string{"Content-Type", "Content-Length", "Allow", "WWW-Authenticate", "Cache-Control"}
			if tt.path == "/metrics" && tt.status == 200 {
				headers = []string{"Content-Type"} // the counters move between the two
			}
			for _, h := range headers {
				if g, h2 := get.Header.Values(h), head.Header.Values(h); !slices.Equal(g, h2) {
					t.Errorf("%s: HEAD %q, GET %q", h, h2, g)
				}
			}
			if get.StatusCode == 200 && head.Header.Get("Content-Type") == "" {
				t.Errorf("HEAD %s has no Content-Type", tt.path)
			}
			if tt.path == "/openapi.yaml" && head.Header.Get("Content-Length") == "" {
				t.Errorf("HEAD /openapi.yaml has no Content-Length")
			}
		})
	}
}

// TestWrongMethodOnPublicPaths: with a valid run token, a wrong method on
// /openapi.yaml or /healthz of the agent listener is 405 as on the host
// listener, not 404.
func TestWrongMethodOnPublicPaths(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"a"}`)
	for _, tt := range []struct {
		h                   http.Handler
		method, path, token string
	}{
		{g.agent, http.MethodDelete, "/openapi.yaml", tok},
		{g.agent, http.MethodPost, "/healthz", tok},
		{g.host, http.MethodDelete, "/healthz", ""},
		{g.host, http.MethodPost, "/readyz", ""},
	} {
		rec := testkit.Serve(tt.h, tt.method, tt.path, tt.token, "")
		wantProblem(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
			t.Errorf("%s %s: Allow = %q, want GET, HEAD", tt.method, tt.path, got)
		}
	}
}

// stalledBody yields data, then fails with err: a body whose sender
// stopped (err a deadline error) or went away.
type stalledBody struct {
	data string
	err  error
}

func (b *stalledBody) Read(p []byte) (int, error) {
	if b.data != "" {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	return 0, b.err
}

// TestStalledBody: a body that does not arrive before the server's read
// deadline answers 408 request_timeout (with Connection: close) on both
// listeners; a client gone mid-body answers 499 cancelled. Neither runs
// loom or takes an output number.
func TestStalledBody(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"a"}`)
	deadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tt := range []struct {
		name   string
		h      http.Handler
		path   string
		token  string
		err    error
		status int
		code   string
	}{
		{"agent, read deadline", g.agent, "/v1/runs/a/loom_search", tok, deadline, 408, "request_timeout"},
		{"agent, deadline error", g.agent, "/v1/runs/a/loom_search", tok, os.ErrDeadlineExceeded, 408, "request_timeout"},
		{"host, read deadline", g.host, "/host/v1/runs", "", deadline, 408, "request_timeout"},
		{"agent, client gone", g.agent, "/v1/runs/a/loom_search", tok, io.ErrUnexpectedEOF, 499, "cancelled"},
		{"host, client gone", g.host, "/host/v1/runs", "", io.ErrUnexpectedEOF, 499, "cancelled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, tt.path, &stalledBody{data: `{}`, err: tt.err})
			req.Header.Set("Content-Type", "application/json")
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			wantProblem(t, rec, tt.status, tt.code)
			if got, want := rec.Header().Get("Connection"), map[bool]string{true: "close"}[tt.status == 408]; got != want {
				t.Errorf("Connection = %q, want %q", got, want)
			}
		})
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("stalled bodies ran loom %d times", n)
	}
	if s := g.summary(t, "a"); s.Calls != 0 {
		t.Errorf("stalled bodies took %d outputs", s.Calls)
	}
}

// TestContentTypeFirst: a Content-Type other than JSON (or JSON declared
// in a charset other than UTF-8) is 415 whatever the body, empty included,
// on both listeners; a missing body with no Content-Type is the
// contract's 400.
func TestContentTypeFirst(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"a"}`)
	for _, tt := range []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"text, empty body", "text/plain", "", 415, "unsupported_media_type"},
		{"text, blank body", "text/plain", " ", 415, "unsupported_media_type"},
		{"text, JSON body", "text/plain", `{}`, 415, "unsupported_media_type"},
		{"form, empty body", "application/x-www-form-urlencoded", "", 415, "unsupported_media_type"},
		{"malformed, empty body", "json", "", 415, "unsupported_media_type"},
		{"JSON in latin1", "application/json; charset=latin1", `{}`, 415, "unsupported_media_type"},
		{"JSON in latin1, empty body", "application/json; charset=iso-8859-1", "", 415, "unsupported_media_type"},
		{"JSON in latin1, then junk", "application/json; charset=latin1; junk", `{}`, 415, "unsupported_media_type"},
		{"junk, then JSON in latin1", "application/json; junk; charset=\"latin1\"", `{}`, 415, "unsupported_media_type"},
		{"JSON in utf-8, then junk", "application/json; charset=utf-8; junk", `{}`, 0, ""},
		{"no type, JSON body", "", `{}`, 415, "unsupported_media_type"},
		{"no type, empty body", "", "", 400, "invalid_input"},
		{"JSON, empty body", "application/json", "", 400, "invalid_input"},
		{"JSON, blank body", "application/json", "  ", 400, "invalid_input"},
		{"JSON", "application/json", `{}`, 0, ""},
		{"JSON in utf-8", "application/json; charset=utf-8", `{}`, 0, ""},
		{"JSON in UTF-8", "application/json;charset=UTF-8", `{}`, 0, ""},
		{"JSON with another parameter", "application/json; profile=x", `{}`, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, target := range []struct {
				h           http.Handler
				path, token string
				ok          int
			}{
				{g.agent, "/v1/runs/a/loom_profile", tok, http.StatusOK},
				{g.host, "/host/v1/runs", "", http.StatusCreated},
			} {
				req := httptest.NewRequest(http.MethodPost, target.path, strings.NewReader(tt.body))
				if tt.body == "" {
					req = httptest.NewRequest(http.MethodPost, target.path, http.NoBody)
				}
				if tt.contentType != "" {
					req.Header.Set("Content-Type", tt.contentType)
				}
				if target.token != "" {
					req.Header.Set("Authorization", "Bearer "+target.token)
				}
				rec := httptest.NewRecorder()
				target.h.ServeHTTP(rec, req)
				if tt.status == 0 {
					wantStatus(t, rec, target.ok)
					continue
				}
				wantProblem(t, rec, tt.status, tt.code)
			}
		})
	}
}

// TestRunNotFoundDetail: run_not_found says nothing of a token, since the
// host listener answers it too (with no token on the unix socket).
func TestRunNotFoundDetail(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"a"}`)
	for _, rec := range []*httptest.ResponseRecorder{
		g.hostDo(http.MethodGet, "/host/v1/runs/nope", ""),
		g.call("nope", tok, "loom_profile", `{}`),
	} {
		p := wantProblem(t, rec, http.StatusNotFound, "run_not_found")
		if p.Detail != "No such run." {
			t.Errorf("run_not_found detail = %q, want %q", p.Detail, "No such run.")
		}
	}
}

// wireTimestamp is how the gateway writes a timestamp: UTC, at most
// three fractional digits.
var wireTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$`)

// TestTimestampsToTheMillisecond: createdAt, expiresAt and startedAt are
// UTC to the millisecond, whatever the clock's zone and precision.
func TestTimestampsToTheMillisecond(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	g.clock.mu.Lock()
	g.clock.now = testStart.Add(123456789 * time.Nanosecond).In(time.FixedZone("east", 2*3600))
	g.clock.mu.Unlock()
	created := g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"a"}`)
	wantStatus(t, created, http.StatusCreated)
	var out struct{ Token string }
	decode(t, created, &out)
	g.clock.Advance(987654321 * time.Nanosecond)
	wantStatus(t, g.call("a", out.Token, "loom_search", `{"query":"atlas"}`), http.StatusOK)
	wantProblem(t, g.call("a", out.Token, "loom_people", `{"query":"-x"}`), http.StatusBadRequest, "invalid_input")

	stamp := regexp.MustCompile(`"(createdAt|expiresAt|startedAt)":"([^"]*)"`)
	seen := map[string]string{}
	for _, rec := range []*httptest.ResponseRecorder{
		created,
		g.hostDo(http.MethodGet, "/host/v1/runs", ""),
		g.hostDo(http.MethodGet, "/host/v1/runs/a", ""),
		g.hostDo(http.MethodGet, "/host/v1/runs/a/calls", ""),
	} {
		for _, m := range stamp.FindAllStringSubmatch(rec.Body.String(), -1) {
			if !wireTimestamp.MatchString(m[2]) {
				t.Errorf("%s = %q, want UTC to the millisecond", m[1], m[2])
			}
			seen[m[1]] = m[2]
		}
	}
	for name, want := range map[string]string{
		"createdAt": "2026-03-02T09:00:00.123Z",
		"expiresAt": "2026-03-02T10:00:00.123Z",
		"startedAt": "2026-03-02T09:00:01.111Z",
	} {
		if seen[name] != want {
			t.Errorf("%s = %q, want %q", name, seen[name], want)
		}
	}
}

// TestDotRunIDs: "." and "..", which the contract's pattern admits but no
// client can put in a path, are refused at creation; other ids of dots
// are ordinary.
func TestDotRunIDs(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	for _, id := range []string{".", ".."} {
		p := wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"`+id+`"}`), http.StatusBadRequest, "invalid_input")
		if p.Pointer != "/runId" {
			t.Errorf("runId %q: pointer %q, want /runId", id, p.Pointer)
		}
	}
	for _, id := range []string{"...", ".a", "a..", "-.-"} {
		gotID, tok := g.createRun(t, `{"runId":"`+id+`"}`)
		if gotID != id {
			t.Errorf("runId %q created as %q", id, gotID)
		}
		wantStatus(t, g.call(id, tok, "loom_profile", `{}`), http.StatusOK)
	}
	if rec := g.hostDo(http.MethodGet, "/host/v1/runs", ""); strings.Contains(rec.Body.String(), `"runId":"."`) || strings.Contains(rec.Body.String(), `"runId":".."`) {
		t.Errorf("a dot run exists: %s", rec.Body)
	}
}
