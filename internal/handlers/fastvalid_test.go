package handlers

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/go-chi/chi/v5"
)

// kinJudge decides requests as the validator's kin-openapi path does.
type kinJudge struct {
	spec   *openapi3.T
	router routers.Router
	fast   map[string]*fastOp
}

func newKinJudge(t testing.TB, tag string) *kinJudge {
	t.Helper()
	spec, err := LoadSpec(tag)
	if err != nil {
		t.Fatal(err)
	}
	// As validator does: no security requirements.
	spec.Security = nil
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			op.Security = &openapi3.SecurityRequirements{}
		}
	}
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &kinJudge{spec: spec, router: router, fast: fastOps(spec)}
}

// request builds a POST to path (a template) with runId and body, routed
// as chi routes it.
func fastRequest(path, runID, contentType, body string) *http.Request {
	u := &url.URL{Scheme: "http", Host: "gateway", Path: strings.Replace(path, "{runId}", runID, 1)}
	req := httptest.NewRequest(http.MethodPost, u.String(), strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rc := chi.NewRouteContext()
	rc.URLParams.Add("runId", runID)
	rc.RoutePatterns = []string{path}
	return req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, rc))
}

// kinAccepts reports whether kin-openapi accepts req.
func (k *kinJudge) kinAccepts(req *http.Request) bool {
	route, params, err := k.router.FindRoute(req)
	if err != nil {
		return false
	}
	err = openapi3filter.ValidateRequest(req.Context(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
			SkipSettingDefaults: true,
		},
	})
	return err == nil
}

// judge checks one request both ways: the fast check may accept only what
// kin-openapi accepts. It reports the fast check's verdict.
func (k *kinJudge) judge(t testing.TB, path, runID, contentType, body string) bool {
	op := k.fast[path]
	if op == nil {
		return false
	}
	fastOK := op.accepts(fastRequest(path, runID, contentType, body))
	if fastOK && !k.kinAccepts(fastRequest(path, runID, contentType, body)) {
		t.Fatalf("fast check accepts what kin-openapi refuses: POST %s runId %q Content-Type %q body %s", path, runID, contentType, body)
	}
	return fastOK
}

func TestFastOpsCoverAgentCalls(t *testing.T) {
	k := newKinJudge(t, "agent")
	var want []string
	for path, item := range k.spec.Paths.Map() {
		if item.Post != nil {
			want = append(want, path)
		}
	}
	slices.Sort(want)
	var got []string
	for path := range k.fast {
		got = append(got, path)
	}
	slices.Sort(got)
	if len(want) != 10 || !slices.Equal(got, want) {
		t.Fatalf("compiled %v, want every agent POST %v", got, want)
	}
}

// Values a generated body draws from: valid and invalid on purpose.
var (
	fastStrings = []string{"", "a", "atlas launch", "-flag", "é", "😀", "a\u0001b", "2026-03-01", "2026-3-01", "20260-03-01",
		"run-7", "run 7", "x/y", strings.Repeat("a", 500), strings.Repeat("a", 501), strings.Repeat("é", 500),
		strings.Repeat("😀", 250), strings.Repeat("😀", 251), "recency", "score", "summary", "card", "where", "activity",
		"all", "project", "projects", "entity", "entities", "Recency", "recency "}
	fastNumbers = []string{"0", "1", "5", "200", "201", "500", "501", "-1", "1.0", "1e2", "5.5", "-0", "1E1",
		"12345678901234567890", "999999999999999", "1e400"}
	fastOthers = []string{"null", "true", "false", "[]", "{}", `["a"]`, `{"a":null}`, `"5"`, `"true"`}
)

