package jsjson_test

// Equivalence of the fast path (the Scanner-driven Writer) with the plain
// path of package jsjsontest (jsontext-driven), on generated and mutated
// inputs, and of the word-at-a-time string scans with byte-at-a-time ones.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/jsjson/jsjsontest"
)

// stringBound is the bound the gateway cuts strings at (ifc.StringBound).
const stringBound = 4000

func TestScannerMatchesJSONText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v []byte) {
		t.Helper()
		var s jsjson.Scanner
		s.Reset(v)
		raw, err := s.Value(0)
		got := err == nil && s.AtEnd()
		want := jsontext.Value(v).IsValid(jsjson.DecodeOptions...)
		if got != want {
			t.Fatalf("%q: scanner valid %v (%v), jsontext %v", v, got, err, want)
		}
		if got && !bytes.Equal(raw, bytes.Trim(v, " \t\r\n")) {
			t.Fatalf("%q: raw %q", v, raw)
		}
	}
	n := 30000
	if testing.Short() {
		n = 3000
	}
	for range n {
		var b bytes.Buffer
		jsjsontest.GenValue(rng, &b, 4)
		v := b.Bytes()
		check(v)
		check(jsjsontest.Mutate(rng, v))
	}
	for _, v := range []string{
		"", " ", "x", "nul", "truex", "[1 2]", "[1,]", `{"a" 1}`, `{"a":1,}`, `{,}`, "01", "1.", ".5", "-", "1e", "1e+",
		"\"\x00\"", "\"\\u00zz\"", "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\xff\"", "[]]", "{}}", "\x00", "\ufeff{}",
		strings.Repeat("[", jsjson.MaxDepth) + strings.Repeat("]", jsjson.MaxDepth),
		strings.Repeat("[", jsjson.MaxDepth+1) + strings.Repeat("]", jsjson.MaxDepth+1),
		strings.Repeat(`{"":`, jsjson.MaxDepth) + `1` + strings.Repeat("}", jsjson.MaxDepth),
		strings.Repeat(`{"":`, jsjson.MaxDepth+1) + `1` + strings.Repeat("}", jsjson.MaxDepth+1),
	} {
		check([]byte(v))
	}
	// Deep values of mixed containers, past the 64 the scanner keeps in a
	// word, closed rightly or with one bracket swapped.
	for range 2000 {
		var open []byte
		var b bytes.Buffer
		for range 1 + rng.IntN(200) {
			if rng.IntN(2) == 0 {
				b.WriteString(`{"k":`)
				open = append(open, '}')
			} else {
				b.WriteByte('[')
				open = append(open, ']')
			}
		}
		b.WriteString("1")
		swap := -1
		if rng.IntN(2) == 0 {
			swap = rng.IntN(len(open))
		}
		for i := len(open) - 1; i >= 0; i-- {
			c := open[i]
			if i == swap {
				c = '}' + ']' - c
			}
			if rng.IntN(3) == 0 { // another member or element first
				if open[i] == '}' {
					b.WriteString(`,"x":2`)
				} else {
					b.WriteString(`,2`)
				}
			}
			b.WriteByte(c)
		}
		check(b.Bytes())
	}
}

