// Package tooldef derives model-facing tool definitions from the
// contract: for each agent operation that carries an x-tool-description,
// its name (the last segment of its route), that description, and its
// request and answer schemas as plain JSON Schema (2020-12): $refs
// inlined, OpenAPI-only keywords translated (nullable) or dropped
// (example, discriminator, x-*, formats JSON Schema does not define).
// The REST face serves them at GET /v1/runs/{runId}/tools and the MCP
// face lists them; one source, api/openapi.yaml.
package tooldef

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/loom-gateway/gateway/api"
)

// Def is one tool's definition.
type Def struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Strict, in the openai dialect, says the schema meets OpenAI's
	// strict function-calling rules (pass it as the function's strict).
	Strict *bool `json:"strict,omitempty"`
	// OutputSchema is the schema of the tool's answer (its 200 or 201
	// body); the MCP face gives it as outputSchema, beside ErrorSchema.
	OutputSchema json.RawMessage `json:"-"`
	// ErrorSchema is the schema of a refusal: the contract's Problem.
	ErrorSchema json.RawMessage `json:"-"`
}

// Set is the definitions of a contract, by name.
type Set struct {
	tools map[string]Def
}

// Load reads the definitions from the contract spec.
func Load(spec []byte) (*Set, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, err
	}
	set := &Set{tools: map[string]Def{}}
	var problem json.RawMessage
	if ref := doc.Components.Schemas["Problem"]; ref != nil && ref.Value != nil {
		if problem, err = marshal(ref.Value); err != nil {
			return nil, err
		}
	}
	for path, item := range doc.Paths.Map() {
		op := item.Post
		if op == nil {
			continue
		}
		desc, ok := op.Extensions["x-tool-description"].(string)
		if !ok {
			continue
		}
		name := path[strings.LastIndexByte(path, '/')+1:]
		t := Def{Name: name, Description: strings.TrimSpace(desc), ErrorSchema: problem}
		if rb := op.RequestBody; rb != nil && rb.Value != nil {
			if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
				if t.InputSchema, err = marshal(mt.Schema.Value); err != nil {
					return nil, err
				}
			}
		}
		if t.InputSchema == nil {
			return nil, fmt.Errorf("tooldef: %s has no JSON request body", name)
		}
		for _, code := range []string{"200", "201"} {
			if r := op.Responses.Value(code); r != nil && r.Value != nil {
				if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
					if t.OutputSchema, err = marshal(mt.Schema.Value); err != nil {
						return nil, err
					}
					break
				}
			}
		}
		set.tools[name] = t
	}
	return set, nil
}

// Tool returns the definition of the tool name.
func (s *Set) Tool(name string) (Def, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// Names lists the tools defined, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func marshal(s *openapi3.Schema) (json.RawMessage, error) {
	return json.Marshal(Plain(s))
}

// standardFormats are the formats JSON Schema 2020-12 defines; others
// (int32, int64, ...) are OpenAPI's and are dropped.
var standardFormats = []string{"date-time", "date", "time", "duration", "email", "idn-email", "hostname",
	"idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid",
	"uri-template", "json-pointer", "relative-json-pointer", "regex"}

// Plain is s as a plain JSON Schema object, its references inlined.
func Plain(s *openapi3.Schema) map[string]any {
	return plain(s, 0)
}

