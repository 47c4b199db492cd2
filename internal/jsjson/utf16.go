package jsjson

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// This file holds UTF-16 lengths, the unit every bound of the result is
// stated in, and the UTF-8 decoding they count with.

// UTF16Len returns the length of s in UTF-16 code units, the unit every bound
// in SEMANTICS is stated in. An invalid UTF-8 sequence counts as the one
// U+FFFD it decodes to.
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, w := decodeRune(s[i:])
		n += runeUnits(r)
		i += w
	}
	return n
}

// CutString returns the first limit UTF-16 units of s and true when s is
// longer than that, else s and false (a string of exactly limit units is
// untouched). A cut that would split a surrogate pair drops the
// dangling high half, so the result may be one unit short (Gateway
// decision 1). Invalid UTF-8 is counted as U+FFFD but kept as given.
func CutString(s string, limit int) (string, bool) {
	n := 0
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = decodeRune(s[i:])
		}
		u := runeUnits(r)
		if n+u > limit {
			return s[:i], true
		}
		n += u
		i += w
	}
	return s, false
}

// UTF16LenBytes counts the UTF-16 units of b, which must be valid UTF-8 (as
// everything the writer produces is): a unit for each byte that does not
// continue a sequence, and one more for each that begins a four-byte one.
// ASCII runs are passed 32 bytes at a time where the machine allows
// (asciiPrefix), every other eight bytes counted at once.
func UTF16LenBytes(b []byte) int {
	n := 0
	if fastContainers {
		for len(b) >= 32 {
			k := asciiPrefix(b)
			n, b = n+k, b[k:]
			if len(b) < 32 {
				break
			}
			n, b = n+utf16Word(binary.LittleEndian.Uint64(b)), b[8:]
		}
	}
	for len(b) >= 8 {
		n, b = n+utf16Word(binary.LittleEndian.Uint64(b)), b[8:]
	}
	return n + utf16LenTail(b)
}

// utf16Word is utf16LenTail of the eight bytes of v: 8, less the bytes
// that continue a sequence (10xxxxxx: bit 7 set, bit 6 clear), plus those
// that begin a four-byte one (11110xxx and above: bits 7 to 4 set).
func utf16Word(v uint64) int {
	if v&hiBits == 0 {
		return 8
	}
	cont := v &^ (v << 1) & hiBits
	four := v & (v << 1) & (v << 2) & (v << 3) & hiBits
	return 8 - bits.OnesCount64(cont) + bits.OnesCount64(four)
}

func utf16LenTail(b []byte) int {
	n := 0
	for _, c := range b {
		if c&0xC0 != 0x80 {
			n++
		}
		if c >= 0xF0 {
			n++
		}
	}
	return n
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// decodeRune decodes the first character of b, which must not be empty. An
// invalid sequence decodes to U+FFFD and consumes its maximal subpart, as
// the WHATWG UTF-8 decoder does (Go's own decoder consumes one byte).
func decodeRune[B ~string | ~[]byte](b B) (rune, int) {
	c := b[0]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	var r rune
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need, r = 1, rune(c&0x1F)
	case c == 0xE0:
		need, r, lo = 2, rune(c&0x0F), 0xA0
	case c == 0xED:
		need, r, hi = 2, rune(c&0x0F), 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need, r = 2, rune(c&0x0F)
	case c == 0xF0:
		need, r, lo = 3, rune(c&0x07), 0x90
	case c >= 0xF1 && c <= 0xF3:
		need, r = 3, rune(c&0x07)
	case c == 0xF4:
		need, r, hi = 3, rune(c&0x07), 0x8F
	default:
		return utf8.RuneError, 1
	}
	n := 1
	for ; need > 0; need-- {
		if n >= len(b) || b[n] < lo || b[n] > hi {
			return utf8.RuneError, n
		}
		r = r<<6 | rune(b[n]&0x3F)
		lo, hi = 0x80, 0xBF
		n++
	}
	return r, n
}
