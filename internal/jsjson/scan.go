package jsjson

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"unicode/utf8"
)

// Scanner is a validating JSON reader over one byte slice, the one both
// the gateway's payload reading (package loom's Condense, and the
// reference reading in loomref) and this package's Writer use. It accepts exactly what jsontext accepts
// with AllowDuplicateNames and AllowInvalidUTF8 (RFC 8259 grammar,
// duplicate names and invalid UTF-8 allowed, escaped lone surrogates
// allowed, at most 10,000 nested arrays and objects, jsontext's limit) but
// without jsontext's per-token bookkeeping and without copying: every raw
// value it returns is a slice of the input, byte for byte.
// TestScannerMatchesJSONText, here and in package loom, holds it to
// jsontext on generated and mutated inputs.
//
// A Scanner reads forward only. Peek, Advance, Name and Value read the
// tokens of one level; Value reads a whole value at once. The zero value
// is a Scanner over no input; Reset points it at one. A Scanner is not
// safe for concurrent use.
type Scanner struct {
	b       []byte
	i       int
	escaped bool   // the last string read has an escape
	ascii   bool   // the last string read is ASCII
	stack   []byte // open containers of skip beyond its innermost 64
}

// MaxDepth is jsontext's nesting limit: a value may sit inside at most this
// many arrays and objects, counting its own.
const MaxDepth = 10000

var (
	ErrSyntax = errors.New("jsjson: invalid JSON")
	ErrDepth  = errors.New("jsjson: JSON nested too deeply")
)

// Reset makes s read b from its start.
func (s *Scanner) Reset(b []byte) { s.reset(b) }

// Peek skips whitespace and returns the next byte without reading it, or 0
// at the end of the input (0 is never valid JSON either).
func (s *Scanner) Peek() byte { return s.ws() }

// Advance reads the byte Peek returned: a delimiter ('{', '[', ',', '}',
// ']') the caller has checked. At the end of the input it does nothing.
func (s *Scanner) Advance() {
	if s.i < len(s.b) {
		s.i++
	}
}

// AtEnd reports whether only whitespace is left.
func (s *Scanner) AtEnd() bool { return s.atEnd() }

// Offset returns how many bytes of the input s has read: whitespace Peek
// skipped included.
func (s *Scanner) Offset() int { return s.i }

// Name reads a member name and the colon after it and returns the name
// raw, quotes and escapes included. It fails unless a string is next.
func (s *Scanner) Name() ([]byte, error) {
	if s.ws() != '"' {
		return nil, ErrSyntax
	}
	raw, err := s.str()
	if err != nil {
		return nil, err
	}
	if s.ws() != ':' {
		return nil, ErrSyntax
	}
	s.i++
	return raw, nil
}

// Value reads one whole value that sits inside depth open arrays and
// objects and returns it raw, without the whitespace around it, as
// jsontext's ReadValue would; the result's capacity is its length.
func (s *Scanner) Value(depth int) ([]byte, error) {
	v, err := s.skip(depth)
	return v[:len(v):len(v)], err
}

// strPlain marks the bytes a JSON string holds as they are: not '"', not
// '\\', not a control character.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *Scanner) reset(b []byte) {
	s.b, s.i = b, 0
	s.stack = s.stack[:0]
}

// ws skips whitespace and returns the next byte, or 0 at the end (0 is
// never valid there either).
func (s *Scanner) ws() byte {
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
		s.i++
	}
	return 0
}

// atEnd reports whether only whitespace is left.
func (s *Scanner) atEnd() bool {
	return s.ws() == 0 && s.i == len(s.b)
}

// str reads the string at s.i and returns it raw, noting for verbatim
// whether it has escapes and non-ASCII bytes.
func (s *Scanner) str() ([]byte, error) {
	start := s.i
	if !s.scanStr() {
		return nil, ErrSyntax
	}
	return s.b[start:s.i], nil
}

