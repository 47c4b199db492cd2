package jsjsontest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// GenValue writes a random JSON value of at most depth levels: strings with
// escapes (some invalid), non-ASCII and invalid UTF-8, numbers in every
// form, literals, repeated names, and whitespace between tokens.
func GenValue(rng *rand.Rand, b *bytes.Buffer, depth int) {
	ws := func() {
		if rng.IntN(5) == 0 {
			b.WriteString([]string{" ", "\n", "\t", "\r\n ", "  "}[rng.IntN(5)])
		}
	}
	ws()
	k := rng.IntN(10)
	if depth <= 0 && k >= 7 {
		k = rng.IntN(7)
	}
	switch k {
	case 0, 1, 2:
		GenString(rng, b, 12)
	case 3:
		b.WriteString([]string{"0", "-0", "1", "-12", "1.50", "0.0e0", "1E+9", "2e-3", "123456789012345678901234567890", "1e400", "-0.0"}[rng.IntN(11)])
	case 4:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case 5, 6:
		GenString(rng, b, 4000+rng.IntN(40)) // near the cut
	case 7, 8:
		b.WriteByte('{')
		n := rng.IntN(5)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			if rng.IntN(4) == 0 {
				b.WriteString([]string{`"ifc"`, `"a"`, `"\u0069fc"`, `"b"`}[rng.IntN(4)])
			} else {
				GenString(rng, b, 3)
			}
			ws()
			b.WriteByte(':')
			GenValue(rng, b, depth-1)
			ws()
		}
		b.WriteByte('}')
	case 9:
		b.WriteByte('[')
		n := rng.IntN(5)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			GenValue(rng, b, depth-1)
		}
		ws()
		b.WriteByte(']')
	}
	ws()
}

var genPieces = []string{
	"a", "b", "ifc", " ", "é", "😀", "\u2028", "\\n", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r", "\\t",
	"\\u0041", "\\u00e9", "\\uD83D\\uDE00", "\\ud800", "\\udc00x", "\\uDBFF", "\\u12", "\\x", "\\",
	"\xff", "\xe2\x82", "\xf0\x9f\x98", "\xc0\xaf", "\xed\xa0\x80", "\x01", "\x7f", "<>&",
}

func GenString(rng *rand.Rand, b *bytes.Buffer, n int) {
	b.WriteByte('"')
	if n > 100 {
		b.WriteString(strings.Repeat("x", n-rng.IntN(8)))
		if rng.IntN(2) == 0 {
			b.WriteString("😀é")
		}
	} else {
		for range rng.IntN(n + 1) {
			p := genPieces[rng.IntN(len(genPieces))]
			// Mostly valid: the invalid pieces are rare.
			if strings.ContainsAny(p, "\x01") || p == "\\x" || p == "\\u12" || p == "\\" {
				if rng.IntN(20) != 0 {
					p = "z"
				}
			}
			b.WriteString(p)
		}
	}
	b.WriteByte('"')
}

// Mutate damages v a little, now and then.
func Mutate(rng *rand.Rand, v []byte) []byte {
	v = bytes.Clone(v)
	for range rng.IntN(3) {
		if len(v) == 0 {
			break
		}
		i := rng.IntN(len(v))
		switch rng.IntN(5) {
		case 0:
			v = v[:i]
		case 1:
			v = append(v[:i], v[i+1:]...)
		case 2:
			v[i] = `{}[],:"\ 0-.eE+tfnu1x`[rng.IntN(21)]
		case 3:
			v = append(v[:i], append([]byte(`,`), v[i:]...)...)
		case 4:
			v = append(v, []string{" ", "}", "1", " {}", "\x00"}[rng.IntN(5)]...)
		}
	}
	return v
}

// GenRow returns a random row: mostly objects, sometimes damaged.
func GenRow(rng *rand.Rand) []byte {
	var b bytes.Buffer
	if rng.IntN(10) == 0 {
		GenValue(rng, &b, 3)
	} else {
		b.WriteByte('{')
		n := rng.IntN(6)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			switch rng.IntN(6) {
			case 0:
				b.WriteString(`"ifc":`)
				b.WriteString([]string{
					`{"confidentiality":["https://f/work"]}`,
					`{"confidentiality":[{"anyOf":["https://f/work","https://f/home"]}],"integrity":["I"]}`,
					`{"confidentiality":["https://f/secret"]}`,
					`{"confidentiality":"x"}`,
					`{ "confidentiality" : [ ] }`,
					`{"confidentiality":[{"type":"https://f/work","k":1}]}`,
					`{"confidentiality":[{"type":"T/cfc/atom/Expires","timestamp":5}]}`,
					`7`, `null`,
				}[rng.IntN(9)])
			case 1:
				b.WriteString([]string{`"id"`, `"a"`, `"\u0061"`, `"snippet"`}[rng.IntN(4)])
				b.WriteByte(':')
				GenValue(rng, &b, 2)
			default:
				GenString(rng, &b, 4)
				b.WriteByte(':')
				GenValue(rng, &b, 3)
			}
		}
		b.WriteByte('}')
	}
	v := b.Bytes()
	if rng.IntN(4) == 0 {
		v = Mutate(rng, v)
	}
	return v
}

// ErrClass names the errors whose difference matters to callers.
func ErrClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, jsjson.ErrDuplicate):
		return "duplicate"
	case errors.Is(err, jsjson.ErrNotObject):
		return "not object"
	}
	return "invalid"
}
