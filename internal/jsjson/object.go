package jsjson

import (
	"bytes"
	"errors"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the readers of whole objects and arrays built on Scanner
// and the order in which JavaScript's Object.keys enumerates an object's
// names.

// Member is one name/value pair of a JSON object, the value a slice of the
// object's own bytes.
type Member struct {
	Name  string
	Value jsontext.Value
}

// ErrNotArray is the error of Elements for a valid value that is not an
// array.
var ErrNotArray = errors.New("jsjson: not a JSON array")

// The readers below go over the bytes once with Scanner, which reads
// the payload grammar (DecodeOptions: duplicate names, invalid UTF-8 and
// escaped lone surrogates allowed) and copies nothing. Stricter options are
// checked by jsontext on the container alone, which it reads in place.
// Their results and error classes (ErrNotObject or ErrNotArray, ErrTrailing,
// any other error for invalid JSON) are those of a jsontext decoder reading
// every token, which package loomref's plaininterpret_test.go holds them
// to.

// Members returns the members of the JSON object data, in the order
// written, duplicates included, and validates data under opts on the way:
// it must be exactly one JSON object (surrounding whitespace allowed). A
// value that is not an object returns ErrNotObject, anything after the
// object ErrTrailing, anything else invalid another error. The values alias
// data.
func Members(data []byte, opts ...jsontext.Options) ([]Member, error) {
	var ms []Member
	first, err := Walk(data, '{', func(name []byte, v jsontext.Value) {
		ms = append(ms, Member{Name: NameString(name), Value: v})
	})
	if err = underOptions(first, err, opts); err != nil {
		return nil, err
	}
	return ms, nil
}

// Elements is Members for an array: data must be exactly one
// JSON array, valid under opts. The values alias data.
func Elements(data []byte, opts ...jsontext.Options) ([]jsontext.Value, error) {
	var vs []jsontext.Value
	first, err := Walk(data, '[', func(_ []byte, v jsontext.Value) { vs = append(vs, v) })
	if err = underOptions(first, err, opts); err != nil {
		return nil, err
	}
	return vs, nil
}

// walk reads data, which must be exactly one JSON object (open '{') or
// array (open '[') in the payload grammar, surrounding whitespace allowed,
// and calls f with each member's raw name (nil in an array) and value, in
// order; both are slices of data. The errors are ErrNotObject or
// ErrNotArray when the first token is valid but opens no such container,
// ErrTrailing when something follows it, else ErrSyntax. first is what a
// stricter reading must check: the container (when err is nil or
// ErrTrailing), the first token when it is a scalar (ErrNotObject or
// ErrNotArray), else nil.
func Walk(data []byte, open byte, f func(name []byte, v jsontext.Value)) (first jsontext.Value, err error) {
	notKind := ErrNotObject
	if open == '[' {
		notKind = ErrNotArray
	}
	var s Scanner
	s.Reset(data)
	switch c := s.Peek(); {
	case c == open:
	case c == '{' || c == '[':
		return nil, notKind
	default:
		v, err := s.Value(0) // a scalar or nothing valid
		if err != nil {
			return nil, ErrSyntax
		}
		return v, notKind
	}
	start := s.Offset()
	s.Advance()
	closing := open + 2 // '{'+2 is '}', '['+2 is ']'
	c := s.Peek()
	for c != closing {
		var name []byte
		if open == '{' {
			if name, err = s.Name(); err != nil {
				return nil, ErrSyntax
			}
		}
		v, err := s.Value(1)
		if err != nil {
			return nil, ErrSyntax
		}
		f(name, v)
		switch c = s.Peek(); c {
		case ',':
			s.Advance()
			if c = s.Peek(); c == closing {
				return nil, ErrSyntax // a trailing comma
			}
		case closing:
		default:
			return nil, ErrSyntax
		}
	}
	s.Advance()
	first = data[start:s.Offset()]
	if !s.AtEnd() {
		return first, ErrTrailing
	}
	return first, nil
}

// Valid reports whether data is exactly one JSON value in the
// payload grammar (JSON.parse's: repeated names and escaped lone
// surrogates allowed), surrounding whitespace allowed.
func Valid(data []byte) bool {
	var s Scanner
	s.Reset(data)
	_, err := s.Value(0)
	return err == nil && s.AtEnd()
}

// underOptions is the error of a walk that returned first and err under
// opts, which are at most as permissive as the payload grammar walk reads
// (jsontext's defaults reject duplicate names and invalid UTF-8): where
// walk found a valid container or first token that opts refuse, invalid
// JSON, as a decoder with opts would have stopped there.
func underOptions(first jsontext.Value, err error, opts []jsontext.Options) error {
	if first != nil && !first.IsValid(opts...) {
		return ErrSyntax
	}
	return err
}

// MemberName returns the member name raw, read by Scanner, as a
// comparison with a name in plain ASCII needs it: its bytes between the
// quotes when it has no escape (invalid UTF-8 then matches no such name,
// as its U+FFFD would not), else NameString's.
func MemberName(raw []byte) []byte {
	if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 {
		return s
	}
	b, _ := jsontext.AppendUnquote(nil, raw)
	return b
}

// NameString returns the member name raw, read by Scanner, as
// jsontext's Token.String returns it: unquoted, invalid UTF-8 and lone
// surrogates replaced by U+FFFD.
func NameString(raw []byte) string {
	if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	b, _ := jsontext.AppendUnquote(nil, raw)
	return string(b)
}

// ObjectKeys returns the distinct member names of the JSON object data in
// the order JavaScript's Object.keys enumerates them after JSON.parse (see
// KeyOrder), the order in which BuildArgv looks for an unknown key.
// Duplicate names are allowed and listed once. Data that is not exactly
// one JSON object returns a non-nil error.
func ObjectKeys(data []byte) ([]string, error) {
	ms, err := Members(data, jsontext.AllowDuplicateNames(true))
	if err != nil {
		return nil, err
	}
	return KeyOrder(ms), nil
}

// KeyOrder returns the distinct member names of ms in the order
// JavaScript's Object.keys enumerates them after JSON.parse: array-index
// names ("0" ... "4294967294" in canonical form) first, ascending, then the
// other names in order of first appearance.
func KeyOrder(ms []Member) []string {
	seen := make(map[string]bool, len(ms))
	var index, other []string
	for _, m := range ms {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		if _, ok := arrayIndex(m.Name); ok {
			index = append(index, m.Name)
		} else {
			other = append(other, m.Name)
		}
	}
	sort.Slice(index, func(i, j int) bool {
		a, _ := arrayIndex(index[i])
		b, _ := arrayIndex(index[j])
		return a < b
	})
	return append(index, other...)
}

// arrayIndex reports whether name is a canonical array index in
// ECMAScript's sense: the decimal form of an integer in [0, 2^32-2].
func arrayIndex(name string) (uint64, bool) {
	if name == "" || len(name) > 10 || (len(name) > 1 && name[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 64)
	if err != nil || n > 1<<32-2 {
		return 0, false
	}
	return n, true
}

// UnquoteValue returns the Go string of the JSON string v, as jsontext
// reads it: an error for invalid UTF-8 or a lone surrogate, which are
// replaced by U+FFFD in the string returned.
func UnquoteValue(v jsontext.Value) (string, error) {
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}
