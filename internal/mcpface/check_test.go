package mcpface

import (
	"errors"
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
		{"params of another shape", `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`, "", ""},
		{"a name at the bound", `{"jsonrpc":"2.0","id":1,"method":"` + long[1:] + `"}`, "", ""},
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
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason != "" && (!ok || len(ie.Faults) != 1 || string(ie.Faults[0].Reason) != tc.reason || ie.Faults[0].Pointer != tc.pointer):
			t.Errorf("%s: %v, want %s at %q", tc.name, err, tc.reason, tc.pointer)
		}
	}
}
