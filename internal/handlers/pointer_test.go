package handlers

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
)

// longName is a member name over maxPointerName bytes.
var longName = strings.Repeat("D", 128+1)

// TestUnknownKeyOrder: whenever an object holds a key its schema does not
// declare, the refusal names the first such key in JavaScript's Object.keys
// order (array-index names ascending, then the others as written), before
// any other violation of that object, as the argument builder does.
func TestUnknownKeyOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    loom.Tool
		body    string
		pointer string
	}{
		{"as written, not sorted", loom.Search, `{"zeta":1,"alpha":2,"query":"atlas"}`, "/zeta"},
		{"array-index names first, ascending", loom.Search, `{"b":1,"10":2,"2":3,"query":"x"}`, "/2"},
		{"before an out-of-range limit", loom.Search, `{"query":"atlas","zz":1,"limit":0}`, "/zz"},
		{"before an explicit null", loom.Search, `{"query":null,"zz":1}`, "/zz"},
		{"before a wrong enum value", loom.Search, `{"rank":"Recency","zz":1,"query":"a"}`, "/zz"},
		{"before a missing required field", loom.PageRead, `{"bogus":1}`, "/bogus"},
		{"2^32-2 is an index, 2^32-1 is not", loom.Search, `{"4294967295":1,"4294967294":2,"query":"a"}`, "/4294967294"},
		{"a leading zero is not an index", loom.Search, `{"01":1,"1":2,"query":"a"}`, "/1"},
		{"escaped in the pointer", loom.Search, `{"a/b~":1,"query":"x"}`, "/a~1b~0"},
		{"an over-long first key is withheld", loom.Profile, `{"` + longName + `":1,"short":2}`, ""},
	}
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, g.call("r", tok, string(tt.tool), tt.body), http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer || len(p.Choices) != 0 {
				t.Errorf("pointer %q choices %v, want %q and no choices", p.Pointer, p.Choices, tt.pointer)
			}
			// The argument builder, the reference's layer, names the same key.
			_, err := loom.BuildArgv(testConfig(), tt.tool, []byte(tt.body))
			ie, ok := errors.AsType[*loom.InputError](err)
			if !ok || ie.Reason != loom.ReasonUnknown {
				t.Fatalf("BuildArgv(%s) = %v, want an unknown-key refusal", tt.body, err)
			}
			if got := problem.Pointer(ie.Field); got != tt.pointer {
				t.Errorf("BuildArgv names %q, the contract layer %q", got, tt.pointer)
			}
		})
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("refused inputs ran loom %d times", n)
	}

	// Nested objects of the host API: each object's unknown keys come
	// before any other violation inside it.
	host := []struct{ name, body, pointer string }{
		{"top level, before a bad ttl", `{"zz":1,"ttlSeconds":0}`, "/zz"},
		{"top level, before a bad nested clause", `{"modelContextLabel":{"confidentiality":[42]},"zz":1}`, "/zz"},
		{"nested, before a bad clause of the same object", `{"modelContextLabel":{"confidentiality":[42],"zz":1,"aa":2}}`, "/modelContextLabel/zz"},
		{"nested, array-index names first", `{"modelContextLabel":{"b":1,"7":2,"confidentiality":[]}}`, "/modelContextLabel/7"},
	}
	for _, tt := range host {
		t.Run("host/"+tt.name, func(t *testing.T) {
			p := wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs", tt.body), http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer {
				t.Errorf("pointer %q, want %q", p.Pointer, tt.pointer)
			}
		})
	}
}

// TestPointerBounds: a pointer carries member names the agent chose, so
// none longer than maxPointerName bytes, and never more than
// maxPointerBytes in all; past either it names the nearest enclosing
// value that fits. No problem is large because of the input.
func TestPointerBounds(t *testing.T) {
	t.Parallel()
	k90 := strings.Repeat("K", 90)
	deepSyntax := `{"query":` + strings.Repeat(`{"`+k90+`":`, 10001) + "1" + strings.Repeat("}", 10002)
	deepValid := `{"value":` + strings.Repeat(`{"`+k90+`":`, 50) + `{"x":1,"x":2}` + strings.Repeat("}", 51)
	tests := []struct {
		name, op, body, pointer string
	}{
		{"nesting past 10,000 levels (a syntax error)", "loom_search", deepSyntax, ""},
		{"an over-long duplicate key", "loom_search", `{"query":"a","` + strings.Repeat("D", 500) + `":1,"` + strings.Repeat("D", 500) + `":2}`, ""},
		{"an over-long duplicate key, nested", "result", `{"value":{"a":{"` + longName + `":1,"` + longName + `":2}}}`, "/value/a"},
		{"a key of exactly the cap", "result", `{"value":{"` + longName[1:] + `":1,"` + longName[1:] + `":2}}`, "/value/" + longName[1:]},
		{"a duplicate key deep down", "result", deepValid, "/value" + strings.Repeat("/"+k90, 5)},
		{"invalid UTF-8 deep down", "result", `{"value":` + strings.Repeat(`{"`+k90+`":`, 50) + "\"\xff\"" + strings.Repeat("}", 51), "/value" + strings.Repeat("/"+k90, 5)},
		{"an over-long unknown key, nested", "host", `{"modelContextLabel":{"confidentiality":[],"` + longName + `":1}}`, "/modelContextLabel"},
	}
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := g.call("r", tok, tt.op, tt.body)
			if tt.op == "host" {
				rec = g.hostDo(http.MethodPost, "/host/v1/runs", tt.body)
			}
			p := wantProblem(t, rec, http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer {
				t.Errorf("pointer %q, want %q", p.Pointer, tt.pointer)
			}
			if rec.Body.Len() > 2048 { // the pointer twice (pointer, errors[0]) within its 512 bytes
				t.Errorf("problem of %d bytes for a body of %d", rec.Body.Len(), len(tt.body))
			}
		})
	}
}