func plain(s *openapi3.Schema, depth int) map[string]any {
	m := map[string]any{}
	if s == nil || depth > 32 {
		return m
	}
	if s.Type != nil && len(*s.Type) > 0 {
		types := slices.Clone([]string(*s.Type))
		if s.Nullable && !slices.Contains(types, "null") {
			types = append(types, "null")
		}
		if len(types) == 1 {
			m["type"] = types[0]
		} else {
			m["type"] = types
		}
	}
	if s.Title != "" {
		m["title"] = s.Title
	}
	if s.Description != "" {
		m["description"] = strings.TrimSpace(s.Description)
	}
	if slices.Contains(standardFormats, s.Format) {
		m["format"] = s.Format
	}
	if len(s.Enum) > 0 {
		m["enum"] = s.Enum
	}
	if s.Default != nil {
		m["default"] = s.Default
	}
	if s.MinLength > 0 {
		m["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		m["maxLength"] = *s.MaxLength
	}
	if s.Pattern != "" {
		m["pattern"] = s.Pattern
	}
	if s.Min != nil {
		m["minimum"] = *s.Min
	}
	if s.Max != nil {
		m["maximum"] = *s.Max
	}
	if s.MinItems > 0 {
		m["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		m["maxItems"] = *s.MaxItems
	}
	if s.UniqueItems {
		m["uniqueItems"] = true
	}
	if s.Items != nil {
		m["items"] = plain(s.Items.Value, depth+1)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for k, p := range s.Properties {
			props[k] = plain(p.Value, depth+1)
		}
		m["properties"] = props
	}
	if len(s.Required) > 0 {
		m["required"] = s.Required
	}
	if ap := s.AdditionalProperties; ap.Has != nil && !*ap.Has {
		m["additionalProperties"] = false
	} else if ap.Schema != nil {
		m["additionalProperties"] = plain(ap.Schema.Value, depth+1)
	}
	for key, refs := range map[string]openapi3.SchemaRefs{"anyOf": s.AnyOf, "oneOf": s.OneOf, "allOf": s.AllOf} {
		if len(refs) > 0 {
			var list []any
			for _, r := range refs {
				list = append(list, plain(r.Value, depth+1))
			}
			m[key] = list
		}
	}
	if s.Not != nil {
		m["not"] = plain(s.Not.Value, depth+1)
	}
	// x-required-any-of names members of which at least one is required
	// (loom_search's query or person). No schema keyword says it that
	// every client converts: agent SDKs flatten a top-level if/then or
	// anyOf into "both required" or drop the tool's strictness, and
	// Anthropic refuses anyOf, oneOf and allOf there. So the schema says
	// it in words, on each member (and the tool's description), and the
	// argument builder enforces it: its refusal names the member
	// (one_of_required).
	if names, ok := s.Extensions["x-required-any-of"].([]any); ok && len(names) == 2 {
		if props, ok := m["properties"].(map[string]any); ok {
			for i, n := range names {
				name, _ := n.(string)
				other, _ := names[1-i].(string)
				if p, ok := props[name].(map[string]any); ok {
					rule := "Required unless `" + other + "` is given."
					if d, ok := p["description"].(string); ok && d != "" {
						rule = rule + " " + d
					}
					p["description"] = rule
				}
			}
		}
	}
	// A schema with no type and nothing else to say what it holds, and
	// not nullable, is OpenAPI 3.0's "any JSON value except null"
	// (AnyValue: a row's value, the result writer's value). JSON Schema
	// says that as the list of the other types; a client that reads a
	// schema without a type as "no value" (or a provider that wants one)
	// then reads what the gateway takes.
	if _, typed := m["type"]; !typed && !s.Nullable && len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) == 0 &&
		s.Not == nil && s.Items == nil && len(s.Properties) == 0 && len(s.Enum) == 0 {
		m["type"] = slices.Clone(anyJSON)
	}
	return m
}

// anyJSON is every JSON type but null (integer is a number).
var anyJSON = []string{"object", "array", "string", "number", "boolean"}

// Contract is the definitions of the gateway's own contract
// (api/openapi.yaml), read once.
var Contract = sync.OnceValues(func() (*Set, error) { return Load(api.Spec) })

// For lists the definitions of names, in that order; a name without a
// definition is left out.
func (s *Set) For(names []string) []Def {
	out := make([]Def, 0, len(names))
	for _, n := range names {
		if t, ok := s.tools[n]; ok {
			out = append(out, t)
		}
	}
	return out
}
