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
	switch tool {
	case Search:
		return splitList(payload, "hits", "query", "source_status", "warnings", "truncated")
	case PageDiscover:
		return splitList(payload, "pages", "totalPages", "omittedViews")
	case CalendarList:
		rows, err := arrayElements(payload, payloadOptions...)
		if err != nil {
			return nil, nil, ErrMalformedPayload
		}
		return rows, nil, nil
	case PageInspect, PageRead, People, Context, Profile:
		if len(payload) == 0 || payload[0] != '{' || !jsontext.Value(payload).IsValid(payloadOptions...) {
			return nil, nil, ErrMalformedPayload
		}
		return []jsontext.Value{jsontext.Value(payload)}, nil, nil
	}
	return nil, nil, ErrUnknownTool
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
	rows, err := arrayElements(rowsValue, payloadOptions...)
	if err != nil {
		return nil, nil, ErrMalformedPayload
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
