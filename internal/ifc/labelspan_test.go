package ifc

// Measure told where the rows' labels are (Input.LabelSpans, as
// loom.Condense tells it) against Measure told nothing and the plain
// Measure: a row withheld without being written has the entry the others
// give it, on generated rows and on the rows where the ways could part
// (a repeated name, a label near the bounds, bytes that are not UTF-8, a
// row past MaxTreeRowBytes, which only the plain Measure reads whole
// when it repeats a name).

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/jsjson/jsjsontest"
)

// labelSpans tells where the rows' labels are as loom.Condense does: by
// jsjson.Scanner.RowValue, for each row that is exactly one value.
func labelSpans(rows []jsontext.Value) []LabelSpan {
	spans := make([]LabelSpan, len(rows))
	for i, row := range rows {
		var s jsjson.Scanner
		s.Reset(row)
		v, lo, hi, found, err := s.RowValue(1)
		if err == nil && found && s.AtEnd() && len(v) == len(row) {
			spans[i] = LabelSpan{Read: true, Lo: int32(lo), Hi: int32(hi)}
		}
	}
	return spans
}

// spanRows are rows on which telling the label first could go wrong.
func spanRows(rng *rand.Rand) []jsontext.Value {
	work := `{"confidentiality":["https://f/work"]}`
	secret := `{"confidentiality":["https://f/secret"]}`
	pad := func(n int, s string) string {
		return `{"confidentiality":["https://f/secret"],"pad":"` + strings.Repeat(s, n) + `"}`
	}
	labels := []string{
		work, secret, `7`, `{"confidentiality":"x"}`, `{ "confidentiality" : [ "https://f/secret" ] }`,
		`{"confidentiality":["https://f/secret"],"confidentiality":["https://f/work"]}`,
		`{"confidentiality":["\u0068ttps://f/secret"]}`,
		pad(MaxLabelBytes/3-60, "x"), pad(MaxLabelBytes/3, "x"), pad(MaxLabelBytes-50, "x"), pad(MaxLabelBytes, "x"),
		pad((MaxLabelBytes/3-60)/2, "\xff\xfe"), pad(MaxLabelBytes/3, "\xff"), pad(MaxLabelBytes/2, "\xff"),
		pad(MaxLabelBytes/3-60, `\u00e9`),
	}
	var rows []jsontext.Value
	for range 60 {
		var members []string
		for range rng.IntN(4) {
			members = append(members, fmt.Sprintf(`"%c":%d`, 'a'+rng.IntN(3), rng.IntN(9)))
		}
		if rng.IntN(3) == 0 {
			members = append(members, `"o":{"k":1,"k":2}`)
		}
		if rng.IntN(8) == 0 {
			members = append(members, `"big":"`+strings.Repeat("b", MaxTreeRowBytes)+`"`)
		}
		for range rng.IntN(3) {
			members = append(members, `"ifc":`+labels[rng.IntN(len(labels))])
		}
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		rows = append(rows, jsontext.Value("{"+strings.Join(members, ",")+"}"))
	}
	return rows
}

func TestMeasureLabelSpansMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	n := 300
	if testing.Short() {
		n = 60
	}
	ins := equivInputs(rng, n)
	for i := range ins {
		if i%4 == 0 {
			ins[i].Rows = spanRows(rng)
		}
		for range rng.IntN(3) { // a row told twice over
			ins[i].Rows = append(ins[i].Rows, jsjsontest.GenRow(rng))
		}
	}
	nTold, withheld := 0, 0
	for _, in := range ins {
		told := in
		told.LabelSpans = labelSpans(in.Rows)
		got, want := Measure(told), Measure(in)
		if diff := cmp.Diff(want, got, bytesEqual); diff != "" {
			t.Fatalf("rows %.3000q:\n%s", in.Rows, diff)
		}
		if !slices.ContainsFunc(in.Rows, func(r jsontext.Value) bool { return len(r) > MaxTreeRowBytes }) {
			if diff := cmp.Diff(plainMeasure(in), got, bytesEqual); diff != "" {
				t.Fatalf("plain, rows %.3000q:\n%s", in.Rows, diff)
			}
		}
		in = told
		h := handlesFor(got.Admitted)
		if g, w := got.AppendJSON(nil, h), want.AppendJSON(nil, h); !bytes.Equal(g, w) {
			t.Fatalf("AppendJSON differs:\nfast  %s\nplain %s", g, w)
		}
		for i, at := range in.LabelSpans {
			if !at.Read {
				continue
			}
			nTold++
			if i < len(got.Entries) && !got.Entries[i].Admitted {
				withheld++
			}
		}
	}
	if nTold == 0 || withheld == 0 {
		t.Fatalf("%d rows told, %d of them withheld: want some of each", nTold, withheld)
	}
}

// TestMeasureLabelSpansWithheldUnwritten: a row told to be withheld is
// not written: its value's bytes are never read, so a row whose value
// the writer would refuse (here: not JSON past its label, which a true
// LabelSpan never says) is withheld as its label says.
func TestMeasureLabelSpansWithheldUnwritten(t *testing.T) {
	row := jsontext.Value(`{"ifc":{"confidentiality":["https://f/secret"]},"x":]}`)
	in := Input{Rows: []jsontext.Value{row}, Ceiling: CeilingOf(conf(`"https://f/work"`))}
	if e := Measure(in).Entries[0]; e.ReasonCode != ReasonLabelReadFailed {
		t.Fatalf("told nothing: %+v, want %s", e, ReasonLabelReadFailed)
	}
	in.LabelSpans = []LabelSpan{{Read: true, Lo: int32(len(`{"ifc":`)), Hi: int32(len(`{"ifc":{"confidentiality":["https://f/secret"]}`))}}
	if e := Measure(in).Entries[0]; e.ReasonCode != ReasonCeilingExceeded {
		t.Fatalf("told the label: %+v, want %s without the row written", e, ReasonCeilingExceeded)
	}
}
