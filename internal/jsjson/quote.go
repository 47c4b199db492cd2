package jsjson

import (
	"strings"
	"unicode/utf8"
)

// This file holds quoting: JSON strings written the way JSON.stringify
// writes them, and read back.

const hexDigits = "0123456789abcdef"

// appendRune appends r inside a JSON string the way JSON.stringify does. A
// surrogate code point (only reachable through an escape) is written as a
// lowercase \udXXX escape.
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r >= 0x20 && r < utf8.RuneSelf:
		return append(dst, byte(r))
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20, r >= 0xD800 && r <= 0xDFFF:
		return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
	default:
		return utf8.AppendRune(dst, r)
	}
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	// A run of printable ASCII, as most strings are whole, eight bytes at
	// a time.
	i := 0
	for i+8 <= len(s) {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if specialMask(v)|v&hiBits != 0 {
			break
		}
		i += 8
	}
	dst = append(dst, s[:i]...)
	for i < len(s) {
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf && strPlain[s[j]] {
			j++
		}
		if j > i { // a run written as it is
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		r, w := decodeRune(s[i:])
		dst = appendRune(dst, r)
		i += w
	}
	return append(dst, '"')
}

// AppendQuoted transcodes raw, one JSON string literal including its quotes
// as it appears in the input, to its JavaScript form. When limit >= 0 the
// value is cut to its first limit UTF-16 units if it is longer, dropping a
// surrogate pair the cut would split; it reports whether it cut.
func AppendQuoted(dst, raw []byte, limit int) ([]byte, bool) {
	dst = append(dst, '"')
	s := raw[1 : len(raw)-1]
	units := 0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		if j > i {
			if limit >= 0 && units+(j-i) > limit {
				dst = append(dst, s[i:i+limit-units]...)
				return append(dst, '"'), true
			}
			dst = append(dst, s[i:j]...)
			units += j - i
			i = j
			continue
		}
		var r rune
		var w int
		switch c := s[i]; {
		case c == '\\':
			r, w = unescape(s[i:])
		case c >= utf8.RuneSelf:
			r, w = decodeRune(s[i:])
		default: // a raw control character or quote: not valid JSON, kept safe
			r, w = rune(c), 1
		}
		u := runeUnits(r)
		if limit >= 0 && units+u > limit {
			return append(dst, '"'), true
		}
		units += u
		dst = appendRune(dst, r)
		i += w
	}
	return append(dst, '"'), false
}

// unescape decodes the escape sequence at the start of s. A high surrogate
// escape followed by a low surrogate escape decodes to one code point; any
// other surrogate escape decodes to the lone surrogate itself.
func unescape[B ~string | ~[]byte](s B) (rune, int) {
	if len(s) < 2 {
		return '\\', 1
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		v, ok := hex4(s[2:])
		if !ok {
			return '\\', 1
		}
		if v >= 0xD800 && v <= 0xDBFF && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := hex4(s[8:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (v-0xD800)<<10 + (lo - 0xDC00), 12
			}
		}
		return v, 6
	}
	return '\\', 1
}

func hex4[B ~string | ~[]byte](s B) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var v rune
	for i := range 4 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// Unquote returns the Go string of a JSON string in the writer's form. A
// lone surrogate becomes U+FFFD, the only loss a Go string forces.
func Unquote(text string) string {
	s := text[1 : len(text)-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b = append(b, s[i])
			i++
			continue
		}
		r, w := unescape(s[i:])
		if r >= 0xD800 && r <= 0xDFFF {
			r = utf8.RuneError
		}
		b = utf8.AppendRune(b, r)
		i += w
	}
	return string(b)
}
