package jsjson

import "golang.org/x/sys/cpu"

// fastContainers says whether skip may read arrays and objects with
// skipContainer: scanBlock needs AVX2 and PCLMULQDQ.
var fastContainers = cpu.X86.HasAVX2 && cpu.X86.HasPCLMULQDQ

// scanBlock classifies the 64 bytes at p for skipContainer, given whether
// the block before ended inside a string (inStr, all ones or 0) and in a
// run of other bytes (runs, 1 or 0). Without a backslash before it, a
// quote opens or closes a string, so the prefix XOR of the quotes marks
// each opening quote and the bytes after it up to, not including, its
// closing one. The block can be read this way up to its first backslash
// and its first control character that is not whitespace between tokens
// (stopped: there is such a byte). tokens has a bit for each byte before
// that one (the first lowest) that begins a token: a structural byte
// ('{', '}', '[', ']', ':', ',') outside strings, a string's opening
// quote, or the first of a run of other bytes outside strings. inStr1 and
// runs1 are what the next block is given.
//
//go:noescape
func scanBlock(p *byte, inStr, runs uint64) (tokens, inStr1, runs1 uint64, stopped bool)

// asciiPrefix returns where the first byte of p at or above 0x80 is, when
// it is in p's whole 32-byte pieces, or else where those pieces end.
//
//go:noescape
func asciiPrefix(p []byte) int
