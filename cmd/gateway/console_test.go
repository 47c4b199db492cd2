package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/handlers"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/web"
)

// The console (package web) in front of the host router, the faces built
// by handlers.New: the wiring run does, tested here where the console and
// the faces meet, so that web's own tests need neither face.

const hostToken = "host-secret"

// hostServer is the host listener as cmd/gateway wires it: the console's
// public files in front of the host router, the data routes behind the
// host token; the agent listener is a fake that records what it got.
func hostServer(t *testing.T, agent http.Handler) *httptest.Server {
	t.Helper()
	ag := httptest.NewServer(agent)
	t.Cleanup(ag.Close)
	c, err := web.New(web.Options{AgentURL: ag.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := gatewayFaces(t, slog.New(slog.NewTextHandler(io.Discard, nil)), c)
	srv := httptest.NewServer(c.Public(f.Host))
	t.Cleanup(srv.Close)
	return srv
}

// gatewayFaces are both listeners' routers as cmd/gateway builds them,
// over a memory store, no loom, with the console c mounted on the host
// router.
func gatewayFaces(t *testing.T, log *slog.Logger, c *web.Console) *handlers.Faces {
	t.Helper()
	f, err := handlers.New(handlers.Config{
		Core:      gateway.Config{Store: memstore.New(memstore.Options{MaxRuns: 10}), Logger: log},
		HostToken: hostToken,
		HostExtra: c.Mount,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func do(t *testing.T, method, url string, body string, h map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}

func TestStaticIsPublicDataIsNot(t *testing.T) {
	srv := hostServer(t, http.NotFoundHandler())
	for _, p := range []string{"/console/", "/console/app.js", "/console/dom.js", "/console/toolform.js", "/console/style.css", "/console/codes.json"} {
		res, _ := do(t, "GET", srv.URL+p, "", nil)
		if res.StatusCode != 200 {
			t.Errorf("GET %s without token: %d, want 200", p, res.StatusCode)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
		if res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: missing security headers %v", p, res.Header)
		}
	}
	res, _ := do(t, "GET", srv.URL+"/console", "", nil)
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/console/" {
		t.Errorf("GET /console: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// Not files: data routes, unknown names, directories, other methods.
	for _, c := range []struct{ method, path string }{
		{"GET", "/console/contract.json"},
		{"GET", "/console/nope.js"},
		{"GET", "/console/static/app.js"},
		{"GET", "/console/../host/v1/runs"},
		{"POST", "/console/app.js"},
		{"POST", "/console/agent/v1/runs/r1/loom_search"},
		{"GET", "/host/v1/runs"},
	} {
		res, body := do(t, c.method, srv.URL+c.path, "", nil)
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without token: %d %s, want 401", c.method, c.path, res.StatusCode, body)
		}
	}
	res, body := do(t, "GET", srv.URL+"/console/contract.json", "", map[string]string{"Authorization": "Bearer " + hostToken})
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"paths"`) {
		t.Fatalf("contract.json with token: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// X-Host-Token opens the host routes too.
	res, _ = do(t, "GET", srv.URL+"/host/v1/runs", "", map[string]string{"X-Host-Token": hostToken})
	if res.StatusCode != 200 {
		t.Errorf("GET /host/v1/runs with X-Host-Token: %d", res.StatusCode)
	}
	// A wrong X-Host-Token is not rescued by a right bearer.
	res, _ = do(t, "GET", srv.URL+"/host/v1/runs", "", map[string]string{"X-Host-Token": "wrong", "Authorization": "Bearer " + hostToken})
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong X-Host-Token, right bearer: %d, want 401", res.StatusCode)
	}
}

// TestConsoleMethods: the console's files answer HEAD as GET, without the
// host token, and another method with the host token 405 with Allow, as
// every route of the host listener; a name that is no file is 404.
func TestConsoleMethods(t *testing.T) {
	srv := hostServer(t, http.NotFoundHandler())
	auth := map[string]string{"Authorization": "Bearer " + hostToken}
	for _, p := range []string{"/console/", "/console/app.js", "/console/codes.json"} {
		get, getBody := do(t, "GET", srv.URL+p, "", nil)
		head, headBody := do(t, "HEAD", srv.URL+p, "", nil)
		if head.StatusCode != 200 || headBody != "" || head.Header.Get("Content-Length") != get.Header.Get("Content-Length") || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q %v; GET: %d (%d bytes) %v", p, head.StatusCode, headBody, head.Header, get.StatusCode, len(getBody), get.Header)
		}
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			res, body := do(t, m, srv.URL+p, "", auth)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(body, `"code":"method_not_allowed"`) {
				t.Errorf("%s %s: %d Allow %q %s, want 405 with Allow GET, HEAD", m, p, res.StatusCode, res.Header.Get("Allow"), body)
			}
		}
	}
	if res, body := do(t, "POST", srv.URL+"/console/nope.js", "", auth); res.StatusCode != http.StatusNotFound {
		t.Errorf("POST /console/nope.js: %d %s, want 404", res.StatusCode, body)
	}
	if res, body := do(t, "GET", srv.URL+"/console/agent/v1/runs/r/loom_search", "", auth); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Errorf("GET on the proxy route: %d Allow %q %s, want 405 with Allow POST", res.StatusCode, res.Header.Get("Allow"), body)
	}
}

func TestProxyForwardsAsTheAgentSeesIt(t *testing.T) {
	var got *http.Request
	var gotBody string
	agent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, gotBody = r.Clone(r.Context()), string(b)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("X-Request-Id", "agent-req")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"code":"invalid_input","pointer":"/query"}`)
	})
	srv := hostServer(t, agent)
	res, body := do(t, "POST", srv.URL+"/console/agent/v1/runs/run-7/loom_search", `{"query":""}`, map[string]string{
		"X-Host-Token":  hostToken,
		"Authorization": "Bearer run-token",
		"Content-Type":  "application/json",
		"Cookie":        "a=b",
	})
	if res.StatusCode != http.StatusBadRequest || body != `{"code":"invalid_input","pointer":"/query"}` {
		t.Fatalf("answer: %d %s", res.StatusCode, body)
	}
	if ids := res.Header.Values("X-Request-Id"); len(ids) != 1 || ids[0] != "agent-req" {
		t.Errorf("X-Request-Id %v, want the agent's only", ids)
	}
	if res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("Content-Type %q", res.Header.Get("Content-Type"))
	}
	if got == nil {
		t.Fatal("the agent got nothing")
	}
	if got.Method != "POST" || got.URL.Path != "/v1/runs/run-7/loom_search" {
		t.Errorf("agent got %s %s", got.Method, got.URL.Path)
	}
	if got.Header.Get("Authorization") != "Bearer run-token" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("agent headers %v", got.Header)
	}
	for _, h := range []string{"X-Host-Token", "Cookie", "X-Forwarded-For", "Forwarded"} {
		if got.Header.Get(h) != "" {
			t.Errorf("agent got %s: %q", h, got.Header.Get(h))
		}
	}
	if gotBody != `{"query":""}` {
		t.Errorf("agent body %q", gotBody)
	}

	for _, p := range []string{"/console/agent/v1/runs/run-7/bogus", "/console/agent/v1/runs/../loom_search", "/console/agent/v1/runs/a%2Fb/loom_search"} {
		got = nil
		res, _ := do(t, "POST", srv.URL+p, `{}`, map[string]string{"X-Host-Token": hostToken, "Content-Type": "application/json"})
		if res.StatusCode != http.StatusNotFound || got != nil {
			t.Errorf("POST %s: %d (forwarded %v), want 404 and nothing forwarded", p, res.StatusCode, got != nil)
		}
	}
}

