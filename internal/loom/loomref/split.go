package loomref

import (
	"bytes"
	"context"
	"math"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/loom"
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
// jsjson.Scanner (nothing is copied) and only the rows' boundaries are kept.
func Split(tool loom.Tool, payload []byte) (rows []jsontext.Value, envelope jsontext.Value, err error) {
	rows, _, envelope, err = SplitContext(context.Background(), tool, payload, -1)
	return rows, envelope, err
}

// SplitContext is Split that keeps only the first keep rows (all when keep
// is negative) and counts the others in more, and that gives up once ctx is
// done, returning ctx.Err(); it looks at ctx every checkRows rows. Measure
// never reaches past ifc.MaxMeasuredRows rows, so a caller that keeps that
// many holds a few kilobytes of row boundaries where a payload of millions
// of tiny rows (a 2-byte row has a 24-byte boundary) would need gigabytes.
func SplitContext(ctx context.Context, tool loom.Tool, payload []byte, keep int) (rows []jsontext.Value, more int, envelope jsontext.Value, err error) {
	payload = bytes.Trim(payload, " \t\r\n")
	if keep < 0 {
		keep = math.MaxInt
	}
	l := rowList{keep: keep}
	shape := loom.ShapeOf(tool)
	switch {
	case !tool.Valid():
		return nil, 0, nil, loom.ErrUnknownTool
	case shape.List != "":
		envelope, err = splitList(ctx, &l, payload, shape.List, shape.Envelope...)
	case shape.Array:
		var s jsjson.Scanner
		s.Reset(payload)
		err = l.elements(ctx, &s, 0)
		switch {
		case err != nil && err == ctx.Err():
		case err != nil || !s.AtEnd():
			err = loom.ErrMalformedPayload
		}
	default:
		if len(payload) == 0 || payload[0] != '{' || !jsjson.Valid(payload) {
			return nil, 0, nil, loom.ErrMalformedPayload
		}
		return []jsontext.Value{jsontext.Value(payload)}, 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, err
	}
	if len(l.rows) == 0 {
		l.rows = nil
	}
	return l.rows, l.more, envelope, nil
}

// rowList is the rows read so far: the first keep, and a count of the
// others.
type rowList struct {
	rows []jsontext.Value
	more int
	keep int
}

// splitList splits an object payload whose list member holds the rows and
// whose envelope keys are picked.
func splitList(ctx context.Context, l *rowList, payload []byte, list string, envelopeKeys ...string) (jsontext.Value, error) {
	var s jsjson.Scanner
	s.Reset(payload)
	if s.Peek() != '{' {
		return nil, loom.ErrMalformedPayload
	}
	s.Advance()
	isArray := false // the last list member seen is an array
	last := make([]jsontext.Value, len(envelopeKeys))
	order := make([]int, len(envelopeKeys))
	n := 0
	c := s.Peek()
	for c != '}' {
		name, err := s.Name()
		if err != nil {
			return nil, loom.ErrMalformedPayload
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
			l.rows, l.more = l.rows[:0], 0
			if err = l.elements(ctx, &s, 1); err != nil {
				if err == ctx.Err() { // never nil here
					return nil, err
				}
				return nil, loom.ErrMalformedPayload
			}
			isArray = true
		default:
			v, err := s.Value(1)
			if err != nil {
				return nil, loom.ErrMalformedPayload
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
				return nil, loom.ErrMalformedPayload // a trailing comma
			}
		case '}':
		default:
			return nil, loom.ErrMalformedPayload
		}
	}
	s.Advance()
	if !s.AtEnd() || !isArray {
		return nil, loom.ErrMalformedPayload
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
	return append(env, '}'), nil
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

// checkRows is how many rows SplitContext reads between two looks at its
// context; a power of two.
const checkRows = 1024

// elements reads the array next in s, which sits inside depth open arrays
// and objects, adding its elements to l. It returns ctx.Err() once ctx is
// done.
func (l *rowList) elements(ctx context.Context, s *jsjson.Scanner, depth int) error {
	if s.Peek() != '[' {
		return jsjson.ErrNotArray
	}
	s.Advance()
	if s.Peek() == ']' {
		s.Advance()
		return nil
	}
	for n := 0; ; n++ {
		v, err := s.Value(depth + 1)
		if err != nil {
			return err
		}
		if n&(checkRows-1) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case len(l.rows) >= l.keep:
			l.more++
		case len(l.rows) == cap(l.rows): // double: append grows large slices by a quarter
			l.rows = slices.Grow(l.rows, max(len(l.rows), 64))
			fallthrough
		default:
			l.rows = append(l.rows, v)
		}
		switch s.Peek() {
		case ',':
			s.Advance()
		case ']':
			s.Advance()
			return nil
		default:
			return jsjson.ErrSyntax
		}
	}
}
