package ifc

// Equivalence of the fast path (scanner-driven emitter, process-wide label
// readings) with the plain path of bench_plain_test.go (jsontext-driven
// emitter, labels read on every call), on generated and mutated inputs.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// genValue writes a random JSON value of at most depth levels: strings with
// escapes (some invalid), non-ASCII and invalid UTF-8, numbers in every
// form, literals, repeated names, and whitespace between tokens.
func genValue(rng *rand.Rand, b *bytes.Buffer, depth int) {
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
		genString(rng, b, 12)
	case 3:
		b.WriteString([]string{"0", "-0", "1", "-12", "1.50", "0.0e0", "1E+9", "2e-3", "123456789012345678901234567890", "1e400", "-0.0"}[rng.IntN(11)])
	case 4:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case 5, 6:
		genString(rng, b, 4000+rng.IntN(40)) // near the cut
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
				genString(rng, b, 3)
			}
			ws()
			b.WriteByte(':')
			genValue(rng, b, depth-1)
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
			genValue(rng, b, depth-1)
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

func genString(rng *rand.Rand, b *bytes.Buffer, n int) {
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

// mutate damages v a little, now and then.
func mutate(rng *rand.Rand, v []byte) []byte {
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

// genRow returns a random row: mostly objects, sometimes damaged.
func genRow(rng *rand.Rand) []byte {
	var b bytes.Buffer
	if rng.IntN(10) == 0 {
		genValue(rng, &b, 3)
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
				genValue(rng, &b, 2)
			default:
				genString(rng, &b, 4)
				b.WriteByte(':')
				genValue(rng, &b, 3)
			}
		}
		b.WriteByte('}')
	}
	v := b.Bytes()
	if rng.IntN(4) == 0 {
		v = mutate(rng, v)
	}
	return v
}

// errClass names the errors whose difference matters to callers.
func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, errDuplicate):
		return "duplicate"
	case errors.Is(err, errNotObject):
		return "not object"
	}
	return "invalid"
}

func TestScannerMatchesJSONText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v []byte) {
		t.Helper()
		var s Scanner
		s.Reset(v)
		raw, err := s.Value(0)
		got := err == nil && s.AtEnd()
		want := jsontext.Value(v).IsValid(decodeOptions...)
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
		genValue(rng, &b, 4)
		v := b.Bytes()
		check(v)
		check(mutate(rng, v))
	}
	for _, v := range []string{
		"", " ", "x", "nul", "truex", "[1 2]", "[1,]", `{"a" 1}`, `{"a":1,}`, `{,}`, "01", "1.", ".5", "-", "1e", "1e+",
		"\"\x00\"", "\"\\u00zz\"", "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\xff\"", "[]]", "{}}", "\x00", "\ufeff{}",
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		strings.Repeat(`{"":`, maxDepth) + `1` + strings.Repeat("}", maxDepth),
		strings.Repeat(`{"":`, maxDepth+1) + `1` + strings.Repeat("}", maxDepth+1),
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

func TestAppendBoundedMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := range n {
		var b bytes.Buffer
		genValue(rng, &b, 4)
		v := b.Bytes()
		if i%3 == 0 {
			v = mutate(rng, v)
		}
		limit := []int{-1, StringBound, 3, 0}[i%4]
		got, gcut, gerr := appendBounded([]byte("p:"), v, limit)
		want, wcut, werr := plainAppendBounded([]byte("p:"), v, limit)
		if !bytes.Equal(got, want) || gcut != wcut || errClass(gerr) != errClass(werr) {
			t.Fatalf("%q limit %d:\nfast  %q %v %v\nplain %q %v %v", v, limit, got, gcut, gerr, want, wcut, werr)
		}
	}
	deep := []byte(strings.Repeat(`{"a":[`, maxDepth/2) + strings.Repeat("]}", maxDepth/2))
	for _, v := range [][]byte{deep, append([]byte("["), deep...)} {
		got, _, gerr := appendBounded(nil, v, -1)
		want, _, werr := plainAppendBounded(nil, v, -1)
		if !bytes.Equal(got, want) || errClass(gerr) != errClass(werr) {
			t.Fatalf("deep: fast %v, plain %v", gerr, werr)
		}
	}
}

func TestRowMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var fast emitter
	var plain plainEmitter
	fast.limit, plain.limit = StringBound, StringBound
	n := 15000
	if testing.Short() {
		n = 3000
	}
	for i := range n {
		row := genRow(rng)
		skip := i%7 == 0
		maxBytes := []int{-1, 1 << 20, 40, 8, 0}[i%5]
		fast.buf, plain.buf = append(fast.buf[:0], "x"...), append(plain.buf[:0], "x"...)
		gs, gerr := fast.row(row, skip, maxBytes)
		ws, werr := plain.row(row, skip, maxBytes, nil)
		if errClass(gerr) != errClass(werr) {
			t.Fatalf("%q skip %v max %d: fast %v, plain %v", row, skip, maxBytes, gerr, werr)
		}
		if gerr != nil {
			continue
		}
		if diff := cmp.Diff(ws, gs, cmp.AllowUnexported(rowScan{})); diff != "" || !bytes.Equal(fast.buf, plain.buf) {
			t.Fatalf("%q skip %v max %d:\nfast  %q\nplain %q\n%s", row, skip, maxBytes, fast.buf, plain.buf, diff)
		}
	}
}