// genValue writes a JSON value for s, mostly of its shape.
func genValue(rng *rand.Rand, s *fastSchema, b *strings.Builder, depth int) {
	if rng.IntN(12) == 0 || depth > 4 {
		b.WriteString(fastOthers[rng.IntN(len(fastOthers))])
		return
	}
	switch s.kind {
	case 'o':
		names := make([]string, 0, len(s.props)+1)
		for name := range s.props {
			names = append(names, name)
		}
		slices.Sort(names)
		b.WriteByte('{')
		n := 0
		for _, name := range names {
			if rng.IntN(3) == 0 && !slices.Contains(s.required, name) || rng.IntN(20) == 0 {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.WriteString(strconv.Quote(name) + ":")
			genValue(rng, s.props[name], b, depth+1)
		}
		if rng.IntN(15) == 0 {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"unknown":1`)
		}
		b.WriteByte('}')
	case 's':
		pool := fastStrings
		if len(s.enum) > 0 && rng.IntN(2) == 0 {
			pool = s.enum
		}
		b.WriteString(strconv.Quote(pool[rng.IntN(len(pool))]))
	case 'i':
		b.WriteString(fastNumbers[rng.IntN(len(fastNumbers))])
	case 'b':
		b.WriteString([]string{"true", "false", "0", `"false"`}[rng.IntN(4)])
	default:
		vals := append(append([]string{}, fastOthers...), `{"nested":{"deep":[1,2,{"x":null}]}}`, `"text"`, "3.25")
		b.WriteString(vals[rng.IntN(len(vals))])
	}
}

var fastRunIDs = []string{"run-7", "a", "A.b_c-9", strings.Repeat("r", 128), strings.Repeat("r", 129), "run%207", "run 7", "é", "r:1"}

// TestFastValidatorSound: on generated requests for every compiled
// operation of both listeners, the fast check accepts nothing kin-openapi
// refuses, and it accepts most of what kin-openapi accepts (else it would
// be no shortcut).
func TestFastValidatorSound(t *testing.T) {
	for _, tag := range []string{"agent", "host"} {
		k := newKinJudge(t, tag)
		rng := rand.New(rand.NewPCG(61, 62))
		paths := make([]string, 0, len(k.fast))
		for path := range k.fast {
			paths = append(paths, path)
		}
		slices.Sort(paths)
		for _, path := range paths {
			op := k.fast[path]
			both, kinOnly := 0, 0
			for i := range 1500 {
				var b strings.Builder
				genValue(rng, op.body, &b, 0)
				body := b.String()
				runID := fastRunIDs[0]
				if i%7 == 0 {
					runID = fastRunIDs[rng.IntN(len(fastRunIDs))]
				}
				ct := "application/json"
				switch i % 23 {
				case 0:
					ct = "application/json; charset=utf-8"
				case 1:
					ct = "text/plain"
				case 2:
					body = ""
				}
				if k.judge(t, path, runID, ct, body) {
					both++
				} else if k.kinAccepts(fastRequest(path, runID, ct, body)) {
					kinOnly++
				}
			}
			t.Logf("%s %s: both accept %d, kin-openapi only %d", tag, path, both, kinOnly)
			if both == 0 || kinOnly > both/4 {
				t.Errorf("%s: the fast check accepts %d of %d requests kin-openapi accepts", path, both, both+kinOnly)
			}
		}
	}
}

// FuzzFastValidatorSound holds the fast check to kin-openapi on arbitrary
// bodies and run ids for every agent operation.
func FuzzFastValidatorSound(f *testing.F) {
	k := newKinJudge(f, "agent")
	paths := make([]string, 0, len(k.fast))
	for path := range k.fast {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	rng := rand.New(rand.NewPCG(63, 64))
	for i, path := range paths {
		for range 5 {
			var b strings.Builder
			genValue(rng, k.fast[path].body, &b, 0)
			f.Add(uint8(i), "run-7", b.String())
		}
	}
	f.Add(uint8(0), "run-7", `{"query":"a","limit":1.0}`)
	f.Add(uint8(0), "run-7", `{"query":null}`)
	f.Fuzz(func(t *testing.T, sel uint8, runID, body string) {
		if runID == "" || strings.ContainsAny(runID, "/?#") {
			return // chi would not route it here
		}
		path := paths[int(sel)%len(paths)]
		k.judge(t, path, runID, "application/json", body)
	})
}

func TestFastCheckExamples(t *testing.T) {
	spec, err := LoadSpec("agent")
	if err != nil {
		t.Fatal(err)
	}
	op := fastOps(spec)["/v1/runs/{runId}/loom_search"]
	for body, want := range map[string]bool{
		`{"query":"atlas","limit":5}`:   true,
		`{"query":"atlas","limit":5.0}`: false, // kin-openapi's to judge
		`{"query":"atlas","extra":1}`:   false,
		`{"query":null}`:                false,
	} {
		if got := op.accepts(fastRequest("/v1/runs/{runId}/loom_search", "run-7", "application/json", body)); got != want {
			t.Errorf("%s: fast check %v, want %v", body, got, want)
		}
	}
}
