package tooldef

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/loom-gateway/gateway/api"
)

// Every agent POST operation of the contract has a definition, with a
// description for a model and an input schema.
func TestEveryAgentOperationIsDefined(t *testing.T) {
	set, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"describe_handle", "loom_calendar_list", "loom_context", "loom_page_discover", "loom_page_inspect",
		"loom_page_read", "loom_people", "loom_profile", "loom_search", "result"}
	if got := set.Names(); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for _, n := range want {
		tool, _ := set.Tool(n)
		if len(tool.Description) < 80 || !strings.Contains(tool.Description, "cfh:v:") {
			t.Errorf("%s: description %q is not one a model can act on (says nothing of handles)", n, tool.Description)
		}
		if strings.HasPrefix(n, "loom_") && !strings.Contains(tool.Description, "untrusted") {
			t.Errorf("%s: description does not say rows are untrusted", n)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", n)
		}
	}
}

// The schemas are plain JSON Schema: no reference, no OpenAPI-only
// keyword anywhere, and the same constraints as the contract's.
func TestSchemasArePlainJSONSchema(t *testing.T) {
	set, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range set.Names() {
		tool, _ := set.Tool(n)
		for _, raw := range []json.RawMessage{tool.InputSchema, tool.OutputSchema} {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			walk(t, n, v)
		}
	}
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	search := doc.Components.Schemas["SearchInput"].Value
	tool, _ := set.Tool("loom_search")
	var in struct {
		Type                 string `json:"type"`
		AdditionalProperties *bool  `json:"additionalProperties"`
		Properties           map[string]struct {
			Type      string   `json:"type"`
			Format    string   `json:"format"`
			MaxLength *int     `json:"maxLength"`
			Minimum   *float64 `json:"minimum"`
			Maximum   *float64 `json:"maximum"`
			Enum      []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if in.Type != "object" || in.AdditionalProperties == nil || *in.AdditionalProperties || len(in.Properties) != len(search.Properties) {
		t.Fatalf("loom_search input %s does not match SearchInput", tool.InputSchema)
	}
	q, l, r := in.Properties["query"], in.Properties["limit"], in.Properties["rank"]
	if q.Type != "string" || q.MaxLength == nil || *q.MaxLength != 500 {
		t.Errorf("query: %+v, want the inlined Text (a string of at most 500)", q)
	}
	if l.Type != "integer" || l.Format != "" || *l.Minimum != 1 || *l.Maximum != 200 {
		t.Errorf("limit: %+v, want an integer 1..200 without format int64", l)
	}
	if !slices.Equal(r.Enum, []string{"recency", "score"}) {
		t.Errorf("rank: %+v", r)
	}
}

func walk(t *testing.T, tool string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			switch {
			case k == "$ref", k == "nullable", k == "example", k == "discriminator", strings.HasPrefix(k, "x-"):
				t.Errorf("%s: schema keeps the OpenAPI keyword %q", tool, k)
			case k == "format" && (c == "int64" || c == "int32"):
				t.Errorf("%s: schema keeps format %v", tool, c)
			}
			if k != "properties" {
				walk(t, tool, c)
				continue
			}
			for _, p := range c.(map[string]any) {
				walk(t, tool, p)
			}
		}
	case []any:
		for _, c := range v {
			walk(t, tool, c)
		}
	}
}

// nullable becomes a null type.
func TestNullable(t *testing.T) {
	s := &openapi3.Schema{Type: &openapi3.Types{"string"}, Nullable: true, Format: "int64"}
	got, _ := json.Marshal(Plain(s))
	if string(got) != `{"type":["string","null"]}` {
		t.Errorf("Plain = %s", got)
	}
}

// TestHandleLifetime: every tool that mints handles, and describe_handle,
// says that a handle lasts as long as its run.
func TestHandleLifetime(t *testing.T) {
	set, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range set.Names() {
		tool, _ := set.Tool(name)
		if name == "result" {
			continue
		}
		want := "which lasts as long as this run"
		if name == "describe_handle" {
			want = "A handle lasts as long as the run that holds it: for a known one, expiresAt says when that is."
		}
		if !strings.Contains(tool.Description, want) {
			t.Errorf("%s: the description does not state a handle's lifetime: %q", name, tool.Description)
		}
	}
}
