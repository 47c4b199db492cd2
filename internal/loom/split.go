package loom

import (
	"bytes"
	"encoding/binary"
	"errors"
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
//
// The payload is read in one validating pass over its bytes (nothing is
// copied) and only the rows' boundaries are kept; see scanner.
func Split(tool Tool, payload []byte) (rows []jsontext.Value, envelope jsontext.Value, err error) {
	payload = bytes.Trim(payload, " \t\r\n")
	switch tool {
	case Search:
		return splitList(payload, "hits", "query", "source_status", "warnings", "truncated")
	case PageDiscover:
		return splitList(payload, "pages", "totalPages", "omittedViews")
	case CalendarList:
		s := scanner{b: payload}
		rows, err := s.elements(nil, 0)
		if err != nil || !s.atEnd() {
			return nil, nil, ErrMalformedPayload
		}
		return rows, nil, nil
	case PageInspect, PageRead, People, Context, Profile:
		s := scanner{b: payload}
		if len(payload) == 0 || payload[0] != '{' {
			return nil, nil, ErrMalformedPayload
		}
		if _, err := s.value(0); err != nil || !s.atEnd() {
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
	s := scanner{b: payload}
	if s.ws() != '{' {
		return nil, nil, ErrMalformedPayload
	}
	s.i++
	var rows []jsontext.Value
	isArray := false // the last list member seen is an array
	var last [maxEnvelopeKeys]jsontext.Value
	var order [maxEnvelopeKeys]int
	n := 0
	c := s.ws()
	for c != '}' {
		if c != '"' {
			return nil, nil, ErrMalformedPayload
		}
		name, err := s.str()
		if err != nil || s.ws() != ':' {
			return nil, nil, ErrMalformedPayload
		}
		s.i++
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
		case key == -1 && s.ws() == '[':
			// A repeated list member replaces the rows read so far.
			if rows, err = s.elements(rows[:0], 1); err != nil {
				return nil, nil, ErrMalformedPayload
			}
			isArray = true
		default:
			v, err := s.value(1)
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
				last[key] = v
			}
		}
		switch c = s.ws(); c {
		case ',':
			s.i++
			if c = s.ws(); c == '}' {
				return nil, nil, ErrMalformedPayload // a trailing comma
			}
		case '}':
		default:
			return nil, nil, ErrMalformedPayload
		}
	}
	s.i++
	if !s.atEnd() || !isArray {
		return nil, nil, ErrMalformedPayload
	}
	if len(rows) == 0 {
		rows = nil
	}
	env := []byte{'{'}
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

// scanner is Split's reader: a validating JSON tokenizer over the payload
// that accepts exactly what jsontext accepts under payloadOptions (RFC 8259
// grammar, duplicate names, invalid UTF-8 and escaped lone surrogates
// allowed, at most maxDepth nested arrays and objects) without jsontext's
// per-token bookkeeping. Values are returned as slices of the payload.
// Package ifc reads rows with the same grammar; TestScannerMatchesJSONText
// and TestSplitMatchesPlain hold both to jsontext.
type scanner struct {
	b     []byte
	i     int
	plain bool   // the last string read is its own JavaScript form
	stack []byte // open containers of value, '{' or '['
}

// maxDepth is jsontext's nesting limit.
const maxDepth = 10000

var errSyntax = errors.New("loom: invalid JSON")

// strPlain marks the bytes a JSON string holds as they are.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// ws skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) ws() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// atEnd reports whether only whitespace is left.
func (s *scanner) atEnd() bool { return s.ws() == 0 && s.i == len(s.b) }

// str reads the string at s.i and returns it raw. It sets s.plain when
// the string holds only printable ASCII other than '"' and '\\' (no
// escapes), which is then its own JavaScript form.
func (s *scanner) str() ([]byte, error) {
	b, start := s.b, s.i
	i := s.i + 1
	var seen uint64 // the bytes passed over, or-ed
	s.plain = true
	for {
		// Eight bytes at a time while none of them ends the run.
		for i+8 <= len(b) {
			v := binary.LittleEndian.Uint64(b[i:])
			if hasSpecial(v) {
				break
			}
			seen |= v
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			seen |= uint64(b[i])
			i++
		}
		if i >= len(b) {
			return nil, errSyntax
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			s.plain = s.plain && seen&hiBits == 0
			return b[start:s.i], nil
		case '\\':
			s.plain = false
			if i+1 >= len(b) {
				return nil, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, errSyntax
				}
				i += 6
			default:
				return nil, errSyntax
			}
		default: // a control character
			return nil, errSyntax
		}
	}
}

const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// hasSpecial reports whether one of the eight bytes of v is '"', '\\' or
// a control character (below 0x20).
func hasSpecial(v uint64) bool {
	quote := v ^ ('"' * loBits)
	bslash := v ^ ('\\' * loBits)
	q := (quote - loBits) &^ quote
	bs := (bslash - loBits) &^ bslash
	ctl := (v - 0x20*loBits) &^ v
	return (q|bs|ctl)&hiBits != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scalar reads the string, number or literal at s.i.
func (s *scanner) scalar(c byte) error {
	b, i := s.b, s.i
	switch c {
	case '"':
		_, err := s.str()
		return err
	case 't', 'f', 'n':
		lit := "null"
		if c == 't' {
			lit = "true"
		} else if c == 'f' {
			lit = "false"
		}
		if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
			return errSyntax
		}
		s.i += len(lit)
		return nil
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return errSyntax
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return errSyntax
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return nil
}

// name reads a member name (c, at s.i, must be its '"') and its colon.
func (s *scanner) name(c byte) error {
	if c != '"' {
		return errSyntax
	}
	if _, err := s.str(); err != nil {
		return err
	}
	if s.ws() != ':' {
		return errSyntax
	}
	s.i++
	return nil
}

// value reads one whole value inside depth open containers and returns
// it, a slice of the payload.
func (s *scanner) value(depth int) (jsontext.Value, error) {
	c := s.ws()
	start := s.i
	base := len(s.stack)
	for {
		// A value is expected; c, at s.i, is its first byte.
		if c == '{' || c == '[' {
			if depth+len(s.stack)-base >= maxDepth {
				return nil, errSyntax
			}
			s.i++
			s.stack = append(s.stack, c)
			if c = s.ws(); c != s.stack[len(s.stack)-1]+2 {
				if s.stack[len(s.stack)-1] == '{' {
					if err := s.name(c); err != nil {
						return nil, err
					}
					c = s.ws()
				}
				continue
			}
			s.i++ // an empty container
			s.stack = s.stack[:len(s.stack)-1]
		} else if err := s.scalar(c); err != nil {
			return nil, err
		}
		// After a value.
		for {
			if len(s.stack) == base {
				return jsontext.Value(s.b[start:s.i:s.i]), nil
			}
			open := s.stack[len(s.stack)-1]
			c = s.ws()
			if c == open+2 { // '{'+2 is '}', '['+2 is ']'
				s.i++
				s.stack = s.stack[:len(s.stack)-1]
				continue
			}
			if c != ',' {
				return nil, errSyntax
			}
			s.i++
			c = s.ws()
			if open == '{' {
				if err := s.name(c); err != nil {
					return nil, err
				}
				c = s.ws()
			}
			break
		}
	}
}

// elements reads the array at s.i, inside depth open containers, appending
// its elements to rows.
func (s *scanner) elements(rows []jsontext.Value, depth int) ([]jsontext.Value, error) {
	if s.ws() != '[' {
		return nil, errSyntax
	}
	if depth >= maxDepth {
		return nil, errSyntax
	}
	s.i++
	if s.ws() == ']' {
		s.i++
		return rows, nil
	}
	for {
		v, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if len(rows) == cap(rows) { // double: append grows large slices by a quarter
			rows = slices.Grow(rows, max(len(rows), 64))
		}
		rows = append(rows, v)
		switch s.ws() {
		case ',':
			s.i++
		case ']':
			s.i++
			return rows, nil
		default:
			return nil, errSyntax
		}
	}
}
