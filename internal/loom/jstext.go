package loom

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the JavaScript string and object semantics the reference
// harness applies and Go does not by default: UTF-16 lengths, the \s class
// and String.prototype.trim, the WHATWG UTF-8 decoder, and the order in
// which an object's keys are enumerated.

// utf16Len returns the length of s in UTF-16 code units, as JavaScript's
// String.prototype.length counts it. s is valid UTF-8.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// isJSSpace reports whether r is in JavaScript's \s class, which is also the
// set String.prototype.trim removes: WhiteSpace and LineTerminator of
// ECMA-262. Unlike unicode.IsSpace it excludes U+0085 and includes U+FEFF.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ',
		0x00A0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// isJSTrimmed reports whether s equals s.trim() in JavaScript.
func isJSTrimmed(s string) bool {
	if s == "" {
		return true
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return !isJSSpace(first) && !isJSSpace(last)
}

// hasControl reports whether s holds a character below U+0020.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}

// decodeUTF8 decodes b as the WHATWG UTF-8 decoder does with its default
// settings (what TextDecoder and Node's Buffer#toString produce): one leading
// byte order mark is dropped, and every maximal subpart of an ill-formed
// sequence becomes one U+FFFD. Valid input without a BOM is returned as is.
func decodeUTF8(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return out
}

// maximalSubpart returns the length of the maximal subpart of the ill-formed
// sequence at the start of b (Unicode 3.9, table 3-7): the lead byte plus
// the continuation bytes that are still valid for it. It is at least 1.
func maximalSubpart(b []byte) int {
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

// member is one name/value pair of a JSON object, the value a slice of the
// object's own bytes.
type member struct {
	name  string
	value jsontext.Value
}

var (
	errNotObject = errors.New("loom: not a JSON object")
	errNotArray  = errors.New("loom: not a JSON array")
	errTrailing  = errors.New("loom: data after the JSON value")
)

// objectMembers returns the members of the JSON object data, in the order
// written, duplicates included, and validates data under opts on the way:
// it must be exactly one JSON object (surrounding whitespace allowed). A
// value that is not an object returns errNotObject, anything else invalid a
// syntax error. The values alias data.
func objectMembers(data []byte, opts ...jsontext.Options) ([]member, error) {
	d := jsontext.NewDecoder(bytes.NewBuffer(data), opts...)
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errNotObject
	}
	var ms []member
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // tok is valid only until the next read
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(d.InputOffset())
		ms = append(ms, member{name: name, value: jsontext.Value(data[end-len(v) : end])})
	}
	if err := readEnd(d); err != nil {
		return nil, err
	}
	return ms, nil
}

// arrayElements is objectMembers for an array: data must be exactly one
// JSON array, valid under opts. The values alias data.
func arrayElements(data []byte, opts ...jsontext.Options) ([]jsontext.Value, error) {
	d := jsontext.NewDecoder(bytes.NewBuffer(data), opts...)
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '[' {
		return nil, errNotArray
	}
	var vs []jsontext.Value
	for d.PeekKind() != ']' {
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(d.InputOffset())
		vs = append(vs, jsontext.Value(data[end-len(v):end]))
	}
	if err := readEnd(d); err != nil {
		return nil, err
	}
	return vs, nil
}

// readEnd reads the closing delimiter of the value d is in and requires
// nothing but whitespace after it.
func readEnd(d *jsontext.Decoder) error {
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return errTrailing
	}
	return nil
}

// jsKeyOrder returns the distinct member names of ms in the order
// JavaScript's Object.keys enumerates them after JSON.parse: array-index
// names ("0" ... "4294967294" in canonical form) first, ascending, then the
// other names in order of first appearance.
func jsKeyOrder(ms []member) []string {
	seen := make(map[string]bool, len(ms))
	var index, other []string
	for _, m := range ms {
		if seen[m.name] {
			continue
		}
		seen[m.name] = true
		if _, ok := arrayIndex(m.name); ok {
			index = append(index, m.name)
		} else {
			other = append(other, m.name)
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

// unquote returns the Go string of the JSON string v.
func unquote(v jsontext.Value) (string, error) {
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}
