package tooldef

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Each provider's published rules for a tool definition, as checks over a
// schema. A check returns the faults it finds, each "<path>: <rule>".
type rules struct {
	name     *regexp.Regexp
	schema   func(path string, s map[string]any, root bool) []string
	dialects []Dialect
}

var providerRules = map[string]rules{
	// Anthropic tool use: a name of 1-64 of [a-zA-Z0-9_-], a
	// description, an input_schema that is a JSON Schema object with
	// no oneOf, allOf or anyOf at the top level.
	"anthropic": {
		name:     regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`),
		dialects: []Dialect{JSONSchema, Anthropic},
		schema: func(path string, s map[string]any, root bool) []string {
			var f []string
			if root {
				if s["type"] != "object" {
					f = append(f, path+": input_schema must have type object")
				}
				for _, k := range []string{"oneOf", "allOf", "anyOf"} {
					if _, ok := s[k]; ok {
						f = append(f, path+": no "+k+" at the top level")
					}
				}
			}
			if _, ok := s["$ref"]; ok {
				f = append(f, path+": a $ref the schema does not define")
			}
			return f
		},
	},
	// OpenAI function calling with strict: true (Structured Outputs'
	// subset): a name of 1-64 of [a-zA-Z0-9_-]; the root an object and
	// not an anyOf; every object has additionalProperties: false and
	// requires every property; only the supported keywords; at most 10
	// levels of nesting.
	"openai": {
		name:     regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`),
		dialects: []Dialect{OpenAI},
		schema: func(path string, s map[string]any, root bool) []string {
			var f []string
			supported := []string{"type", "description", "properties", "required", "additionalProperties", "items",
				"enum", "const", "anyOf", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
				"exclusiveMaximum", "multipleOf", "minItems", "maxItems", "$ref", "$defs"}
			for k := range s {
				if !slices.Contains(supported, k) {
					f = append(f, path+": strict mode does not take "+k)
				}
			}
			if root && (s["type"] != "object" || s["anyOf"] != nil) {
				f = append(f, path+": the root must be an object, not anyOf")
			}
			if _, typed := s["type"]; !typed && s["anyOf"] == nil && s["$ref"] == nil && s["const"] == nil {
				f = append(f, path+": every schema has a type")
			}
			if isType(s, "object") {
				if s["additionalProperties"] != false {
					f = append(f, path+": additionalProperties must be false")
				}
				props, _ := s["properties"].(map[string]any)
				var req []string
				for _, r := range asList(s["required"]) {
					req = append(req, r.(string))
				}
				var names []string
				for n := range props {
					names = append(names, n)
				}
				sort.Strings(req)
				sort.Strings(names)
				if !slices.Equal(req, names) {
					f = append(f, path+": every property must be required")
				}
			}
			if f1, ok := s["format"].(string); ok && !slices.Contains(openAIFormats, f1) {
				f = append(f, path+": format "+f1)
			}
			if strings.Count(path, "/properties/") > 10 {
				f = append(f, path+": more than 10 levels of nesting")
			}
			return f
		},
	},
	// Gemini function declarations: a name that starts with a letter or
	// an underscore, then [a-zA-Z0-9_.-], at most 64 in all; parameters
	// in the OpenAPI 3.0 subset Gemini's Schema holds: one type per
	// schema, no additionalProperties, an object's properties not empty,
	// enum only of strings, a string format only enum or date-time.
	"gemini": {
		name:     regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`),
		dialects: []Dialect{Gemini},
		schema: func(path string, s map[string]any, root bool) []string {
			var f []string
			for k := range s {
				if !slices.Contains(geminiKeys, k) {
					f = append(f, path+": a Schema has no field "+k)
				}
			}
			t, single := s["type"].(string)
			if _, ok := s["type"]; ok && !single {
				f = append(f, path+": type must be one type")
			}
			if !single && s["anyOf"] == nil {
				f = append(f, path+": a schema needs a type")
			}
			if single && !slices.Contains([]string{"string", "number", "integer", "boolean", "array", "object"}, t) {
				f = append(f, path+": type "+t)
			}
			if t == "object" {
				if props, _ := s["properties"].(map[string]any); len(props) == 0 {
					f = append(f, path+": properties should be non-empty for OBJECT type")
				}
			}
			if root && t != "object" {
				f = append(f, path+": parameters must be an object")
			}
			for _, e := range asList(s["enum"]) {
				if _, ok := e.(string); !ok || t != "string" {
					f = append(f, path+": enum only of strings, on a string")
				}
			}
			if fm, ok := s["format"].(string); ok && (t != "string" || fm != "date-time" && fm != "enum") {
				f = append(f, path+": format "+fm)
			}
			return f
		},
	},
}

func isType(s map[string]any, t string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// walkSchema applies check to s and every schema within it.
func walkSchema(path string, s map[string]any, root bool, check func(string, map[string]any, bool) []string) []string {
	f := check(path, s, root)
	if props, ok := s["properties"].(map[string]any); ok {
		for n, p := range props {
			if m, ok := p.(map[string]any); ok {
				f = append(f, walkSchema(path+"/properties/"+n, m, false, check)...)
			}
		}
	}
	if m, ok := s["items"].(map[string]any); ok {
		f = append(f, walkSchema(path+"/items", m, false, check)...)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		for i, sub := range asList(s[k]) {
			if m, ok := sub.(map[string]any); ok {
				f = append(f, walkSchema(fmt.Sprintf("%s/%s/%d", path, k, i), m, false, check)...)
			}
		}
	}
	return f
}

// TestProviderRules: every tool of the contract's catalog, in each
// provider's dialect, meets that provider's published rules; the default
// catalog (what GET .../tools and tools/list give) meets Anthropic's.
func TestProviderRules(t *testing.T) {
	set, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	for provider, r := range providerRules {
		for _, d := range r.dialects {
			for _, name := range set.Names() {
				tool, _ := set.Tool(name)
				got, err := In(tool, d)
				if err != nil {
					t.Fatalf("%s in %q: %v", name, d, err)
				}
				if !r.name.MatchString(got.Name) || strings.TrimSpace(got.Description) == "" {
					t.Errorf("%s (%s): name or description", name, provider)
				}
				var s map[string]any
				if err := json.Unmarshal(got.InputSchema, &s); err != nil {
					t.Fatal(err)
				}
				for _, fault := range walkSchema(name, s, true, r.schema) {
					t.Errorf("%s, dialect %q: %s", provider, d, fault)
				}
				if d == OpenAI && (got.Strict == nil || !*got.Strict) {
					t.Errorf("%s: not strict in the openai dialect", name)
				}
			}
		}
	}
}

// TestSchemaStatesItsRules: no input schema of the default catalog has a
// composition keyword at its top level (agent SDKs flatten a top-level
// if/then or anyOf into "both required", or drop the tool's strictness);
// loom_search says "query or person" in words, on both members and in
// its description; every date, time-zone and source field says its
// format with an example; a value of any JSON (the result writer's, a
// row's) is typed as every type but null in the default catalog, and in
// the dialects that cannot say that, typed as what they can, with a
// description that says what the schema takes.
func TestSchemaStatesItsRules(t *testing.T) {
	set, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range set.Names() {
		tool, _ := set.Tool(name)
		var s map[string]any
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"if", "then", "else", "anyOf", "oneOf", "allOf", "not"} {
			if _, ok := s[k]; ok {
				t.Errorf("%s: %s at the top level of its input schema", name, k)
			}
		}
	}
	search, _ := set.Tool("loom_search")
	var s struct {
		Required   []string
		Properties map[string]struct{ Description string }
	}
	_ = json.Unmarshal(search.InputSchema, &s)
	if len(s.Required) != 0 ||
		!strings.HasPrefix(s.Properties["query"].Description, "Required unless `person` is given.") ||
		!strings.HasPrefix(s.Properties["person"].Description, "Required unless `query` is given.") ||
		!strings.Contains(search.Description, "a call with neither is refused") {
		t.Errorf("loom_search states no query-or-person rule: %s / %q", search.InputSchema, search.Description)
	}
	fields := map[string][]string{"loom_search": {"since", "until", "tz", "sources"}, "loom_context": {"at", "since", "until"}}
	for tool, names := range fields {
		def, _ := set.Tool(tool)
		var s struct {
			Properties map[string]struct{ Description string }
		}
		_ = json.Unmarshal(def.InputSchema, &s)
		for _, n := range names {
			d := s.Properties[n].Description
			if !strings.Contains(d, "for example") || strings.HasPrefix(d, "Free text") {
				t.Errorf("%s.%s: %q gives no format and example", tool, n, d)
			}
		}
	}
	cal, _ := set.Tool("loom_calendar_list")
	if !strings.Contains(cal.Description, "YYYY-MM-DD") {
		t.Errorf("loom_calendar_list: %q", cal.Description)
	}
	res, _ := set.Tool("result")
	anyJSONType := `"type":["object","array","string","number","boolean"]`
	if !strings.Contains(string(res.InputSchema), anyJSONType) {
		t.Errorf("result: value not typed: %s", res.InputSchema)
	}
	if !strings.Contains(string(search.OutputSchema), `"value":{"description":"Any JSON value except null.",`+anyJSONType+`}`) {
		t.Errorf("loom_search: entries[].value not typed: %s", search.OutputSchema)
	}
	for _, d := range []Dialect{OpenAI, Gemini} {
		got, _ := In(res, d)
		var v struct {
			Properties map[string]struct {
				Description string
				AnyOf       []map[string]any
			}
		}
		_ = json.Unmarshal(got.InputSchema, &v)
		value := v.Properties["value"]
		if len(value.AnyOf) != 4 || value.Description != anyValueText || strings.Contains(string(got.InputSchema), "Any JSON") {
			t.Errorf("result in %s: value %s", d, got.InputSchema)
		}
	}
	if _, err := In(res, "cohere"); err == nil {
		t.Error("an unknown dialect: no error")
	}
}

// TestOutputSchemaRules: why no dialect has output schemas of its own
// (docs/agents.md, "Output schemas"). A row's value is loom's object, whose
// members the gateway does not know and may be null, and the envelope is
// loom's; the schemas that accept those are each refused by a rule of
// the provider's: OpenAI's strict mode closes every object, Gemini's
// Schema cannot leave an object's properties unnamed nor say null but as
// nullable (which JSON Schema, what MCP clients check answers with, does
// not read). The dialects' reading of the contract's output schemas meets
// OpenAI's rules (and so refuses the real answers: tests,
// TestDialectOutputSchemas) and breaks Gemini's only at the envelope, an
// object of loom's members.
func TestOutputSchemaRules(t *testing.T) {
	accepting := map[string][]string{ // schemas that take a row of loom's
		"openai": {`{"type":"object"}`, `{"type":"object","additionalProperties":true}`, `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":{"type":["string","number","boolean","null"]}}`},
		"gemini": {`{"type":"object"}`, `{"type":"object","additionalProperties":true}`, `{"type":["string","null"]}`, `{"type":"null"}`},
	}
	for provider, schemas := range accepting {
		for _, text := range schemas {
			var s map[string]any
			if err := json.Unmarshal([]byte(text), &s); err != nil {
				t.Fatal(err)
			}
			if faults := walkSchema("value", s, false, providerRules[provider].schema); len(faults) == 0 {
				t.Errorf("%s takes %s, a schema of a row of loom's: the dialect could say its output", provider, text)
			}
		}
	}
	set, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, provider := range []string{"openai", "gemini"} {
		r := providerRules[provider]
		for _, name := range set.Names() {
			tool, _ := set.Tool(name)
			got, err := In(Def{Name: name, InputSchema: tool.OutputSchema}, r.dialects[0])
			if err != nil {
				t.Fatal(err)
			}
			var s map[string]any
			if err := json.Unmarshal(got.InputSchema, &s); err != nil {
				t.Fatal(err)
			}
			for _, fault := range walkSchema(name, s, true, r.schema) {
				if provider == "openai" || fault != name+"/properties/envelope: properties should be non-empty for OBJECT type" {
					t.Errorf("%s reading of the output schema: %s", provider, fault)
				}
			}
		}
	}
}
