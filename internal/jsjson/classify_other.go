//go:build !amd64

package jsjson

// fastContainers is false: skip reads every value its own way, and
// ValidUTF8 is utf8.Valid.
var fastContainers = false

func scanBlock(p *byte, inStr, runs uint64) (tokens, inStr1, runs1 uint64, stopped bool) {
	panic("jsjson: scanBlock without AVX2")
}

func asciiPrefix(p []byte) int { panic("jsjson: asciiPrefix without AVX2") }
