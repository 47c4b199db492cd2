package loom

import (
	"bytes"
	"errors"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
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
	errSyntax    = errors.New("loom: invalid JSON")
)

// The readers below go over the bytes once with ifc.Scanner, which reads
// the payload grammar (payloadOptions: duplicate names, invalid UTF-8 and
// escaped lone surrogates allowed) and copies nothing. Stricter options are
// checked by jsontext on the container alone, which it reads in place.
// Their results and error classes (errNotObject or errNotArray, errTrailing,
// any other error for invalid JSON) are those of the jsontext decoder they
// replaced, which bench_members_test.go keeps and compares them with.

// objectMembers returns the members of the JSON object data, in the order
// written, duplicates included, and validates data under opts on the way:
// it must be exactly one JSON object (surrounding whitespace allowed). A
// value that is not an object returns errNotObject, anything after the
// object errTrailing, anything else invalid another error. The values alias
// data.
func objectMembers(data []byte, opts ...jsontext.Options) ([]member, error) {
	var ms []member
	first, err := walk(data, '{', func(name []byte, v jsontext.Value) {
		ms = append(ms, member{name: nameString(name), value: v})
	})
	if err = underOptions(first, err, opts); err != nil {
		return nil, err
	}
	return ms, nil
}

// arrayElements is objectMembers for an array: data must be exactly one
// JSON array, valid under opts. The values alias data.
func arrayElements(data []byte, opts ...jsontext.Options) ([]jsontext.Value, error) {
	var vs []jsontext.Value
	first, err := walk(data, '[', func(_ []byte, v jsontext.Value) { vs = append(vs, v) })
	if err = underOptions(first, err, opts); err != nil {
		return nil, err
	}
	return vs, nil
}

// walk reads data, which must be exactly one JSON object (open '{') or
// array (open '[') in the payload grammar, surrounding whitespace allowed,
// and calls f with each member's raw name (nil in an array) and value, in
// order; both are slices of data. The errors are errNotObject or
// errNotArray when the first token is valid but opens no such container,
// errTrailing when something follows it, else errSyntax. first is what a
// stricter reading must check: the container (when err is nil or
// errTrailing), the first token when it is a scalar (errNotObject or
// errNotArray), else nil.
func walk(data []byte, open byte, f func(name []byte, v jsontext.Value)) (first jsontext.Value, err error) {
	notKind := errNotObject
	if open == '[' {
		notKind = errNotArray
	}
	var s ifc.Scanner
	s.Reset(data)
	switch c := s.Peek(); {
	case c == open:
	case c == '{' || c == '[':
		return nil, notKind
	default:
		v, err := s.Value(0) // a scalar or nothing valid
		if err != nil {
			return nil, errSyntax
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
				return nil, errSyntax
			}
		}
		v, err := s.Value(1)
		if err != nil {
			return nil, errSyntax
		}
		f(name, v)
		switch c = s.Peek(); c {
		case ',':
			s.Advance()
			if c = s.Peek(); c == closing {
				return nil, errSyntax // a trailing comma
			}
		case closing:
		default:
			return nil, errSyntax
		}
	}
	s.Advance()
	first = data[start:s.Offset()]
	if !s.AtEnd() {
		return first, errTrailing
	}
	return first, nil
}

// validPayload reports whether data is exactly one JSON value in the
// payload grammar (payloadOptions), surrounding whitespace allowed.
func validPayload(data []byte) bool {
	var s ifc.Scanner
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
		return errSyntax
	}
	return err
}

// memberName returns the member name raw, read by ifc.Scanner, as a
// comparison with a name in plain ASCII needs it: its bytes between the
// quotes when it has no escape (invalid UTF-8 then matches no such name,
// as its U+FFFD would not), else nameString's.
func memberName(raw []byte) []byte {
	if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 {
		return s
	}
	b, _ := jsontext.AppendUnquote(nil, raw)
	return b
}

// nameString returns the member name raw, read by ifc.Scanner, as
// jsontext's Token.String returns it: unquoted, invalid UTF-8 and lone
// surrogates replaced by U+FFFD.
func nameString(raw []byte) string {
	if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	b, _ := jsontext.AppendUnquote(nil, raw)
	return string(b)
}

// ObjectKeys returns the distinct member names of the JSON object data in
// the order JavaScript's Object.keys enumerates them after JSON.parse (see
// jsKeyOrder), the order in which BuildArgv looks for an unknown key.
// Duplicate names are allowed and listed once. Data that is not exactly
// one JSON object returns a non-nil error.
func ObjectKeys(data []byte) ([]string, error) {
	ms, err := objectMembers(data, jsontext.AllowDuplicateNames(true))
	if err != nil {
		return nil, err
	}
	return jsKeyOrder(ms), nil
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
