package loomref

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/loom"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name     string
		tool     loom.Tool
		payload  string
		rows     []string
		envelope string // "" means nil
	}{
		{
			name:     "search",
			tool:     loom.Search,
			payload:  `{"schemaVersion":1,"query":"atlas","hits":[{"id":"h1","n":1.50},{"id":"h2"}],"source_status":{"mail":"ok"},"warnings":[],"truncated":false,"filters":{}}`,
			rows:     []string{`{"id":"h1","n":1.50}`, `{"id":"h2"}`},
			envelope: `{"query":"atlas","source_status":{"mail":"ok"},"warnings":[],"truncated":false}`,
		},
		{
			name:     "search envelope in payload order, null kept",
			tool:     loom.Search,
			payload:  `{"truncated":null,"hits":[],"warnings":["w"],"query":"q"}`,
			rows:     nil,
			envelope: `{"truncated":null,"warnings":["w"],"query":"q"}`,
		},
		{
			name:     "search no envelope keys",
			tool:     loom.Search,
			payload:  `{"hits":[1,"x",null]}`,
			rows:     []string{`1`, `"x"`, `null`},
			envelope: `{}`,
		},
		{
			name:     "search whitespace kept inside values",
			tool:     loom.Search,
			payload:  "{ \"hits\" : [ {\"a\" : 1} , [ 2 ] ] , \"query\" : \"q\" }",
			rows:     []string{`{"a" : 1}`, `[ 2 ]`},
			envelope: `{"query":"q"}`,
		},
		{
			name:     "search duplicate hits: last wins",
			tool:     loom.Search,
			payload:  `{"hits":[{"id":1}],"hits":[{"id":2}]}`,
			rows:     []string{`{"id":2}`},
			envelope: `{}`,
		},
		{
			name:     "search duplicate envelope key: first place, last value",
			tool:     loom.Search,
			payload:  `{"query":"a","warnings":[],"query":"b","hits":[]}`,
			rows:     nil,
			envelope: `{"query":"b","warnings":[]}`,
		},
		{
			name:     "page discover",
			tool:     loom.PageDiscover,
			payload:  `{"ok":true,"totalPages":12,"pages":[{"path":"Projects/Atlas"}],"omittedViews":3,"concise":true}`,
			rows:     []string{`{"path":"Projects/Atlas"}`},
			envelope: `{"totalPages":12,"omittedViews":3}`,
		},
		{
			name:     "page discover empty",
			tool:     loom.PageDiscover,
			payload:  `{"pages":[]}`,
			envelope: `{}`,
		},
		{
			name:    "calendar",
			tool:    loom.CalendarList,
			payload: ` [{"id":"e1"}, {"id":"e2"}, 7] `,
			rows:    []string{`{"id":"e1"}`, `{"id":"e2"}`, `7`},
		},
		{
			name:    "calendar empty",
			tool:    loom.CalendarList,
			payload: `[]`,
		},
		{
			name:    "page inspect whole object",
			tool:    loom.PageInspect,
			payload: `{"ok":true,"path":"Projects/Atlas","ifc":{"confidentiality":["w"]}}`,
			rows:    []string{`{"ok":true,"path":"Projects/Atlas","ifc":{"confidentiality":["w"]}}`},
		},
		{name: "page read", tool: loom.PageRead, payload: `{"body":"x"}`, rows: []string{`{"body":"x"}`}},
		{name: "people", tool: loom.People, payload: `{"name":"Ada"}`, rows: []string{`{"name":"Ada"}`}},
		{name: "context", tool: loom.Context, payload: `{}`, rows: []string{`{}`}},
		{name: "profile fallback", tool: loom.Profile, payload: `{"hasProfile":false}`, rows: []string{`{"hasProfile":false}`}},
		{name: "duplicates inside a row kept for ifc", tool: loom.People, payload: `{"a":1,"a":2}`, rows: []string{`{"a":1,"a":2}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, env, err := Split(tt.tool, []byte(tt.payload))
			if err != nil {
				t.Fatalf("Split: %v", err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, string(r))
			}
			if diff := cmp.Diff(tt.rows, got); diff != "" {
				t.Errorf("rows mismatch (-want +got):\n%s", diff)
			}
			if tt.envelope == "" {
				if env != nil {
					t.Errorf("envelope = %s, want nil", env)
				}
			} else if string(env) != tt.envelope {
				t.Errorf("envelope = %s, want %s", env, tt.envelope)
			}
			if env != nil && !jsontext.Value(env).IsValid() {
				t.Errorf("envelope %s is not valid JSON", env)
			}
		})
	}
}

func TestSplitMalformed(t *testing.T) {
	tests := []struct {
		name    string
		tool    loom.Tool
		payload string
	}{
		{"search array", loom.Search, `[]`},
		{"search null", loom.Search, `null`},
		{"search scalar", loom.Search, `1`},
		{"search no hits", loom.Search, `{"query":"q"}`},
		{"search hits object", loom.Search, `{"hits":{}}`},
		{"search hits null", loom.Search, `{"hits":null}`},
		{"search last hits not array", loom.Search, `{"hits":[],"hits":null}`},
		{"discover no pages", loom.PageDiscover, `{"hits":[]}`},
		{"discover pages string", loom.PageDiscover, `{"pages":"x"}`},
		{"calendar object", loom.CalendarList, `{"events":[]}`},
		{"calendar null", loom.CalendarList, `null`},
		{"inspect array", loom.PageInspect, `[{}]`},
		{"read null", loom.PageRead, `null`},
		{"people string", loom.People, `"Ada"`},
		{"context number", loom.Context, `1`},
		{"profile array", loom.Profile, `[]`},
		{"not JSON", loom.PageRead, `{`},
		{"empty", loom.PageRead, ``},
		{"two documents", loom.PageRead, `{} {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, env, err := Split(tt.tool, []byte(tt.payload))
			if !errors.Is(err, loom.ErrMalformedPayload) {
				t.Fatalf("Split = %q, %s, %v; want ErrMalformedPayload", rows, env, err)
			}
		})
	}
	if _, _, err := Split("loom_hosted", []byte(`{}`)); !errors.Is(err, loom.ErrUnknownTool) {
		t.Errorf("Split(unknown tool) = %v, want ErrUnknownTool", err)
	}
}
