package handlers

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/problem"
)

// reasonCase is one input refused for one reason: through op (a tool,
// "result", "describe_handle", or "host" for POST /host/v1/runs), the
// first fault at pointer. secret, when set, is a value the body sends
// that the problem must not echo.
type reasonCase struct {
	reason  problem.Reason
	op      string
	body    string
	pointer string
	choices []string
	secret  string
}

var reasonCases = []reasonCase{
	{problem.UnknownField, "loom_search", `{"qeury":"atlas"}`, "/qeury", nil, "atlas"},
	{problem.Required, "loom_page_read", `{}`, "/target", nil, ""},
	{problem.OneOfRequired, "loom_search", `{"limit":5}`, "/query", nil, ""},
	{problem.ConflictingFields, "loom_calendar_list", `{"all":true,"from":"2024-01-01"}`, "/all", nil, "2024-01-01"},
	{problem.WrongType, "loom_search", `{"query":"atlas","limit":"5"}`, "/limit", nil, "atlas"},
	{problem.NullNotAllowed, "loom_search", `{"query":null}`, "/query", nil, ""},
	{problem.TooShort, "loom_search", `{"query":""}`, "/query", nil, ""},
	{problem.TooLong, "loom_search", `{"query":"` + strings.Repeat("q", 501) + `"}`, "/query", nil, "qqqqqqqq"},
	{problem.TooLong, "loom_search", `{"query":"` + strings.Repeat("😀", 251) + `"}`, "/query", nil, "😀"}, // 502 UTF-16 units, 251 code points: the builder's bound
	{problem.OutOfRange, "loom_search", `{"query":"atlas","limit":0}`, "/limit", nil, "atlas"},
	{problem.NotInChoices, "loom_search", `{"query":"atlas","rank":"best"}`, "/rank", []string{"recency", "score"}, "best"},
	{problem.PatternMismatch, "host", `{"runId":"a b"}`, "/runId", nil, "a b"},
	{problem.NotADate, "loom_calendar_list", `{"from":"2024/01/01"}`, "/from", nil, "2024/01/01"},
	{problem.ControlCharacter, "loom_search", `{"query":"atl\u0001as"}`, "/query", nil, "atl"},
	{problem.LeadingDash, "loom_search", `{"query":"-rf"}`, "/query", nil, "-rf"},
	{problem.NotALookup, "loom_people", `{"query":"bobby"}`, "/query", nil, "bobby"},
	{problem.DuplicateKey, "loom_search", `{"query":"atlas","query":"atlas"}`, "/query", nil, "atlas"},
	{problem.InvalidUtf8, "loom_search", "{\"query\":\"atl\xffas\"}", "/query", nil, "atl"},
	{problem.NotJson, "loom_search", `{"query":"atlas"`, "", nil, "atlas"},
	{problem.EmptyBody, "loom_search", ``, "", nil, ""},
}

// unreachable are reasons no request over HTTP can cause, with why.
var unreachable = map[problem.Reason]string{
	problem.TooDeep: "the JSON reader refuses nesting past 10,000 levels as not_json before the result writer sees it",
}

// TestEveryReason: every reason of the contract's vocabulary is answered
// for the input it names, as the first fault, at its pointer, with a
// detail that names the field and never echoes the value sent.
func TestEveryReason(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	seen := map[problem.Reason]bool{}
	for _, tt := range reasonCases {
		seen[tt.reason] = true
		t.Run(string(tt.reason)+"/"+tt.op, func(t *testing.T) {
			rec := g.call("r", tok, tt.op, tt.body)
			if tt.op == "host" {
				rec = g.hostDo(http.MethodPost, "/host/v1/runs", tt.body)
			}
			p := wantProblem(t, rec, http.StatusBadRequest, "invalid_input")
			if len(p.Errors) == 0 {
				t.Fatalf("no errors: %s", rec.Body)
			}
			f := p.Errors[0]
			if f.Reason != string(tt.reason) || f.Pointer != tt.pointer || p.Pointer != tt.pointer {
				t.Errorf("first fault %+v (pointer %q), want %s at %q; body %s", f, p.Pointer, tt.reason, tt.pointer, rec.Body)
			}
			if tt.choices != nil && !slices.Equal(f.Choices, tt.choices) {
				t.Errorf("choices %v, want %v", f.Choices, tt.choices)
			}
			if p.Detail == "" || p.Detail == "The request does not match what the operation takes." {
				t.Errorf("detail %q says nothing of the fault", p.Detail)
			}
			if tt.pointer != "" && !strings.Contains(p.Detail, tt.pointer) {
				t.Errorf("detail %q does not name %s", p.Detail, tt.pointer)
			}
			if tt.secret != "" && strings.Contains(rec.Body.String(), tt.secret) {
				t.Errorf("problem echoes the value %q: %s", tt.secret, rec.Body)
			}
		})
	}
	for _, r := range reasonVocabulary(t) {
		if !seen[r] && unreachable[r] == "" {
			t.Errorf("reason %q has no case", r)
		}
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("refused inputs ran loom %d times", n)
	}
}

