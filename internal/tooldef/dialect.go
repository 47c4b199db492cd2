package tooldef

import (
	"encoding/json"
	"errors"
	"slices"
)

// Dialect is a model provider's reading of a tool's input schema.
type Dialect string

// The dialects of a catalog. The contract's own (JSON Schema 2020-12,
// which Anthropic's tool use takes as it is) is the default; OpenAI's
// strict function calling and Gemini's function declarations each take
// a subset, and one schema cannot serve both (OpenAI's strict mode
// requires additionalProperties: false on every object, Gemini's
// declarations refuse the keyword).
const (
	JSONSchema Dialect = ""
	Anthropic  Dialect = "anthropic"
	OpenAI     Dialect = "openai"
	Gemini     Dialect = "gemini"
)

// ErrDialect is a dialect the catalog is not given in.
var ErrDialect = errors.New("tooldef: unknown dialect")

// Dialects are the dialects a catalog is given in, by name.
func Dialects() []string { return []string{string(Anthropic), string(Gemini), string(OpenAI)} }

// openAIFormats are the string formats OpenAI's strict mode takes.
var openAIFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// In returns t with its input schema in dialect d (and, for OpenAI,
// Strict set: every tool of the contract is strict in that dialect).
// What a dialect cannot say is dropped from the schema and stays the
// gateway's to check: the gateway validates every call against the
// contract whatever the model was shown.
func In(t Def, d Dialect) (Def, error) {
	switch d {
	case JSONSchema, Anthropic:
		return t, nil
	case OpenAI, Gemini:
	default:
		return Def{}, ErrDialect
	}
	var s map[string]any
	if err := json.Unmarshal(t.InputSchema, &s); err != nil {
		return Def{}, err
	}
	// Neither takes if/then, nor anyOf at the top level.
	for _, k := range []string{"if", "then", "else", "anyOf", "oneOf", "allOf", "not"} {
		delete(s, k)
	}
	if d == OpenAI {
		s = strict(s)
		yes := true
		t.Strict = &yes
	} else {
		s = gemini(s)
	}
	out, err := json.Marshal(s)
	if err != nil {
		return Def{}, err
	}
	t.InputSchema = out
	return t, nil
}

// anyValue is what a schema of any JSON value but null (the result
// writer's value, a row's value) becomes where a provider cannot say it:
// a string, a number, a boolean, or a list of strings (a list of
// handles cites them). Its description says so, not "any JSON value".
func anyValue() map[string]any {
	return map[string]any{
		"description": anyValueText,
		"anyOf": []any{
			map[string]any{"type": "string"},
			map[string]any{"type": "number"},
			map[string]any{"type": "boolean"},
			map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	}
}

// anyValueText is the description of anyValue.
const anyValueText = "A string, a number, a boolean, or a list of strings (for example cfh:v: handles, each exactly as it came back)."

// isAnyValue reports whether s is a schema of any JSON value but null:
// untyped with nothing else that constrains it, or typed as the list of
// every type but null (the default catalog's form).
func isAnyValue(s map[string]any) bool {
	if s["anyOf"] != nil || s["oneOf"] != nil || s["allOf"] != nil || s["properties"] != nil || s["items"] != nil || s["enum"] != nil {
		return false
	}
	switch t := s["type"].(type) {
	case nil:
		return true
	case []any:
		if len(t) != len(anyJSON) {
			return false
		}
		for _, x := range anyJSON {
			if !slices.Contains(t, any(x)) {
				return false
			}
		}
		return true
	}
	return false
}

// strict is s under OpenAI's strict function-calling rules: every object
// closed (additionalProperties: false) with every property required, an
// optional one taking null; keywords strict mode does not take dropped;
// oneOf read as anyOf.
func strict(s map[string]any) map[string]any {
	if isAnyValue(s) {
		s = anyValue()
	}
	for _, k := range []string{"minLength", "maxLength", "uniqueItems", "default", "examples", "title", "minProperties", "maxProperties"} {
		delete(s, k)
	}
	if f, ok := s["format"].(string); ok && !slices.Contains(openAIFormats, f) {
		delete(s, "format")
	}
	if one, ok := s["oneOf"]; ok {
		s["anyOf"] = one
		delete(s, "oneOf")
	}
	if list, ok := s["anyOf"].([]any); ok {
		for i, sub := range list {
			if m, ok := sub.(map[string]any); ok {
				list[i] = strict(m)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		s["items"] = strict(items)
	}
	if props, ok := s["properties"].(map[string]any); ok || s["type"] == "object" {
		required := map[string]bool{}
		if r, ok := s["required"].([]any); ok {
			for _, n := range r {
				if name, ok := n.(string); ok {
					required[name] = true
				}
			}
		}
		names := make([]string, 0, len(props))
		for name, p := range props {
			names = append(names, name)
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			m = strict(m)
			if !required[name] {
				m = nullable(m)
			}
			props[name] = m
		}
		slices.Sort(names)
		req := make([]any, len(names))
		for i, n := range names {
			req[i] = n
		}
		if props == nil {
			props = map[string]any{}
		}
		s["properties"], s["required"], s["additionalProperties"] = props, req, false
	}
	return s
}

// nullable lets m also be null: the strict way of saying optional.
func nullable(m map[string]any) map[string]any {
	switch t := m["type"].(type) {
	case string:
		m["type"] = []any{t, "null"}
	case []any:
		if !slices.Contains(t, any("null")) {
			m["type"] = append(t, "null")
		}
	default:
		if list, ok := m["anyOf"].([]any); ok {
			m["anyOf"] = append(list, map[string]any{"type": "null"})
		}
		return m
	}
	if e, ok := m["enum"].([]any); ok && !slices.Contains(e, nil) {
		m["enum"] = append(e, nil)
	}
	return m
}

// geminiKeys are the schema fields Gemini's function declarations take.
var geminiKeys = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern",
	"anyOf", "propertyOrdering", "items", "minimum", "maximum"}

// gemini is s as a Gemini function declaration's schema (its OpenAPI 3.0
// subset): one type, null said as nullable, no additionalProperties, a
// string format only where it is date-time.
func gemini(s map[string]any) map[string]any {
	if isAnyValue(s) {
		s = anyValue()
	}
	if one, ok := s["oneOf"]; ok {
		s["anyOf"] = one
	}
	for k := range s {
		if !slices.Contains(geminiKeys, k) {
			delete(s, k)
		}
	}
	if types, ok := s["type"].([]any); ok {
		var t any
		for _, x := range types {
			if x == "null" {
				s["nullable"] = true
			} else if t == nil {
				t = x
			}
		}
		s["type"] = t
	}
	if f, ok := s["format"].(string); ok && (s["type"] != "string" || f != "date-time") {
		delete(s, "format")
	}
	if list, ok := s["anyOf"].([]any); ok {
		for i, sub := range list {
			if m, ok := sub.(map[string]any); ok {
				list[i] = gemini(m)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		s["items"] = gemini(items)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		names := make([]any, 0, len(props))
		for name, p := range props {
			if m, ok := p.(map[string]any); ok {
				props[name] = gemini(m)
			}
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b any) int {
			switch {
			case a.(string) < b.(string):
				return -1
			case a.(string) > b.(string):
				return 1
			}
			return 0
		})
		s["propertyOrdering"] = names
	}
	return s
}
