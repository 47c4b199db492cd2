package ifc

// Equivalence of the fast path (scanner-driven jsjson.Writer, process-wide label
// readings) with the plain path of plainmeasure_test.go (jsontext-driven
// jsjson.Writer, labels read on every call), on generated and mutated inputs.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/jsjson/jsjsontest"
)

// plainReadRowLabel is ReadRowLabel over the plain jsjson.Writer.
func plainReadRowLabel(row jsontext.Value) (Label, bool, error) {
	var e jsjsontest.Writer
	_, r, err := e.Row(nil, row, true, -1, nil)
	if err != nil {
		if errors.Is(err, jsjson.ErrNotObject) {
			return Label{}, true, &LabelError{Reason: "row is not an object"}
		}
		return Label{}, true, &LabelError{Reason: "invalid JSON"}
	}
	if !r.HasIFC {
		return Label{}, false, nil
	}
	l, err := readIFC(r.IFC)
	return l, true, err
}

func TestReadRowLabelMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 10000 {
		row := jsjsontest.GenRow(rng)
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
			Command:   "search",
			Envelope:  envelopes[i%len(envelopes)],
			Ceiling:   ceilings[i%len(ceilings)],
			Unlabeled: unlabeled[i%len(unlabeled)],
		}
		for range rng.IntN(40) {
			in.Rows = append(in.Rows, jsjsontest.GenRow(rng))
		}
		if i%10 == 0 { // enough to fill the bound
			for range 300 {
				in.Rows = append(in.Rows, jsjsontest.GenRow(rng))
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

func TestDiscloseMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	seen := 0
	for range 5000 {
		l, present, err := ReadRowLabel(jsjsontest.GenRow(rng))
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