func TestBoundPointer(t *testing.T) {
	t.Parallel()
	seg := strings.Repeat("k", 100)
	tests := []struct{ in, want string }{
		{"", ""},
		{"/query", "/query"},
		{"runId", "runId"},
		{longName, ""},
		{"/a~1b~0c", "/a~1b~0c"},
		{"/a/" + longName + "/b", "/a"},
		{"/" + strings.Repeat(seg+"/", 10) + "x", strings.Repeat("/"+seg, 5)}, // 5 segments of 101 bytes fit in 512
		{"/" + strings.Repeat("~1", 128), "/" + strings.Repeat("~1", 128)},    // the name cap counts the name, not its escaping
		{"/" + strings.Repeat("~1", 129), ""},
	}
	for _, tt := range tests {
		if got := problem.BoundPointer(tt.in); got != tt.want {
			t.Errorf("boundPointer(%.40q…) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSyntaxErrorsNameNoMember: a body that is not JSON is refused as a
// whole, with no pointer; JSON the gateway refuses although JSON.parse
// takes it (a duplicate key, invalid UTF-8, a lone surrogate escape) is
// refused at the member it is in.
func TestSyntaxErrorsNameNoMember(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, op, body, pointer string }{
		{"truncated after a name", "loom_search", `{"query":`, ""},
		{"truncated in a string", "loom_search", `{"query":"atl`, ""},
		{"invalid literal", "loom_search", `{"query":tru}`, ""},
		{"trailing comma", "loom_search", `{"query":"a",}`, ""},
		{"unclosed array", "result", `{"value":[1,2}`, ""},
		{"trailing data", "loom_search", `{"query":"a"} x`, ""},
		{"a second value", "loom_search", `{"query":"a"}{"query":"b"}`, ""},
		{"byte order mark", "loom_search", "\ufeff{\"query\":\"a\"}", ""},
		{"lone surrogate and trailing data", "loom_search", `{"query":"\ud800"} x`, ""},
		{"duplicate key", "loom_search", `{"query":"a","query":"b"}`, "/query"},
		{"duplicate key, nested", "result", `{"value":{"a":[0,{"b":1,"b":2}]}}`, "/value/a/1/b"},
		{"invalid UTF-8", "loom_search", "{\"query\":\"a\xffb\"}", "/query"},
		{"invalid UTF-8 in a name", "loom_search", "{\"query\":\"a\",\"\xff\":1}", ""},
		{"lone high surrogate", "loom_search", `{"query":"\ud800"}`, "/query"},
		{"lone low surrogate", "loom_search", `{"query":"a\udc00"}`, "/query"},
		{"surrogates reversed", "loom_search", `{"query":"\ude00\ud83d"}`, "/query"},
		{"lone surrogate in a name", "loom_search", `{"query":"a","\ud800":1}`, ""},
		{"lone surrogate in a result value", "result", `{"value":{"a":"\ud800"}}`, "/value/a"},
	}
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, g.call("r", tok, tt.op, tt.body), http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer {
				t.Errorf("pointer %q, want %q", p.Pointer, tt.pointer)
			}
		})
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("refused inputs ran loom %d times", n)
	}
	// A surrogate pair, escaped, is one character and goes through.
	checkResult(t, g.call("r", tok, "loom_search", `{"query":"\ud83d\ude00"}`).Body.Bytes(), "r:loom_search:1", "search", true)
	if calls := g.fake.Calls(); len(calls) != 1 || len(calls[0].Argv) < 3 || calls[0].Argv[2] != "😀" {
		t.Errorf("escaped surrogate pair: loom calls %v, want one with the query 😀", calls)
	}
}
