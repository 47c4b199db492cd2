package problemhttp

import (
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/loom-gateway/gateway/internal/problem"
)

// TestWrite: the headers each status asks for.
func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		p      problem.Problem
		header string
		want   string
	}{
		{problem.New(problem.Busy), "Retry-After", strconv.Itoa(problem.RetryAfterSeconds)},
		{problem.New(problem.Unauthorized), "WWW-Authenticate", "Bearer"},
		{problem.Problem{Status: 405, Code: problem.MethodNotAllowed, Allow: []string{"GET", "HEAD"}}, "Allow", "GET, HEAD"},
		{problem.New(problem.RequestTimeout), "Connection", "close"},
		{problem.New(problem.CommandFailed), "Retry-After", ""},
	} {
		rec := httptest.NewRecorder()
		Write(rec, tt.p)
		if got := rec.Header().Get(tt.header); got != tt.want {
			t.Errorf("%s: %s = %q, want %q", tt.p.Code, tt.header, got, tt.want)
		}
		if rec.Code != tt.p.Status || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: status %d, Content-Type %q", tt.p.Code, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	if p := problem.New("no_such_code"); p.Status != 500 {
		t.Errorf("an unknown code has status %d, want internal_error's", p.Status)
	}
}
