package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// ErrNotCanonical is what a record or payload whose bytes are not their own
// canonical form answers.
var ErrNotCanonical = errors.New("receipt: not in canonical form")

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of
// the one JSON value v: no whitespace, object members sorted by their
// names' UTF-16 code units, strings as ECMAScript's JSON.stringify writes
// them, numbers as ECMAScript's Number.prototype.toString writes the
// IEEE-754 double they parse to. v must be I-JSON: a duplicate member
// name, invalid UTF-8, a lone surrogate, or a number outside the doubles
// is an error.
func Canonical(v []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	out, err := appendCanonical(nil, dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil, errors.New("receipt: canonical: data after the JSON value")
	}
	return out, nil
}

// IsCanonical reports whether v is its own canonical form.
func IsCanonical(v []byte) bool {
	c, err := Canonical(v)
	return err == nil && bytes.Equal(c, v)
}

type member struct {
	name string
	key  []uint16
	val  []byte
}

func appendCanonical(dst []byte, dec *jsontext.Decoder) ([]byte, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, fmt.Errorf("receipt: canonical: %w", err)
	}
	switch tok.Kind() {
	case 'n', 't', 'f':
		return append(dst, tok.String()...), nil
	case '"':
		return jsjson.AppendString(dst, tok.String()), nil
	case '0':
		f, err := tok.Float()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errors.New("receipt: canonical: number out of range")
		}
		return AppendNumber(dst, f), nil
	case '[':
		dst = append(dst, '[')
		for i := 0; dec.PeekKind() != ']'; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCanonical(dst, dec); err != nil {
				return nil, err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, fmt.Errorf("receipt: canonical: %w", err)
		}
		return append(dst, ']'), nil
	case '{':
		var ms []member
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, fmt.Errorf("receipt: canonical: %w", err)
			}
			n := name.String() // the token holds until the next read
			val, err := appendCanonical(nil, dec)
			if err != nil {
				return nil, err
			}
			ms = append(ms, member{name: n, key: utf16.Encode([]rune(n)), val: val})
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, fmt.Errorf("receipt: canonical: %w", err)
		}
		slices.SortFunc(ms, func(a, b member) int { return slices.Compare(a.key, b.key) })
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsjson.AppendString(dst, m.name)
			dst = append(dst, ':')
			dst = append(dst, m.val...)
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("receipt: canonical: unexpected %v", tok.Kind())
}

// AppendNumber appends f as ECMAScript's Number.prototype.toString writes
// it (RFC 8785, section 3.2.2.3): the shortest digits that read back as f,
// in plain notation from 1e-6 to below 1e21, else in exponent notation
// with no leading zero in the exponent; -0 is 0.
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	dst = append(dst, mant...)
	dst = append(dst, 'e', sign)
	return append(dst, exp...)
}

// object builds a canonical JSON object from members whose values are
// already canonical: Bytes sorts them. Names are the package's own,
// ASCII, so their UTF-16 order is their byte order.
type object struct{ ms []member }

func (o *object) raw(name string, v []byte) { o.ms = append(o.ms, member{name: name, val: v}) }
func (o *object) str(name, v string)        { o.raw(name, jsjson.AppendString(nil, v)) }
func (o *object) int(name string, v int64)  { o.raw(name, strconv.AppendInt(nil, v, 10)) }
func (o *object) bool(name string, v bool)  { o.raw(name, strconv.AppendBool(nil, v)) }

// strOpt adds a string member only when v is not "".
func (o *object) strOpt(name, v string) {
	if v != "" {
		o.str(name, v)
	}
}

// json adds v, any JSON value, canonicalized.
func (o *object) json(name string, v []byte) error {
	c, err := Canonical(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	o.raw(name, c)
	return nil
}

func (o *object) bytes() []byte {
	slices.SortFunc(o.ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out := []byte{'{'}
	for i, m := range o.ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsjson.AppendString(out, m.name)
		out = append(out, ':')
		out = append(out, m.val...)
	}
	return append(out, '}')
}