// plainReadRowLabel is ReadRowLabel over the plain emitter.
func plainReadRowLabel(row jsontext.Value) (Label, bool, error) {
	var e plainEmitter
	r, err := e.row(row, true, -1, nil)
	if err != nil {
		if errors.Is(err, errNotObject) {
			return Label{}, true, &LabelError{Reason: "row is not an object"}
		}
		return Label{}, true, &LabelError{Reason: "invalid JSON"}
	}
	if !r.hasIFC {
		return Label{}, false, nil
	}
	l, err := readIFC(r.ifc)
	return l, true, err
}

func TestReadRowLabelMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 10000 {
		row := genRow(rng)
		gl, gp, gerr := ReadRowLabel(row)
		wl, wp, werr := plainReadRowLabel(row)
		if diff := cmp.Diff(wl, gl); diff != "" || gp != wp || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: fast %v %v, plain %v %v\n%s", row, gp, gerr, wp, werr, diff)
		}
	}
}

// bytesEqual makes cmp compare raw JSON as bytes, not element by element.
var bytesEqual = cmp.Options{
	cmp.Comparer(func(a, b jsontext.Value) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }),
	cmp.Comparer(func(a, b Clause) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }),
	cmp.Comparer(func(a, b Atom) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }),
}

// equivInputs are Measure inputs built from generated rows under several
// ceilings and query labels.
func equivInputs(rng *rand.Rand, n int) []Input {
	ceilings := []Ceiling{
		NoCeiling,
		CeilingOf(nil),
		CeilingOf(conf(`"https://f/work"`)),
		CeilingOf(conf(`"https://f/work"`, `{"anyOf":["https://f/work","https://f/home"]}`)),
		CeilingOf(conf(`{"type":"https://f/work","k":1.0}`, `{"type":"T/cfc/atom/Expires","timestamp":3}`)),
		CeilingOf(conf(`"` + ReadFailedMarker + `"`)),
	}
	unlabeled := []Label{
		{},
		{Confidentiality: conf(`"https://f/work"`)},
		{Confidentiality: conf(`"https://f/secret"`), Integrity: []Atom{Atom(`"I"`)}},
	}
	envelopes := []jsontext.Value{nil, jsontext.Value(`{"query":"q","warnings":[]}`), jsontext.Value(`{"a":1,"a":2}`), jsontext.Value(`{`)}
	var ins []Input
	for i := range n {
		in := Input{
			OutputID:  fmt.Sprintf("run:loom_search:%d", i),
			Kind:      "search",
			Envelope:  envelopes[i%len(envelopes)],
			Ceiling:   ceilings[i%len(ceilings)],
			Unlabeled: unlabeled[i%len(unlabeled)],
		}
		for range rng.IntN(40) {
			in.Rows = append(in.Rows, genRow(rng))
		}
		if i%10 == 0 { // enough to fill the bound
			for range 300 {
				in.Rows = append(in.Rows, genRow(rng))
			}
		}
		ins = append(ins, in)
	}
	return ins
}

func TestMeasureMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n := 400
	if testing.Short() {
		n = 60
	}
	filled := 0
	for _, in := range equivInputs(rng, n) {
		got, want := Measure(in), plainMeasure(in)
		if diff := cmp.Diff(want, got, bytesEqual); diff != "" {
			t.Fatalf("rows %q:\n%s", in.Rows, diff)
		}
		h := handlesFor(got.Admitted)
		if g, w := got.AppendJSON(nil, h), want.AppendJSON(nil, h); !bytes.Equal(g, w) {
			t.Fatalf("AppendJSON differs:\nfast  %s\nplain %s", g, w)
		}
		if got.Omitted > 0 {
			filled++
		}
	}
	if filled == 0 {
		t.Error("no input filled the bound")
	}
}

// TestMeasureMatchesPlainLarge runs both paths on the benchmark payloads.
func TestMeasureMatchesPlainLarge(t *testing.T) {
	for _, n := range []int{10, 2000, 25000} {
		in := searchInput(n, uint64(n))
		got, want := Measure(in), plainMeasure(in)
		if diff := cmp.Diff(want, got, bytesEqual); diff != "" {
			t.Fatalf("%d hits:\n%s", n, diff)
		}
	}
	var sb strings.Builder
	sb.WriteString(`{"title":"page"`)
	for i := range 2000 {
		fmt.Fprintf(&sb, `,"p%d":"%s"`, i, strings.Repeat("paragraph \u00e9 text ", 12))
	}
	sb.WriteString(`,"ifc":{"confidentiality":["https://loom.example/facet/work"]}}`)
	for _, row := range []string{sb.String(), sb.String()[:sb.Len()-1]} {
		in := Input{Rows: []jsontext.Value{jsontext.Value(row)}, Ceiling: CeilingOf(conf(`"https://loom.example/facet/work"`))}
		if diff := cmp.Diff(plainMeasure(in), Measure(in), bytesEqual); diff != "" {
			t.Fatalf("big row:\n%s", diff)
		}
	}
}

