package ifc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// TestMeasureResultOwnsItsBytes: nothing a Result holds is a slice of its
// Input. The gateway hands the rows' memory back to loom.Condense once a
// call has measured them (loom.Condensed.Release), so a Result that
// shared a byte with a row would answer, mint or record another call's
// bytes. Every row and the envelope are overwritten after Measure; the
// result, its values and its labels must read the same.
func TestMeasureResultOwnsItsBytes(t *testing.T) {
	in := searchInput(40, 3)
	longLabel := `{"confidentiality":["https://loom.example/facet/work"],"integrity":["` + strings.Repeat("i", maxCachedKey) + `"]}`
	extra := []string{
		`{"id":"dup","id":"dup2","snippet":"repeated names take the tree","ifc":{"confidentiality":["https://loom.example/facet/work"]}}`,
		`{"id":"long-label","ifc":` + longLabel + `}`,
		`{"id":"escaped \u00e9\n","title":"` + strings.Repeat("ü", StringBound+10) + `"}`,
		`{"id":"dup-label","ifc":7,"ifc":{"confidentiality":["https://loom.example/facet/work"],"integrity":["x"]}}`,
	}
	for _, r := range extra {
		in.Rows = append([]jsontext.Value{jsontext.Value(r)}, in.Rows...)
	}
	// The input in memory of its own, to be overwritten.
	for i, r := range in.Rows {
		in.Rows[i] = append(jsontext.Value(nil), r...)
	}
	in.Envelope = append(jsontext.Value(nil), in.Envelope...)

	r := Measure(in)
	if r.Admitted < 5 || r.Withheld == 0 {
		t.Fatalf("admitted %d, withheld %d: the input does not exercise the result", r.Admitted, r.Withheld)
	}
	handles := handlesFor(r.Admitted)
	snapshot := func() (string, string) {
		type entry struct {
			Value, Label, Disclosed string
		}
		var es []entry
		for _, e := range r.Entries {
			l, _ := json.Marshal(e.Label)
			d, _ := json.Marshal(DiscloseShared(e.Label))
			es = append(es, entry{string(e.Value), string(l), string(d)})
		}
		b, _ := json.Marshal(es)
		return string(r.AppendJSON(nil, handles)), string(b) + string(r.Envelope)
	}
	before, beforeParts := snapshot()
	for _, row := range in.Rows {
		for i := range row {
			row[i] = 'x'
		}
	}
	for i := range in.Envelope {
		in.Envelope[i] = 'x'
	}
	after, afterParts := snapshot()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the result changed with its input (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(beforeParts, afterParts); diff != "" {
		t.Errorf("the entries changed with their input (-before +after):\n%s", diff)
	}
}