// FuzzScannerMatchesJSONText holds the validating scan to jsontext on
// arbitrary bytes: the same verdict, and the same raw value when valid.
func FuzzScannerMatchesJSONText(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 9))
	for range 40 {
		var b bytes.Buffer
		jsjsontest.GenValue(rng, &b, 3)
		f.Add(b.Bytes())
		f.Add(jsjsontest.Mutate(rng, b.Bytes()))
	}
	f.Add([]byte(`{"id":"mail:000001","people":["p:ada"],"score":0.5,"ifc":{"confidentiality":["x"]}}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		var s jsjson.Scanner
		s.Reset(v)
		raw, err := s.Value(0)
		got := err == nil && s.AtEnd()
		want := jsontext.Value(v).IsValid(jsjson.DecodeOptions...)
		if got != want {
			t.Fatalf("%q: scanner valid %v (%v), jsontext %v", v, got, err, want)
		}
		if got && !bytes.Equal(raw, bytes.Trim(v, " \t\r\n")) {
			t.Fatalf("%q: raw %q", v, raw)
		}
	})
}

func TestAppendBoundedMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := range n {
		var b bytes.Buffer
		jsjsontest.GenValue(rng, &b, 4)
		v := b.Bytes()
		if i%3 == 0 {
			v = jsjsontest.Mutate(rng, v)
		}
		limit := []int{-1, stringBound, 3, 0}[i%4]
		got, gcut, gerr := new(jsjson.Writer).AppendBounded([]byte("p:"), v, limit)
		want, wcut, werr := jsjsontest.AppendBounded([]byte("p:"), v, limit)
		if !bytes.Equal(got, want) || gcut != wcut || jsjsontest.ErrClass(gerr) != jsjsontest.ErrClass(werr) {
			t.Fatalf("%q limit %d:\nfast  %q %v %v\nplain %q %v %v", v, limit, got, gcut, gerr, want, wcut, werr)
		}
	}
	deep := []byte(strings.Repeat(`{"a":[`, jsjson.MaxDepth/2) + strings.Repeat("]}", jsjson.MaxDepth/2))
	for _, v := range [][]byte{deep, append([]byte("["), deep...)} {
		got, _, gerr := new(jsjson.Writer).AppendBounded(nil, v, -1)
		want, _, werr := jsjsontest.AppendBounded(nil, v, -1)
		if !bytes.Equal(got, want) || jsjsontest.ErrClass(gerr) != jsjsontest.ErrClass(werr) {
			t.Fatalf("deep: fast %v, plain %v", gerr, werr)
		}
	}
}

func TestRowMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var fast jsjson.Writer
	var plain jsjsontest.Writer
	fast.SetLimit(stringBound)
	plain.SetLimit(stringBound)
	n := 15000
	if testing.Short() {
		n = 3000
	}
	for i := range n {
		row := jsjsontest.GenRow(rng)
		skip := i%7 == 0
		maxBytes := []int{-1, 1 << 20, 40, 8, 0}[i%5]
		gbuf, gs, gerr := fast.Row([]byte("x"), row, skip, maxBytes)
		wbuf, ws, werr := plain.Row([]byte("x"), row, skip, maxBytes, nil)
		if jsjsontest.ErrClass(gerr) != jsjsontest.ErrClass(werr) {
			t.Fatalf("%q skip %v max %d: fast %v, plain %v", row, skip, maxBytes, gerr, werr)
		}
		if gerr != nil {
			continue
		}
		if diff := cmp.Diff(ws, gs); diff != "" || !bytes.Equal(gbuf, wbuf) {
			t.Fatalf("%q skip %v max %d:\nfast  %q\nplain %q\n%s", row, skip, maxBytes, gbuf, wbuf, diff)
		}
	}
}

// TestSpecialMask checks that the lowest set bit of jsjson.SpecialMask is the
// first '"', '\\' or control byte of the word, exhaustively for one such
// byte among ASCII letters and on random words.
func TestSpecialMask(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	check := func(w []byte) {
		t.Helper()
		v := binary.LittleEndian.Uint64(w)
		want := slices.IndexFunc(w, special)
		got := -1
		if m := jsjson.SpecialMask(v); m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if got != want {
			t.Fatalf("%q: first special byte at %d, want %d", w, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			check(w)
		}
	}
	rng := rand.New(rand.NewPCG(13, 14))
	w := make([]byte, 8)
	for range 200000 {
		binary.LittleEndian.PutUint64(w, rng.Uint64())
		if rng.IntN(2) == 0 { // fewer special bytes, and some just past them
			for i := range w {
				if special(w[i]) && rng.IntN(4) != 0 {
					w[i] = "\x20!#[]\x7f\x80\xff"[rng.IntN(8)]
				}
			}
		}
		check(w)
	}
}

// FuzzRowMatchesPlain holds the fast row reader and AppendJS to the plain
// ones on arbitrary bytes.
func FuzzRowMatchesPlain(f *testing.F) {
	rng := rand.New(rand.NewPCG(17, 18))
	for range 200 {
		f.Add(jsjsontest.GenRow(rng), 40)
	}
	f.Add([]byte(`{"a":{"b":1,"b":2},"ifc":{"confidentiality":["w"]}}`), 3)
	f.Fuzz(func(t *testing.T, row []byte, maxBytes int) {
		var fast jsjson.Writer
		var plain jsjsontest.Writer
		fast.SetLimit(5)
		plain.SetLimit(5)
		gbuf, gs, gerr := fast.Row(nil, row, false, maxBytes)
		wbuf, ws, werr := plain.Row(nil, row, false, maxBytes, nil)
		if jsjsontest.ErrClass(gerr) != jsjsontest.ErrClass(werr) {
			t.Fatalf("%q: fast %v, plain %v", row, gerr, werr)
		}
		if gerr == nil && (cmp.Diff(ws, gs) != "" || !bytes.Equal(gbuf, wbuf)) {
			t.Fatalf("%q: fast %q %+v, plain %q %+v", row, gbuf, gs, wbuf, ws)
		}
		g, gcut, gerr := new(jsjson.Writer).AppendBounded(nil, row, 5)
		w, wcut, werr := jsjsontest.AppendBounded(nil, row, 5)
		if !bytes.Equal(g, w) || gcut != wcut || jsjsontest.ErrClass(gerr) != jsjsontest.ErrClass(werr) {
			t.Fatalf("%q: AppendJS fast %q %v, plain %q %v", row, g, gerr, w, werr)
		}
	})
}

// plainAppendJSString is the plain form of AppendString, its reference, a byte at a
// time.
func plainAppendJSString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf && jsjson.StrPlain[s[j]] {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		r, w := jsjson.DecodeRune(s[i:])
		dst = jsjson.AppendRune(dst, r)
		i += w
	}
	return append(dst, '"')
}

func TestAppendJSStringMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	pieces := []string{"a", "abcdefgh", "0123456", " ", "~", "\x7f", "\"", "\\", "\n", "\x00", "\x1f", "é", "😀", "\u2028", "\xff", "\xe2\x82", "\xed\xa0\x80"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(3) != 0 {
				p = pieces[rng.IntN(3)] // mostly plain
			}
			b.WriteString(p)
		}
		in := b.String()
		if got, want := jsjson.AppendString([]byte("x"), in), plainAppendJSString([]byte("x"), in); !bytes.Equal(got, want) {
			t.Fatalf("jsjson.AppendString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUTF16LenBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for range 20000 {
		var b bytes.Buffer
		for range rng.IntN(40) {
			b.WriteString([]string{"a", "abcdefgh", "é", "😀", "\u2028", "xyz"}[rng.IntN(6)])
		}
		s := b.String()
		if got, want := jsjson.UTF16LenBytes([]byte(s)), jsjson.UTF16Len(s); got != want {
			t.Fatalf("%q: %d, want %d", s, got, want)
		}
	}
}

// TestUTF16LenBytesAnyBytes holds UTF16LenBytes's counting of eight and
// thirty-two bytes at a time to the byte-at-a-time count it states, on
// every byte value at every offset, valid UTF-8 or not.
func TestUTF16LenBytesAnyBytes(t *testing.T) {
	count := func(b []byte) int {
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
	rng := rand.New(rand.NewPCG(23, 24))
	for range 20000 {
		b := make([]byte, rng.IntN(100))
		for i := range b {
			switch rng.IntN(3) {
			case 0:
				b[i] = byte(rng.IntN(256))
			default:
				b[i] = 'a' + byte(rng.IntN(26))
			}
		}
		if got, want := jsjson.UTF16LenBytes(b), count(b); got != want {
			t.Fatalf("% x: %d, want %d", b, got, want)
		}
	}
}