// TestMeasureResultsOwnTheirMemory keeps every result while later calls
// reuse Measure's pooled scratch, and only then compares them: nothing a
// result holds may be scratch.
func TestMeasureResultsOwnTheirMemory(t *testing.T) {
	ins := equivInputs(rand.New(rand.NewPCG(29, 30)), 80)
	got := make([]Result, len(ins))
	for i, in := range ins {
		got[i] = Measure(in)
	}
	for i, in := range ins {
		if diff := cmp.Diff(plainMeasure(in), got[i], bytesEqual); diff != "" {
			t.Fatalf("input %d, read after the others:\n%s", i, diff)
		}
	}
}

// TestLabelCacheConcurrent measures the same inputs from several
// goroutines, sharing the process-wide readings, under -race.
func TestLabelCacheConcurrent(t *testing.T) {
	ins := equivInputs(rand.New(rand.NewPCG(11, 12)), 60)
	want := make([]Result, len(ins))
	for i, in := range ins {
		want[i] = plainMeasure(in)
	}
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for k := range len(ins) {
				i := (k + g*7) % len(ins)
				if diff := cmp.Diff(want[i], Measure(ins[i]), bytesEqual); diff != "" {
					done <- fmt.Errorf("input %d: %s", i, diff)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpecialMask checks that the lowest set bit of specialMask is the
// first '"', '\\' or control byte of the word, exhaustively for one such
// byte among ASCII letters and on random words.
func TestSpecialMask(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	check := func(w []byte) {
		t.Helper()
		v := binary.LittleEndian.Uint64(w)
		want := slices.IndexFunc(w, special)
		got := -1
		if m := specialMask(v); m != 0 {
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

func TestDiscloseMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	seen := 0
	for range 5000 {
		l, present, err := ReadRowLabel(genRow(rng))
		if !present || err != nil {
			continue
		}
		seen++
		if diff := cmp.Diff(disclose(l), DiscloseShared(l)); diff != "" {
			t.Fatalf("DiscloseShared %v:\n%s", l, diff)
		}
		for range 2 { // the second comes from the cache
			got := Disclose(l)
			if diff := cmp.Diff(disclose(l), got); diff != "" {
				t.Fatalf("%v:\n%s", l, diff)
			}
			// The caller owns what it got.
			for i := range got.Confidentiality {
				got.Confidentiality[i][0] = "changed"
			}
			if len(got.Integrity) > 0 {
				got.Integrity[0] = "changed"
			}
		}
	}
	if seen == 0 {
		t.Fatal("no readable labels generated")
	}
}

// FuzzRowMatchesPlain holds the fast row reader and AppendJS to the plain
// ones on arbitrary bytes.
func FuzzRowMatchesPlain(f *testing.F) {
	rng := rand.New(rand.NewPCG(17, 18))
	for range 200 {
		f.Add(genRow(rng), 40)
	}
	f.Add([]byte(`{"a":{"b":1,"b":2},"ifc":{"confidentiality":["w"]}}`), 3)
	f.Fuzz(func(t *testing.T, row []byte, maxBytes int) {
		var fast emitter
		var plain plainEmitter
		fast.limit, plain.limit = 5, 5
		gs, gerr := fast.row(row, false, maxBytes)
		ws, werr := plain.row(row, false, maxBytes, nil)
		if errClass(gerr) != errClass(werr) {
			t.Fatalf("%q: fast %v, plain %v", row, gerr, werr)
		}
		if gerr == nil && (cmp.Diff(ws, gs, cmp.AllowUnexported(rowScan{})) != "" || !bytes.Equal(fast.buf, plain.buf)) {
			t.Fatalf("%q: fast %q %+v, plain %q %+v", row, fast.buf, gs, plain.buf, ws)
		}
		g, gcut, gerr := appendBounded(nil, row, 5)
		w, wcut, werr := plainAppendBounded(nil, row, 5)
		if !bytes.Equal(g, w) || gcut != wcut || errClass(gerr) != errClass(werr) {
			t.Fatalf("%q: AppendJS fast %q %v, plain %q %v", row, g, gerr, w, werr)
		}
	})
}

// plainAppendJSString is appendJSString as first written, a byte at a
// time.
func plainAppendJSString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf && strPlain[s[j]] {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		r, w := decodeRune(s[i:])
		dst = appendRune(dst, r)
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
		if got, want := appendJSString([]byte("x"), in), plainAppendJSString([]byte("x"), in); !bytes.Equal(got, want) {
			t.Fatalf("appendJSString(%q) = %q, want %q", in, got, want)
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
		if got, want := utf16LenBytes([]byte(s)), UTF16Len(s); got != want {
			t.Fatalf("%q: %d, want %d", s, got, want)
		}
	}
}
