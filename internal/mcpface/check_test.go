package mcpface

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/problem"
)

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/*;q=0.9, text/*"}, true},
		{[]string{"APPLICATION/JSON; charset=utf-8, Text/Event-Stream"}, true},
		{[]string{"application/json"}, false},
		{[]string{"text/event-stream"}, false},
		{nil, false},
	} {
		if got := accepts(tc.values); got != tc.want {
			t.Errorf("accepts(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}

func TestCheckMessage(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	for _, tc := range []struct {
		name, body, pointer, reason string
	}{
		{"a request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "", ""},
		{"a tool call", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"loom_search","arguments":{}}}`, "", ""},
		{"params of another shape", `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`, "/params", "wrong_type"},
		{"params null", `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, "", ""},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", ""},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "/id", "required"},
		{"a request without an id", `{"jsonrpc":"2.0","method":"tools/list"}`, "/id", "required"},
		{"a notification with an id", `{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}`, "/id", "unknown_field"},
		{"an unknown notification", `{"jsonrpc":"2.0","method":"notifications/x"}`, "/method", "not_in_choices"},
		{"an unknown method", `{"jsonrpc":"2.0","id":1,"method":"rt/unknown"}`, "", "-32601"},
		{"no params where needed", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "/params", "required"},
		{"null params where needed", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, "/params", "required"},
		{"a negative id", `{"jsonrpc":"2.0","id":-1,"method":"ping"}`, "", ""},
		{"no version tag", `{"id":1,"method":"ping"}`, "/jsonrpc", "required"},
		{"an empty object", `{}`, "/jsonrpc", "required"},
		{"version tag 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, "/jsonrpc", "not_in_choices"},
		{"version tag a number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`, "/jsonrpc", "not_in_choices"},
		{"a long version tag", `{"jsonrpc":"` + long + long + `","id":1,"method":"ping"}`, "/jsonrpc", "not_in_choices"},
		{"an id true", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, "/id", "wrong_type"},
		{"an id object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, "/id", "wrong_type"},
		{"an id array", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "/id", "wrong_type"},
		{"a response", `{"jsonrpc":"2.0","id":1,"result":{}}`, "/method", "required"},
		{"a method a number", `{"jsonrpc":"2.0","id":1,"method":5}`, "/method", "wrong_type"},
		{"a method null", `{"jsonrpc":"2.0","id":1,"method":null}`, "/method", "wrong_type"},
		{"a long escaped method", `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat(`\u0078`, MaxNameBytes+1) + `"}`, "/method", "too_long"},
		{"a name at the bound", `{"jsonrpc":"2.0","id":1,"method":"` + long[1:] + `"}`, "", "-32601"},
		{"empty", "  ", "", "empty_body"},
		{"a batch", ` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "", "wrong_type"},
		{"a string", `"ping"`, "", "wrong_type"},
		{"a long method", `{"jsonrpc":"2.0","id":1,"method":"` + long + `"}`, "/method", "too_long"},
		{"a long id", `{"jsonrpc":"2.0","id":"` + long + `","method":"ping"}`, "/id", "too_long"},
		{"a long tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + long + `"}}`, "/params/name", "too_long"},
		{"a long uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + long + `"}}`, "/params/uri", "too_long"},
	} {
		err := checkMessage([]byte(tc.body))
		ie, ok := errors.AsType[*problem.InputError](err)
		if re, isRPC := errors.AsType[*rpcRefusal](err); isRPC || strings.HasPrefix(tc.reason, "-") {
			if !isRPC || strconv.FormatInt(re.code, 10) != tc.reason {
				t.Errorf("%s: %v, want JSON-RPC %s", tc.name, err, tc.reason)
			}
			continue
		}
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason != "" && (!ok || len(ie.Faults) != 1 || string(ie.Faults[0].Reason) != tc.reason || ie.Faults[0].Pointer != tc.pointer):
			t.Errorf("%s: %v, want %s at %q", tc.name, err, tc.reason, tc.pointer)
		}
	}
}
