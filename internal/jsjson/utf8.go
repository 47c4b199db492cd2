package jsjson

import "unicode/utf8"

// ValidUTF8 reports whether p is valid UTF-8, as utf8.Valid does: the
// ASCII 32 bytes at a time (asciiPrefix), each other sequence on its own.
func ValidUTF8(p []byte) bool {
	if !fastContainers {
		return utf8.Valid(p)
	}
	for len(p) >= 32 {
		p = p[asciiPrefix(p):]
		if len(p) == 0 || p[0] < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size == 1 {
			return false
		}
		p = p[size:]
	}
	return utf8.Valid(p)
}