// scanStr is str for a caller that needs no raw value: it reads the
// string at s.i and reports whether it is valid.
func (s *Scanner) scanStr() bool {
	b := s.b
	i := s.i + 1
	var seen uint64 // the bytes passed over, or-ed
	s.escaped = false
	for {
		// Eight bytes at a time while none of them ends the run, then
		// straight to the first that does; a byte at a time near the end
		// of the input.
		for {
			if i+8 > len(b) {
				for i < len(b) && strPlain[b[i]] {
					seen |= uint64(b[i])
					i++
				}
				if i >= len(b) {
					return false
				}
				break
			}
			v := binary.LittleEndian.Uint64(b[i : i+8])
			if m := specialMask(v); m != 0 {
				seen |= v & (m&-m - 1) // the bytes before the special one
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			seen |= v
			i += 8
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			s.ascii = seen&hiBits == 0
			return true
		case '\\':
			s.escaped = true
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b[min(i+2, len(b)):]); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

// PlainLen returns the length of the longest prefix of b that a JSON
// string holds as it is: no '"', no '\\' and no control character.
func PlainLen(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && strPlain[b[i]] {
		i++
	}
	return i
}

// verbatim reports whether raw, the string str just read, is its own
// JavaScript form: no escapes and valid UTF-8 (JSON.stringify escapes
// nothing else a JSON string may hold raw).
func (s *Scanner) verbatim(raw []byte) bool {
	return !s.escaped && (s.ascii || utf8.Valid(raw[1:len(raw)-1]))
}

const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// specialMask returns, for the eight bytes of v (the first lowest), a word
// whose lowest set bit is the high bit of the first byte that is '"', '\\'
// or a control character (below 0x20), and 0 when there is none. Bits above
// the lowest may be set for bytes that are not special.
func specialMask(v uint64) uint64 {
	// '"' xor 2 is ' ', so after flipping that bit the quote and the
	// control characters are the bytes below '!' (flipping it keeps a
	// control character below ' ', and moves ' ' itself to '"').
	qc := v ^ (0x02 * loBits)
	qc = (qc - '!'*loBits) &^ qc
	bs := v ^ ('\\' * loBits)
	bs = (bs - loBits) &^ bs
	return (qc | bs) & hiBits
}

// scanNumber reads the number at s.i and reports whether it is valid.
func (s *Scanner) scanNumber() bool {
	i := numberEnd(s.b, s.i)
	if i < 0 {
		return false
	}
	s.i = i
	return true
}

// numberEnd returns where the number at b[i] ends, or -1 when none starts
// there.
func numberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i++
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	return i
}

// scanLiteral reads true, false or null at s.i and reports whether it is
// one of them.
func (s *Scanner) scanLiteral() bool {
	i := literalEnd(s.b, s.i)
	if i < 0 {
		return false
	}
	s.i = i
	return true
}

// literalEnd returns where the literal true, false or null at b[i] ends,
// or -1 when none is there; b[i] must be 't', 'f' or 'n'.
func literalEnd(b []byte, i int) int {
	var lit string
	switch b[i] {
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	default:
		lit = "null"
	}
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanScalar reads the string, number or literal starting with c at s.i
// and reports whether it is valid.
func (s *Scanner) scanScalar(c byte) bool {
	switch {
	case c == '"':
		return s.scanStr()
	case c == 't' || c == 'f' || c == 'n':
		return s.scanLiteral()
	case c == '-' || '0' <= c && c <= '9':
		return s.scanNumber()
	}
	return false
}

// scalar reads the string, number or literal starting with c at s.i and
// returns it raw.
func (s *Scanner) scalar(c byte) ([]byte, error) {
	start := s.i
	if !s.scanScalar(c) {
		return nil, ErrSyntax
	}
	return s.b[start:s.i], nil
}

// stringTail returns where the string b[i] is inside of ends (past its
// closing quote), or -1 when it is not a valid one: scanStr without the
// notes the writer reads (escapes, ASCII), from inside the string.
func stringTail(b []byte, i int) int {
	for {
		// Eight bytes at a time while none of them ends the run, then
		// straight to the first that does; a byte at a time near the end
		// of the input.
		for {
			if i+8 > len(b) {
				for i < len(b) && strPlain[b[i]] {
					i++
				}
				if i >= len(b) {
					return -1
				}
				break
			}
			if m := specialMask(binary.LittleEndian.Uint64(b[i : i+8])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b[min(i+2, len(b)):]); !ok {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// wsEnd returns where the whitespace at b[i] ends: at the next byte that
// is not whitespace, or at len(b).
func wsEnd(b []byte, i int) int {
	for i < len(b) {
		c := b[i]
		if c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
		i++
	}
	return i
}

// skip reads one whole value inside depth open containers and returns it
// raw, as jsontext's ReadValue would: an array or object by skipContainer
// where it can tell, anything else, or what it cannot tell, by skipOwn.
// On an error s.i is where the token that failed begins.
func (s *Scanner) skip(depth int) ([]byte, error) {
	i := wsEnd(s.b, s.i)
	if fastContainers && i < len(s.b) && (s.b[i] == '{' || s.b[i] == '[') {
		if end, ok := skipContainer(s.b, i, depth, nil); ok {
			s.i = end
			return s.b[i:end], nil
		}
	}
	s.i = i // the whitespace is read once
	return s.skipOwn(depth)
}

// RowValue is Value for a row, the value of a member of a row list: when
// it is an object that the fast way through containers reads
// (skipContainer), it reports besides where its label is, as
// Writer.Row reads it (RowScan.IFC): v[lo:hi] is the value of its last
// own member whose name, in the writer's form, is "ifc", lo == hi when
// it has none; found is then true. Otherwise found is false and nothing
// is told of the label.
func (s *Scanner) RowValue(depth int) (v []byte, lo, hi int, found bool, err error) {
	i := wsEnd(s.b, s.i)
	if !fastContainers || i >= len(s.b) || s.b[i] != '{' {
		v, err = s.Value(depth)
		return v, 0, 0, false, err
	}
	label := span{-1, -1}
	end, ok := skipContainer(s.b, i, depth, &label)
	if !ok {
		v, err = s.Value(depth)
		return v, 0, 0, false, err
	}
	s.i = end
	v = s.b[i:end:end]
	if label.lo < 0 {
		return v, 0, 0, true, nil
	}
	return v, label.lo - i, label.hi - i, true, nil
}

// skipOwn reads one whole value inside depth open containers and returns it
// raw, as jsontext's ReadValue would. It is the validating scan of every
// scalar and of every container skipContainer cannot read, so it is written for speed: the offset in
// a local, strings scanned in place eight bytes at a time without the
// notes scanStr takes for the writer, and the grammar as jumps between
// three states (a value expected, after a value, a member name
// expected). On an error s.i is where the token that failed begins.
func (s *Scanner) skipOwn(depth int) ([]byte, error) {
	b := s.b
	i := wsEnd(b, s.i)
	start := i
	// The containers open in the value: n of them, the innermost 64 in
	// kinds (innermost lowest, 1 for an object), the outer ones beyond
	// those in s.stack, so that most values need no memory.
	var kinds uint64
	n := 0
	s.stack = s.stack[:0]
	var c byte
	var k int
	var m uint64

value: // a value is expected at b[i]
	if i >= len(b) {
		goto fail
	}
	c = b[i]
	switch {
	case c == '{' || c == '[':
		if depth+n >= MaxDepth {
			s.i = i
			return nil, ErrDepth
		}
		i++
		if n >= 64 {
			s.stack = append(s.stack, byte(kinds>>63))
		}
		kinds <<= 1
		if c == '{' {
			kinds |= 1
		}
		n++
		if i < len(b) && b[i] <= ' ' {
			i = wsEnd(b, i)
		}
		if i < len(b) && b[i] == Closer(c) { // an empty container
			i++
			kinds, n = s.pop(kinds, n)
			goto after
		}
		if c == '{' {
			goto name
		}
		goto value
	case c == '"':
		// Eight bytes at a time to the first quote, backslash or control
		// character: the string's end, in most.
		k = i + 1
		for {
			if k+8 > len(b) {
				k = stringTail(b, k)
				break
			}
			if m = specialMask(binary.LittleEndian.Uint64(b[k : k+8])); m == 0 {
				k += 8
				continue
			}
			k += bits.TrailingZeros64(m) >> 3
			if b[k] == '"' {
				k++
			} else {
				k = stringTail(b, k)
			}
			break
		}
	case c == 't' || c == 'f' || c == 'n':
		k = literalEnd(b, i)
	case c == '-' || '0' <= c && c <= '9':
		k = numberEnd(b, i)
	default:
		k = -1
	}
	if k < 0 {
		goto fail
	}
	i = k

after: // a value ended at b[i]
	if n == 0 {
		s.i = i
		return b[start:i], nil
	}
	if i < len(b) && b[i] <= ' ' {
		i = wsEnd(b, i)
	}
	if i >= len(b) {
		goto fail
	}
	c = b[i]
	if kinds&1 == 1 {
		switch c {
		case ',':
			i++
			if i < len(b) && b[i] <= ' ' {
				i = wsEnd(b, i)
			}
			goto name
		case '}':
			i++
			kinds, n = s.pop(kinds, n)
			goto after
		}
		goto fail
	}
	switch c {
	case ',':
		i++
		if i < len(b) && b[i] <= ' ' {
			i = wsEnd(b, i)
		}
		goto value
	case ']':
		i++
		kinds, n = s.pop(kinds, n)
		goto after
	}
	goto fail

name: // a member name is expected at b[i], then its colon
	if i >= len(b) || b[i] != '"' {
		goto fail
	}
	k = i + 1
	for {
		if k+8 > len(b) {
			k = stringTail(b, k)
			break
		}
		if m = specialMask(binary.LittleEndian.Uint64(b[k : k+8])); m == 0 {
			k += 8
			continue
		}
		k += bits.TrailingZeros64(m) >> 3
		if b[k] == '"' {
			k++
		} else {
			k = stringTail(b, k)
		}
		break
	}
	if k < 0 {
		goto fail
	}
	if k >= len(b) || b[k] != ':' {
		if k = wsEnd(b, k); k >= len(b) || b[k] != ':' {
			goto fail
		}
	}
	i = k + 1
	if i < len(b) && b[i] <= ' ' {
		i = wsEnd(b, i)
	}
	goto value

fail:
	s.i = i
	return nil, ErrSyntax
}

// pop closes the innermost of skip's n open containers.
func (s *Scanner) pop(kinds uint64, n int) (uint64, int) {
	kinds >>= 1
	n--
	if n >= 64 {
		kinds |= uint64(s.stack[len(s.stack)-1]) << 63
		s.stack = s.stack[:len(s.stack)-1]
	}
	return kinds, n
}

// Closer returns the closing byte of an opening one: '{'+2 is '}' and
// '['+2 is ']'.
func Closer(open byte) byte { return open + 2 }
