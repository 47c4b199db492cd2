package jsjson

import "math/bits"

// skipContainer is skip's fast way through the array or object opening at
// b[i] inside depth open containers. It classifies the input 64 bytes at
// a time (scanBlock), finds the strings from their quotes, and walks
// only the tokens: the structural bytes outside strings, the strings'
// opening quotes and the first byte of each run of other bytes outside
// strings, each such run read as a number or a literal. The grammar is
// jumps between the states of the walk (a value expected, a value or ']',
// a member name or '}', a member name, ':', ',' or the closer). It
// returns where the value ends and true, or false when it cannot tell
// this way: an escape or a control character before the value ends, a
// byte no token may begin with, a token out of place, nesting deeper than
// 63 or near MaxDepth, or input that ends first. skip then reads the
// value its own way, errors and their offsets included; when
// skipContainer returns true, skip's own way ends at the same byte
// (TestSkipContainerMatches, FuzzSkipContainerMatches).
//
// With label not nil, it sets *label to where the value of the last
// member of the outermost object named "ifc" is, without the whitespace
// around it (RowValue), and leaves it as it was when there is none. It
// reads no escape, so such a name is the five bytes "ifc" with its
// quotes.
func skipContainer(b []byte, i, depth int, label *span) (int, bool) {
	if depth >= MaxDepth-64 {
		return 0, false
	}
	var bl blocks
	bl.b, bl.base = b, i-64
	var kinds uint64 // the open containers, innermost lowest, 1 an object
	n := 0
	var tokens uint64 // the tokens of the block at base not yet walked
	var base, t, pos int
	var c byte
	inLabel := false // the value of an "ifc" member of the outermost object is being read, from label.lo

	// Each state takes the next token: from the block, or from the next
	// block when this one has none left.
value:
	for tokens == 0 {
		if !bl.next() {
			return 0, false
		}
		tokens, base = bl.tokens, bl.base
	}
	t = bits.TrailingZeros64(tokens)
	tokens &= tokens - 1
	pos = base + t
	c = b[pos]
	switch c {
	case '{':
		goto open
	case '[':
		goto open
	case '"':
		goto next
	}
	goto scalar

valueOrClose:
	for tokens == 0 {
		if !bl.next() {
			return 0, false
		}
		tokens, base = bl.tokens, bl.base
	}
	t = bits.TrailingZeros64(tokens)
	tokens &= tokens - 1
	pos = base + t
	c = b[pos]
	switch c {
	case ']':
		goto close
	case '{':
		goto open
	case '[':
		goto open
	case '"':
		goto next
	}
	goto scalar

nameOrClose:
	for tokens == 0 {
		if !bl.next() {
			return 0, false
		}
		tokens, base = bl.tokens, bl.base
	}
	t = bits.TrailingZeros64(tokens)
	tokens &= tokens - 1
	pos = base + t
	c = b[pos]
	if c == '"' {
		goto colon
	}
	if c == '}' {
		goto close
	}
	return 0, false

name:
	for tokens == 0 {
		if !bl.next() {
			return 0, false
		}
		tokens, base = bl.tokens, bl.base
	}
	t = bits.TrailingZeros64(tokens)
	tokens &= tokens - 1
	pos = base + t
	if b[pos] != '"' {
		return 0, false
	}

colon: // a member name, its quote at pos, was read: ':' must follow
	for tokens == 0 {
		if !bl.next() {
			return 0, false
		}
		tokens, base = bl.tokens, bl.base
	}
	t = bits.TrailingZeros64(tokens)
	tokens &= tokens - 1
	if b[base+t] != ':' {
		return 0, false
	}
	if label != nil && n == 1 && base+t-pos >= len(`"ifc"`) && string(b[pos:pos+len(`"ifc"`)]) == `"ifc"` {
		inLabel = true
		label.lo = wsEnd(b, base+t+1)
	}
	goto value

open: // '{' or '[' at pos
	if n >= 63 {
		return 0, false
	}
	kinds <<= 1
	n++
	if c == '{' {
		kinds |= 1
		goto nameOrClose
	}
	goto valueOrClose

scalar: // a number or literal at pos: the run of other bytes must be it whole
	{
		k := -1
		switch {
		case c == 't' || c == 'f' || c == 'n':
			k = literalEnd(b, pos)
		case c == '-' || '0' <= c && c <= '9':
			k = numberEnd(b, pos)
		}
		if k < 0 || k >= len(b) || !endsScalar[b[k]] {
			return 0, false
		}
	}

next: // a value was read: ',' or the closer must follow
	for tokens == 0 {
		if !bl.next() {
			return 0, false
		}
		tokens, base = bl.tokens, bl.base
	}
	t = bits.TrailingZeros64(tokens)
	tokens &= tokens - 1
	pos = base + t
	c = b[pos]
	if inLabel && n == 1 { // the label ends before the whitespace before pos
		inLabel = false
		label.hi = pos
		for isSpace(b[label.hi-1]) {
			label.hi--
		}
	}
	if c == ',' {
		if kinds&1 == 1 {
			goto name
		}
		goto value
	}
	if c != '}'-byte(kinds&1^1)*('}'-']') {
		return 0, false
	}

close: // the closer of the innermost container at pos
	kinds >>= 1
	n--
	if n == 0 {
		return pos + 1, true
	}
	goto next
}

// blocks is skipContainer's classification of its input, a block of 64
// bytes at a time (scanBlock).
type blocks struct {
	b           []byte
	base        int    // where the block begins in b
	tokens      uint64 // the block's tokens, a bit a byte
	inStr, runs uint64 // carried from one block to the next
	stopped     bool   // the block could not be read to its end
	pad         [64]byte
}

// next classifies the next block and reports whether there is one that
// the walk may go on into.
func (bl *blocks) next() bool {
	if bl.stopped { // the value goes on past where the block could be read
		return false
	}
	bl.base += 64
	p := &bl.pad[0]
	switch {
	case bl.base+64 <= len(bl.b):
		p = &bl.b[bl.base]
	case bl.base < len(bl.b):
		// The last block, padded with whitespace: no token begins in
		// the padding, and a string it leaves open stays open.
		for k := copy(bl.pad[:], bl.b[bl.base:]); k < 64; k++ {
			bl.pad[k] = ' '
		}
	default:
		return false
	}
	bl.tokens, bl.inStr, bl.runs, bl.stopped = scanBlock(p, bl.inStr, bl.runs)
	return true
}

// endsScalar marks the bytes a number or literal may be followed by:
// whitespace, a structural byte or a quote (which the walk then refuses
// in its place).
var endsScalar = func() (t [256]bool) {
	for _, c := range []byte(" \t\n\r{}[]:,\"") {
		t[c] = true
	}
	return t
}()

// isSpace reports whether c is whitespace between JSON tokens.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
