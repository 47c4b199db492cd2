package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loom-gateway/gateway/internal/metrics"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// scrape returns what /metrics serves for g.
func scrape(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler(g, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// TestMetricsOnlyOnHost: /metrics, mounted through the host router's extra hook
// as cmd/gateway does, is served on the host listener behind the host
// token, and the agent listener answers 401 or 404 there, never the
// metrics.
func TestMetricsOnlyOnHost(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	g := newTestGateway(t, gatewayOptions{Registry: reg, HostToken: "host-secret", HostExtra: func(r chi.Router) {
		r.Method(http.MethodGet, "/metrics", metrics.Handler(reg, nil))
	}})
	host := g.host
	_, tok := g.createRun(t, `{"runId":"r"}`)
	wantStatus(t, g.call("r", tok, "loom_search", `{"query":"a"}`), http.StatusOK)

	rec := testkit.Serve(host, http.MethodGet, "/metrics", "host-secret", "")
	wantStatus(t, rec, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`loom_gateway_tool_calls_total{code="ok",tool="loom_search"} 1`,
		`loom_gateway_http_requests_total{listener="agent",route="/v1/runs/{runId}/loom_search",status="200"} 1`,
		`loom_gateway_runs_live 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	wantProblem(t, testkit.Serve(host, http.MethodGet, "/metrics", "", ""), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, testkit.Serve(host, http.MethodGet, "/metrics", "wrong", ""), http.StatusUnauthorized, "unauthorized")

	for _, tt := range []struct {
		token  string
		status int
		code   string
	}{{tok, 404, "route_not_found"}, {"", 401, "unauthorized"}, {"host-secret", 401, "unauthorized"}} {
		rec := testkit.Serve(g.agent, http.MethodGet, "/metrics", tt.token, "")
		wantProblem(t, rec, tt.status, tt.code)
		if strings.Contains(rec.Body.String(), "loom_gateway_") {
			t.Errorf("agent /metrics serves metrics: %s", rec.Body)
		}
	}
}

// mountMetrics mounts /metrics, over a registry of its own, as
// cmd/gateway mounts it.
func mountMetrics(r chi.Router) {
	r.Method(http.MethodGet, "/metrics", metrics.Handler(prometheus.NewRegistry(), nil))
}
