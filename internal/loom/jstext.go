package loom

import "unicode/utf8"

// This file holds the JavaScript string semantics the reference harness
// applies and Go does not by default: the \s class and
// String.prototype.trim, and the WHATWG UTF-8 decoder Condense decodes
// stdout with. JSON reading, UTF-16 lengths and Object.keys order are
// package jsjson's.

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

// appendDecodedUTF8 appends b, decoded as the WHATWG UTF-8 decoder does
// with its default settings (what TextDecoder and Node's Buffer#toString
// produce) but without looking for a byte order mark, to out: every
// maximal subpart of an ill-formed sequence becomes one U+FFFD.
func appendDecodedUTF8(out, b []byte) []byte {
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
