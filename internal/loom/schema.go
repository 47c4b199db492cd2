package loom

import "encoding/json"

// PayloadSchema returns the JSON Schema (draft 2020-12) of what tool's loom
// command must print on stdout when it succeeds, generated from ShapeOf,
// the one place the gateway declares each shape, and from the label
// reading of SEMANTICS (e.2): the payload's shape (a payload without it
// answers malformed_payload), search's schemaVersion (another answers
// schema_version_mismatch), and rows that are objects whose ifc, when
// present, the gateway can read (any other row is withheld,
// cfc_label_read_failed, not refused). It does not describe the other
// answers a command may give: no JSON with exit 1 or 3 for a person
// lookup, or an object with ok:false. docs/loom/schemas holds its output
// for each tool, and docs/loom.md explains it.
func PayloadSchema(tool Tool) []byte {
	row := map[string]any{"$ref": "#/$defs/row"}
	s := ordered{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", "https://github.com/loom-gateway/gateway/docs/loom/schemas/" + string(tool) + ".json"},
		{"title", "stdout of a successful loom " + commandWords(tool) + " --json (" + string(tool) + ")"},
	}
	shape := ShapeOf(tool)
	switch {
	case shape.List != "":
		props := ordered{{shape.List, map[string]any{"type": "array", "items": row}}}
		for _, k := range shape.Envelope {
			props = append(props, field{k, map[string]any{"description": "envelope: passed to the agent as is, strings cut to 4,000 UTF-16 units"}})
		}
		if tool == Search {
			props = append(props, field{"schemaVersion", map[string]any{"description": "absent reads as 1; any other value answers schema_version_mismatch", "const": 1}})
		}
		s = append(s,
			field{"description", "An object whose " + shape.List + " member is the array of rows. Other members than the envelope's are dropped."},
			field{"type", "object"},
			field{"required", []string{shape.List}},
			field{"properties", props})
	case shape.Array:
		s = append(s,
			field{"description", "A JSON array: each element is a row."},
			field{"type", "array"},
			field{"items", row})
	default:
		s = append(s,
			field{"description", "A JSON object: the whole object is the one row."},
			field{"$ref", "#/$defs/row"})
	}
	atom := map[string]any{
		"description": "a string (typically a URI), or an object with a string type and no anyOf",
		"anyOf": []any{
			map[string]any{"type": "string"},
			map[string]any{"type": "object", "required": []string{"type"}, "properties": map[string]any{"type": map[string]any{"type": "string"}}, "not": map[string]any{"required": []string{"anyOf"}}},
		},
	}
	clause := map[string]any{
		"description": "an atom, or {\"anyOf\": [atom, ...]} with anyOf its only member and at least one atom",
		"anyOf": []any{
			map[string]any{"$ref": "#/$defs/atom"},
			map[string]any{"type": "object", "required": []string{"anyOf"}, "additionalProperties": false,
				"properties": map[string]any{"anyOf": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"$ref": "#/$defs/atom"}}}},
		},
	}
	label := map[string]any{
		"description": "a row's label: confidentiality is a conjunction of clauses; other members are ignored",
		"type":        "object",
		"required":    []string{"confidentiality"},
		"properties": map[string]any{
			"confidentiality": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/clause"}},
			"integrity":       map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/atom"}},
		},
	}
	s = append(s, field{"$defs", ordered{
		{"row", map[string]any{
			"description": "a row: a JSON object; without ifc it is unlabeled and takes the query's label",
			"type":        "object",
			"properties":  map[string]any{"ifc": map[string]any{"$ref": "#/$defs/label"}},
		}},
		{"label", label},
		{"clause", clause},
		{"atom", atom},
	}})
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err) // the values above always marshal
	}
	return append(b, '\n')
}

// commandWords is tool's loom command as typed: "page discover".
func commandWords(tool Tool) string {
	switch tool {
	case PageDiscover:
		return "page discover"
	case PageInspect:
		return "page inspect"
	case PageRead:
		return "page read"
	case CalendarList:
		return "calendar list"
	}
	return tool.Command()
}

// field and ordered marshal an object with its members in order.
type field struct {
	name  string
	value any
}

type ordered []field

func (o ordered) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}
