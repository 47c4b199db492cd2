package problem

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/api/host"
)

// TestTableIsTheContract: the table has exactly the codes of the
// contract's Problem.code enum, each with a status, a title and a detail;
// both generated packages name the same codes.
func TestTableIsTheContract(t *testing.T) {
	spec, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ps := spec.Components.Schemas["Problem"]
	if ps == nil || ps.Value.Properties["code"] == nil {
		t.Fatal("the contract has no Problem.code")
	}
	var enum []string
	for _, v := range ps.Value.Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	slices.Sort(enum)
	var codes []string
	for _, c := range Codes() {
		codes = append(codes, string(c))
		info := Lookup(c)
		if info.Status < 400 || info.Status > 599 || info.Title == "" || info.Detail == "" {
			t.Errorf("%s: %+v", c, info)
		}
		if !c.Valid() || !host.ProblemCode(c).Valid() {
			t.Errorf("%s is not a code of the generated enums", c)
		}
	}
	if !slices.Equal(enum, codes) {
		t.Errorf("table codes %v\ncontract enum %v", codes, enum)
	}
}

// TestWrite: the headers each status asks for.
func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		p      Problem
		header string
		want   string
	}{
		{New(agent.Busy), "Retry-After", strconv.Itoa(RetryAfterSeconds)},
		{New(agent.Unauthorized), "WWW-Authenticate", "Bearer"},
		{Problem{Status: 405, Code: agent.MethodNotAllowed, Allow: []string{"GET", "HEAD"}}, "Allow", "GET, HEAD"},
		{New(agent.RequestTimeout), "Connection", "close"},
		{New(agent.CommandFailed), "Retry-After", ""},
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
	if p := New("no_such_code"); p.Status != 500 {
		t.Errorf("an unknown code has status %d, want internal_error's", p.Status)
	}
}
