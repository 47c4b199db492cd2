package loom

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
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
//
// The payload is read in one validating pass over its bytes with
// ifc.Scanner (nothing is copied) and only the rows' boundaries are kept.
func Split(tool Tool, payload []byte) (rows []jsontext.Value, envelope jsontext.Value, err error) {
	payload = bytes.Trim(payload, " \t\r\n")
	switch tool {
	case Search:
		return splitList(payload, "hits", "query", "source_status", "warnings", "truncated")
	case PageDiscover:
		return splitList(payload, "pages", "totalPages", "omittedViews")
	case CalendarList:
		var s ifc.Scanner
		s.Reset(payload)
		rows, err := elements(&s, nil, 0)
		if err != nil || !s.AtEnd() {
			return nil, nil, ErrMalformedPayload
		}
		return rows, nil, nil
	case PageInspect, PageRead, People, Context, Profile:
		if len(payload) == 0 || payload[0] != '{' || !validPayload(payload) {
			return nil, nil, ErrMalformedPayload
		}
		return []jsontext.Value{jsontext.Value(payload)}, nil, nil
	}
	return nil, nil, ErrUnknownTool
}

// maxEnvelopeKeys bounds the envelope keys of a list payload.
const maxEnvelopeKeys = 4

// splitList splits an object payload whose list member holds the rows and
// whose envelope keys are picked.
func splitList(payload []byte, list string, envelopeKeys ...string) ([]jsontext.Value, jsontext.Value, error) {
	var s ifc.Scanner
	s.Reset(payload)
	if s.Peek() != '{' {
		return nil, nil, ErrMalformedPayload
	}
	s.Advance()
	var rows []jsontext.Value
	isArray := false // the last list member seen is an array
	var last [maxEnvelopeKeys]jsontext.Value
	var order [maxEnvelopeKeys]int
	n := 0
	c := s.Peek()
	for c != '}' {
		name, err := s.Name()
		if err != nil {
			return nil, nil, ErrMalformedPayload
		}
		key := -2 // another member
		if isName(name, list) {
			key = -1
		} else {
			for i, k := range envelopeKeys {
				if isName(name, k) {
					key = i
					break
				}
			}
		}
		switch {
		case key == -1 && s.Peek() == '[':
			// A repeated list member replaces the rows read so far.
			if rows, err = elements(&s, rows[:0], 1); err != nil {
				return nil, nil, ErrMalformedPayload
			}
			isArray = true
		default:
			v, err := s.Value(1)
			if err != nil {
				return nil, nil, ErrMalformedPayload
			}
			if key == -1 {
				isArray = false
			}
			if key >= 0 {
				if last[key] == nil {
					order[n] = key
					n++
				}
				last[key] = jsontext.Value(v)
			}
		}
		switch c = s.Peek(); c {
		case ',':
			s.Advance()
			if c = s.Peek(); c == '}' {
				return nil, nil, ErrMalformedPayload // a trailing comma
			}
		case '}':
		default:
			return nil, nil, ErrMalformedPayload
		}
	}
	s.Advance()
	if !s.AtEnd() || !isArray {
		return nil, nil, ErrMalformedPayload
	}
	if len(rows) == 0 {
		rows = nil
	}
	size := len("{}")
	for _, k := range order[:n] {
		size += len(`"":,`) + len(envelopeKeys[k]) + len(last[k])
	}
	env := append(make([]byte, 0, size), '{')
	for i, k := range order[:n] {
		if i > 0 {
			env = append(env, ',')
		}
		env, _ = jsontext.AppendQuote(env, envelopeKeys[k])
		env = append(env, ':')
		env = append(env, last[k]...)
	}
	return rows, append(env, '}'), nil
}

// isName reports whether the raw JSON string name (quotes included) reads
// as want, which is plain ASCII without escapes. A name spelled with
// escapes is unquoted to compare.
func isName(name []byte, want string) bool {
	if len(name) == len(want)+2 && string(name[1:len(name)-1]) == want {
		return true
	}
	if bytes.IndexByte(name, '\\') < 0 {
		return false
	}
	s, err := jsontext.AppendUnquote(nil, name)
	return err == nil && string(s) == want
}

// elements reads the array next in s, which sits inside depth open arrays
// and objects, appending its elements to rows.
func elements(s *ifc.Scanner, rows []jsontext.Value, depth int) ([]jsontext.Value, error) {
	if s.Peek() != '[' {
		return nil, errNotArray
	}
	s.Advance()
	if s.Peek() == ']' {
		s.Advance()
		return rows, nil
	}
	for {
		v, err := s.Value(depth + 1)
		if err != nil {
			return nil, err
		}
		if len(rows) == cap(rows) { // double: append grows large slices by a quarter
			rows = slices.Grow(rows, max(len(rows), 64))
		}
		rows = append(rows, v)
		switch s.Peek() {
		case ',':
			s.Advance()
		case ']':
			s.Advance()
			return rows, nil
		default:
			return nil, errSyntax
		}
	}
}
