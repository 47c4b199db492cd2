package ifc

import (
	"encoding/binary"
	"errors"
)

// scanner is the emitter's reader: a validating JSON tokenizer over one
// byte slice, accepting exactly what jsontext accepts under decodeOptions
// (RFC 8259 grammar, duplicate names and invalid UTF-8 allowed, escaped lone
// surrogates allowed, at most maxDepth nested arrays and objects) but
// without jsontext's per-token bookkeeping, which dominated measuring
// small rows. Returned raw values are slices of the input, byte for byte.
// TestScannerMatchesJSONText holds it to jsontext on generated and mutated
// inputs.
type scanner struct {
	b     []byte
	i     int
	plain bool   // the last string read is its own JavaScript form
	stack []byte // open containers of skip, '{' or '['
}

// maxDepth is jsontext's nesting limit: a value may sit inside at most this
// many arrays and objects, counting its own.
const maxDepth = 10000

var (
	errSyntax = errors.New("ifc: invalid JSON")
	errDepth  = errors.New("ifc: JSON nested too deeply")
)

// strPlain marks the bytes a JSON string holds as they are: not '"', not
// '\\', not a control character.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) reset(b []byte) {
	s.b, s.i = b, 0
	s.stack = s.stack[:0]
}

// ws skips whitespace and returns the next byte, or 0 at the end (0 is
// never valid there either).
func (s *scanner) ws() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// atEnd reports whether only whitespace is left.
func (s *scanner) atEnd() bool {
	return s.ws() == 0 && s.i == len(s.b)
}

// str reads the string at s.i and returns it raw. It sets s.plain when
// the string holds only printable ASCII other than '"' and '\\' (no
// escapes), which is then its own JavaScript form.
func (s *scanner) str() ([]byte, error) {
	b, start := s.b, s.i
	i := s.i + 1
	var seen uint64 // the bytes passed over, or-ed
	s.plain = true
	for {
		// Eight bytes at a time while none of them ends the run.
		for i+8 <= len(b) {
			v := binary.LittleEndian.Uint64(b[i:])
			if hasSpecial(v) {
				break
			}
			seen |= v
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			seen |= uint64(b[i])
			i++
		}
		if i >= len(b) {
			return nil, errSyntax
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			s.plain = s.plain && seen&hiBits == 0
			return b[start:s.i], nil
		case '\\':
			s.plain = false
			if i+1 >= len(b) {
				return nil, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b[min(i+2, len(b)):]); !ok {
					return nil, errSyntax
				}
				i += 6
			default:
				return nil, errSyntax
			}
		default: // a control character
			return nil, errSyntax
		}
	}
}

const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// hasSpecial reports whether one of the eight bytes of v is '"', '\\' or
// a control character (below 0x20).
func hasSpecial(v uint64) bool {
	quote := v ^ ('"' * loBits)
	bslash := v ^ ('\\' * loBits)
	q := (quote - loBits) &^ quote
	bs := (bslash - loBits) &^ bslash
	ctl := (v - 0x20*loBits) &^ v
	return (q|bs|ctl)&hiBits != 0
}

// number reads the number starting at s.i and returns it raw.
func (s *scanner) number() ([]byte, error) {
	b, start := s.b, s.i
	i := s.i
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
		return nil, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, errSyntax
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
			return nil, errSyntax
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return b[start:i], nil
}

// literal reads true, false or null starting at s.i and returns it raw.
func (s *scanner) literal() ([]byte, error) {
	var lit string
	switch s.b[s.i] {
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	default:
		lit = "null"
	}
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return nil, errSyntax
	}
	start := s.i
	s.i += len(lit)
	return s.b[start:s.i], nil
}

// scalar reads the string, number or literal starting with c at s.i.
func (s *scanner) scalar(c byte) ([]byte, error) {
	switch {
	case c == '"':
		return s.str()
	case c == 't' || c == 'f' || c == 'n':
		return s.literal()
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return nil, errSyntax
}

// skip reads one whole value inside depth open containers and returns it
// raw, as jsontext's ReadValue would.
func (s *scanner) skip(depth int) ([]byte, error) {
	c := s.ws()
	start := s.i
	base := len(s.stack)
	for {
		// A value is expected; c, at s.i, is its first byte.
		if c == '{' || c == '[' {
			if depth+len(s.stack)-base >= maxDepth {
				return nil, errDepth
			}
			s.i++
			s.stack = append(s.stack, c)
			if c = s.ws(); c != closer(s.stack[len(s.stack)-1]) {
				if s.stack[len(s.stack)-1] == '{' {
					if err := s.name(c); err != nil {
						return nil, err
					}
					c = s.ws()
				}
				continue
			}
			s.i++ // an empty container
			s.stack = s.stack[:len(s.stack)-1]
		} else if _, err := s.scalar(c); err != nil {
			return nil, err
		}
		// After a value.
		for {
			if len(s.stack) == base {
				return s.b[start:s.i], nil
			}
			open := s.stack[len(s.stack)-1]
			c = s.ws()
			if c == closer(open) {
				s.i++
				s.stack = s.stack[:len(s.stack)-1]
				continue
			}
			if c != ',' {
				return nil, errSyntax
			}
			s.i++
			c = s.ws()
			if open == '{' {
				if err := s.name(c); err != nil {
					return nil, err
				}
				c = s.ws()
			}
			break
		}
	}
}

// name reads a member name (c, at s.i, must be its '"') and the colon
// after it.
func (s *scanner) name(c byte) error {
	if c != '"' {
		return errSyntax
	}
	if _, err := s.str(); err != nil {
		return err
	}
	if s.ws() != ':' {
		return errSyntax
	}
	s.i++
	return nil
}

// closer returns the closing byte of an opening one: '{'+2 is '}' and
// '['+2 is ']'.
func closer(open byte) byte { return open + 2 }
