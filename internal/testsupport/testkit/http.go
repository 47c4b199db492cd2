package testkit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/problem"
)

// Serve sends one request through h, as an agent or a host would: a
// non-empty body as application/json, a non-empty token as a bearer
// token.
func Serve(h http.Handler, method, path, token, body string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Problem is a problem answer as a client reads it.
type Problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Code     string   `json:"code"`
	OutputID string   `json:"outputId"`
	HostCode string   `json:"hostCode"`
	Pointer  string   `json:"pointer"`
	Choices  []string `json:"choices"`
	Errors   []struct {
		Pointer string   `json:"pointer"`
		Reason  string   `json:"reason"`
		Choices []string `json:"choices"`
	} `json:"errors"`
	RequestID string `json:"requestId"`
}

// WantProblem fails the test unless an answer of status with body is a
// problem of wantStatus and code, with the error table's title and
// detail (for invalid_input: a detail, the faults listed, the first at
// the problem's pointer); it returns the problem.
func WantProblem(t testing.TB, status int, body []byte, wantStatus int, code string) Problem {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status = %d, want %d %s; body %s", status, wantStatus, code, body)
	}
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem %d %q: %v", status, body, err)
	}
	if p.Code != code || p.Status != wantStatus {
		t.Fatalf("problem = %s/%d, want %s/%d; body %s", p.Code, p.Status, code, wantStatus, body)
	}
	info := problem.Lookup(problem.Code(code))
	if code == string(problem.InvalidInput) {
		if p.Title != info.Title || p.Detail == "" || len(p.Errors) == 0 || p.Errors[0].Pointer != p.Pointer {
			t.Errorf("invalid_input: title %q, detail %q, errors %+v, pointer %q", p.Title, p.Detail, p.Errors, p.Pointer)
		}
	} else if p.Title != info.Title || p.Detail != info.Detail {
		t.Errorf("problem text = %q / %q, want the fixed text of %s", p.Title, p.Detail, code)
	}
	return p
}

// ObjectKeys returns the member names of the JSON object b, in order.
func ObjectKeys(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %.200s", b)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// ProcessCPU is the CPU time, user and system, this process has used.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
