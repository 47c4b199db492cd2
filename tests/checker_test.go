package tests

import (
	"net/http"
	"strings"
	"testing"
)

// TestContractChecker shows that the response check every request of the
// suite goes through can fail: each malformed answer below is refused,
// each well-formed one accepted.
func TestContractChecker(t *testing.T) {
	t.Parallel()
	const result = `{"outputId":"r:loom_search:1","status":"ok","kind":"search","notice":"n","admitted":0,"withheld":0,"omitted":0,"truncated":false,"envelope":{},"entries":[]}`
	const problem = `{"type":"https://loom-gateway.dev/problems/busy","title":"Busy","status":429,"code":"busy"}`
	cases := []struct {
		name, method, path string
		status             int
		contentType, body  string
		ok                 bool
	}{
		{"tool result", "POST", "/v1/runs/r/loom_search", 200, "application/json", result, true},
		{"tool result without entries", "POST", "/v1/runs/r/loom_search", 200, "application/json", strings.Replace(result, `,"entries":[]`, "", 1), false},
		{"tool result with a bad handle", "POST", "/v1/runs/r/loom_search", 200, "application/json", strings.Replace(result, `"entries":[]`, `"entries":[{"status":"admitted","handle":"cfh:v:00000"}]`, 1), false},
		{"tool result with an unknown kind", "POST", "/v1/runs/r/loom_search", 200, "application/json", strings.Replace(result, `"search"`, `"write"`, 1), false},
		{"tool result as text", "POST", "/v1/runs/r/loom_search", 200, "text/plain", result, false},
		{"problem", "POST", "/v1/runs/r/loom_search", 429, "application/problem+json", problem, true},
		{"problem as application/json", "POST", "/v1/runs/r/loom_search", 429, "application/json", problem, false},
		{"problem with another status", "POST", "/v1/runs/r/loom_search", 503, "application/problem+json", problem, false},
		{"problem with an unknown code", "POST", "/v1/runs/r/loom_search", 429, "application/problem+json", strings.ReplaceAll(problem, "busy", "sleepy"), false},
		{"problem without title", "POST", "/v1/runs/r/loom_search", 429, "application/problem+json", strings.Replace(problem, `"title":"Busy",`, "", 1), false},
		{"undeclared status without default", "GET", "/healthz", 500, "application/json", `{"status":"ok"}`, false},
		{"created run", "POST", "/host/v1/runs", 201, "application/json", `{"runId":"r","token":"t","expiresAt":"2026-12-02T13:00:00Z"}`, true},
		{"created run with a bad time", "POST", "/host/v1/runs", 201, "application/json", `{"runId":"r","token":"t","expiresAt":"tomorrow"}`, false},
		{"route outside the contract", "GET", "/secrets", 200, "application/json", `{}`, false},
		{"problem outside the contract", "GET", "/secrets", 404, "application/problem+json", strings.NewReplacer("busy", "route_not_found", "429", "404").Replace(problem), true},
		{"204 with a body", "DELETE", "/host/v1/runs/r", 204, "", "x", false},
		{"405 without Allow", "GET", "/v1/runs/r/loom_search", 405, "application/problem+json", strings.NewReplacer("busy", "method_not_allowed", "429", "405").Replace(problem), false},
		{"HEAD of a GET route", "HEAD", "/host/v1/runs", 200, "application/json", "", true},
		{"HEAD of a GET route as text", "HEAD", "/host/v1/runs", 200, "text/plain", "", false},
		{"HEAD with a body", "HEAD", "/host/v1/runs", 200, "application/json", `{"runs":[]}`, false},
		{"HEAD with an undeclared status", "HEAD", "/healthz", 500, "application/json", "", false},
		{"HEAD of a problem", "HEAD", "/host/v1/runs/r", 404, "application/problem+json", "", true},
		{"HEAD of a problem as JSON", "HEAD", "/host/v1/runs/r", 404, "application/json", "", false},
		{"HEAD of a POST route", "HEAD", "/v1/runs/r/loom_search", 200, "application/json", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tc.method, "http://127.0.0.1:1"+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
			if tc.contentType != "" {
				resp.Header.Set("Content-Type", tc.contentType)
			}
			err = checkResponse(req, resp, []byte(tc.body))
			if tc.ok && err != nil {
				t.Errorf("refused a valid answer: %v", err)
			}
			if !tc.ok && err == nil {
				t.Errorf("accepted an answer the contract does not allow")
			}
		})
	}
}