// syncBuf is a bytes.Buffer safe for the two listeners' goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProxyKeepsTheRequestID: a try-a-tool call through the proxy has one
// request id: the agent listener's request (its record, its problem)
// carries the id of the console's request on the host listener.
func TestProxyKeepsTheRequestID(t *testing.T) {
	logs := &syncBuf{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The console is made with the agent listener's address, and the
	// routers with the console: the listener is opened first, as
	// cmd/gateway opens it.
	ag := httptest.NewUnstartedServer(nil)
	t.Cleanup(ag.Close)
	c, err := web.New(web.Options{AgentURL: "http://" + ag.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	f := gatewayFaces(t, log, c)
	ag.Config.Handler = f.Agent
	ag.Start()
	srv := httptest.NewServer(c.Public(f.Host))
	t.Cleanup(srv.Close)

	auth := map[string]string{"Authorization": "Bearer " + hostToken, "Content-Type": "application/json"}
	res, body := do(t, "POST", srv.URL+"/host/v1/runs", `{"runId":"r"}`, auth)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create run: %d %s", res.StatusCode, body)
	}
	var created struct{ Token string }
	_ = json.Unmarshal([]byte(body), &created)
	// No loom is configured: the tool answers not_configured, a problem
	// with its requestId.
	res, body = do(t, "POST", srv.URL+"/console/agent/v1/runs/r/loom_profile", `{}`, map[string]string{
		"X-Host-Token": hostToken, "Authorization": "Bearer " + created.Token, "Content-Type": "application/json",
	})
	id := res.Header.Get("X-Request-Id")
	if ids := res.Header.Values("X-Request-Id"); len(ids) != 1 || id == "" {
		t.Fatalf("X-Request-Id %v (%d %s)", ids, res.StatusCode, body)
	}
	var p struct{ RequestID string }
	_ = json.Unmarshal([]byte(body), &p)
	if p.RequestID != id {
		t.Errorf("problem requestId %q, header %q", p.RequestID, id)
	}
	listeners := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["msg"] == "request" && rec["method"] == "POST" && strings.Contains(rec["route"].(string), "/runs/{runId}/") {
			listeners[rec["listener"].(string)], _ = rec["requestId"].(string)
		}
	}
	if listeners["host"] != id || listeners["agent"] != id {
		t.Errorf("request records: host %q, agent %q, want both %q", listeners["host"], listeners["agent"], id)
	}
}
