package jsjson_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/jsjson/jsjsontest"
)

// checkRowValue holds RowValue to Value (the same value, or an error
// where Value fails) and, where it tells the label, to Writer.Row's
// RowScan.IFC. It reports whether it told.
func checkRowValue(t *testing.T, b []byte, depth int) bool {
	t.Helper()
	var s, w jsjson.Scanner
	s.Reset(b)
	w.Reset(b)
	v, lo, hi, found, err := s.RowValue(depth)
	want, werr := w.Value(depth)
	if (err == nil) != (werr == nil) || !bytes.Equal(v, want) || s.Offset() != w.Offset() {
		t.Fatalf("%q: RowValue %q at %d (%v), Value %q at %d (%v)", b, v, s.Offset(), err, want, w.Offset(), werr)
	}
	if !found {
		return false
	}
	if err != nil || len(v) == 0 || v[0] != '{' || lo < 0 || lo > hi || hi > len(v) || lo == hi && lo != 0 {
		t.Fatalf("%q: RowValue told [%d:%d] of %q (%v)", b, lo, hi, v, err)
	}
	var e jsjson.Writer
	_, sc, rerr := e.Row(nil, v, true, -1)
	if rerr != nil || sc.HasIFC != (lo < hi) || !bytes.Equal(sc.IFC, v[lo:hi]) {
		t.Fatalf("%q: RowValue label %q (%v), Writer.Row %q %v (%v)", v, v[lo:hi], lo < hi, sc.IFC, sc.HasIFC, rerr)
	}
	return true
}

func TestRowValue(t *testing.T) {
	if !jsjson.FastContainers() {
		t.Skip("no AVX2: RowValue tells no label")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	labeled := 0
	for i := range n {
		row := jsjsontest.GenRow(rng)
		if i%3 == 0 {
			row = jsjsontest.Mutate(rng, row)
		}
		// Whitespace before it, so that blocks start anywhere, and
		// something after it, which it must not read.
		b := append([]byte(strings.Repeat(" ", rng.IntN(70))), row...)
		b = append(b, `,{"ifc":1}]`...)
		if checkRowValue(t, b, 1+rng.IntN(3)) && bytes.Contains(row, []byte(`"ifc"`)) {
			labeled++
		}
	}
	for _, row := range []string{
		`{}`, `{"ifc":7}`, `{"ifc" : 7 , "a":1}`, `{"a":{"ifc":1}}`, `{"a":[{"ifc":1}],"b":2}`,
		`{"ifc":{"confidentiality":["w"]},"ifc":"x"}`, `{"ifc":"a","ifcx":1,"if":2}`,
		`{"ifc":{"ifc":{"ifc":1}}}`, `{"\u0069fc":1}`, `{"ifc":"\n"}`, `{"ifc"` + "\t:\n[1, 2 ]\r}",
		`{"ifc":1`, `{"ifc":}`, `{"ifc":1,}`, `[{"ifc":1}]`, `"ifc"`,
	} {
		checkRowValue(t, []byte(row), 1)
	}
	if labeled == 0 {
		t.Fatal("no labeled row told")
	}
}

// FuzzRowValue holds RowValue to Value and Writer.Row on arbitrary bytes.
func FuzzRowValue(f *testing.F) {
	rng := rand.New(rand.NewPCG(43, 44))
	for range 100 {
		f.Add(jsjsontest.GenRow(rng))
	}
	f.Add([]byte(`{"id":"mail:000001","people":["p:ada"],"score":0.5,"ifc":{"confidentiality":["x"]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRowValue(t, b, 1)
	})
}
