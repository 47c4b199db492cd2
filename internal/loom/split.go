package loom

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// Split cuts a payload Interpret accepted into rows and envelope as
// SEMANTICS (d) says:
//
//   - Search: an object with an array "hits"; rows are its elements; the
//     envelope holds those of "query", "source_status", "warnings" and
//     "truncated" the payload has (null kept), in payload order.
//   - PageDiscover: the same with "pages", and "totalPages", "omittedViews".
//   - CalendarList: an array; rows are its elements; no envelope (nil).
//   - PageInspect, PageRead, People, Context, Profile: an object, which is
//     the single row; no envelope (nil).
//
// For Search and PageDiscover the envelope is never nil: "{}" when none of
// its keys is present. Anything else is ErrMalformedPayload; a Tool that is
// not one of the eight is ErrUnknownTool.
//
// Rows and envelope values are slices of payload, loom's key order and
// number text untouched (Gateway decision 2). Where the payload repeats a
// member name, the last occurrence is the one read (of "hits", "pages" and
// the envelope keys; an envelope key keeps the place of its first
// occurrence), as JavaScript reads it; duplicate names inside a row are left
// for package ifc, which reads them the same way.
func Split(tool Tool, payload []byte) (rows []jsontext.Value, envelope jsontext.Value, err error) {
	payload = bytes.Trim(payload, " \t\r\n")
	if !tool.Valid() {
		return nil, nil, ErrUnknownTool
	}
	if !jsontext.Value(payload).IsValid(payloadOptions...) {
		return nil, nil, ErrMalformedPayload
	}
	switch tool {
	case Search:
		return splitList(payload, "hits", "query", "source_status", "warnings", "truncated")
	case PageDiscover:
		return splitList(payload, "pages", "totalPages", "omittedViews")
	case CalendarList:
		if payload[0] != '[' {
			return nil, nil, ErrMalformedPayload
		}
		rows, err := elements(payload)
		return rows, nil, err
	default:
		if payload[0] != '{' {
			return nil, nil, ErrMalformedPayload
		}
		return []jsontext.Value{jsontext.Value(payload)}, nil, nil
	}
}

// splitList splits an object payload whose list member holds the rows and
// whose envelope keys are picked.
func splitList(payload []byte, list string, envelopeKeys ...string) ([]jsontext.Value, jsontext.Value, error) {
	ms, err := objectMembers(payload, payloadOptions...)
	if err != nil {
		return nil, nil, ErrMalformedPayload
	}
	var rowsValue jsontext.Value
	var order []string
	last := map[string]jsontext.Value{}
	for _, m := range ms {
		switch {
		case m.name == list:
			rowsValue = m.value
		case slices.Contains(envelopeKeys, m.name):
			if _, seen := last[m.name]; !seen {
				order = append(order, m.name)
			}
			last[m.name] = m.value
		}
	}
	if rowsValue.Kind() != '[' {
		return nil, nil, ErrMalformedPayload
	}
	rows, err := elements(rowsValue)
	if err != nil {
		return nil, nil, err
	}
	env := []byte{'{'}
	for i, name := range order {
		if i > 0 {
			env = append(env, ',')
		}
		env, _ = jsontext.AppendQuote(env, name)
		env = append(env, ':')
		env = append(env, last[name]...)
	}
	return rows, append(env, '}'), nil
}

// elements returns the elements of the array value.
func elements(array []byte) ([]jsontext.Value, error) {
	rows, err := arrayElements(array, payloadOptions...)
	if err != nil {
		return nil, ErrMalformedPayload
	}
	return rows, nil
}