// An unknown field lists the fields the tool takes; every fault found is
// listed, not only the first.
func TestUnknownFieldListsFieldsAndEveryFault(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	rec := g.call("r", tok, "loom_search", `{"qeury":"atlas","limit":"5","rank":"best","zz":1}`)
	p := wantProblem(t, rec, http.StatusBadRequest, "invalid_input")
	var got []string
	for _, f := range p.Errors {
		got = append(got, f.Pointer+" "+f.Reason)
	}
	want := []string{"/qeury unknown_field", "/zz unknown_field", "/limit wrong_type", "/rank not_in_choices"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("faults %v lack %q", got, w)
		}
	}
	if got[0] != want[0] {
		t.Errorf("first fault %q, want %q", got[0], want[0])
	}
	fields := []string{"limit", "person", "query", "rank", "since", "sources", "tz", "until"}
	if !slices.Equal(p.Errors[0].Choices, fields) {
		t.Errorf("unknown field choices %v, want %v", p.Errors[0].Choices, fields)
	}
	if !strings.Contains(p.Detail, strings.Join(fields, ", ")) {
		t.Errorf("detail %q does not say the fields the tool takes", p.Detail)
	}
	if len(p.Choices) != 0 {
		t.Errorf("top-level choices %v on an unknown field", p.Choices)
	}
}

// reasonVocabulary is the contract's InputFaultReason enum.
func reasonVocabulary(t *testing.T) []problem.Reason {
	t.Helper()
	spec, err := LoadSpec("agent")
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Components.Schemas["InputFaultReason"]
	if s == nil || s.Value == nil || len(s.Value.Enum) == 0 {
		t.Fatal("the contract has no InputFaultReason enum")
	}
	var rs []problem.Reason
	for _, e := range s.Value.Enum {
		rs = append(rs, problem.Reason(e.(string)))
	}
	return rs
}

// A misspelled tool on a run's path answers route_not_found with the
// names the run may call; elsewhere route_not_found has no choices.
func TestUnknownToolListsCallable(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r","tools":["loom_search","loom_people"]}`)
	rec := g.call("r", tok, "loom_serch", `{"query":"atlas"}`)
	p := wantProblem(t, rec, http.StatusNotFound, "route_not_found")
	want := []string{"loom_search", "loom_people", "describe_handle", "result"}
	if !slices.Equal(p.Choices, want) {
		t.Errorf("choices %v, want %v", p.Choices, want)
	}
	for _, path := range []string{"/v1/runs/r/loom_search/x", "/v1/nope"} {
		p := wantProblem(t, g.agentDo(http.MethodPost, path, tok, `{}`), http.StatusNotFound, "route_not_found")
		if len(p.Choices) != 0 {
			t.Errorf("%s: choices %v, want none", path, p.Choices)
		}
	}
}

// GET /v1/runs/{runId}/tools lists exactly what the run may call, in the
// gateway's order, then describe_handle and result; another run's token
// is 404 and none is 401.
func TestListTools(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r","tools":["loom_people","loom_search"]}`)
	_, other := g.createRun(t, `{"runId":"o"}`)
	rec := g.agentDo(http.MethodGet, "/v1/runs/r/tools", tok, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	decode(t, rec, &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema["type"] != "object" {
			t.Errorf("%s: description %q, inputSchema %v", tl.Name, tl.Description, tl.InputSchema)
		}
	}
	if want := []string{"loom_search", "loom_people", "describe_handle", "result"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	wantProblem(t, g.agentDo(http.MethodGet, "/v1/runs/r/tools", other, ""), http.StatusNotFound, "run_not_found")
	wantProblem(t, g.agentDo(http.MethodGet, "/v1/runs/r/tools", "", ""), http.StatusUnauthorized, "unauthorized")
}
