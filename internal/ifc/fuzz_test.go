package ifc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

func addRowSeeds(f *testing.F) {
	for _, u := range unreadableLabels {
		f.Add([]byte(`{"id":1,"ifc":` + u.ifc + `}`))
	}
	for _, s := range []string{
		`{"a":1}`,
		`{"ifc":{"confidentiality":[]}}`,
		`{"ifc":{"confidentiality":["A",{"type":"T","x":[1]},{"anyOf":["B",{"type":"C"}]}],"integrity":["I"]}}`,
		`{"ifc":7,"ifc":{"confidentiality":["A"]}}`,
		`{"a":1,"a":2,"ifc":{"confidentiality":[{"type":"T","type":"U"}]}}`,
		`{"\u0069fc":{"confidentiality":["\ud800"]}}`,
		"{\"ifc\":{\"confidentiality\":[\"\xff\"]}}",
		`[1]`, `null`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
}

// FuzzReadRowLabel checks that reading never panics, that an unreadable
// label is always reported as present, that writing the row back out in
// the writer's form changes no verdict (an unreadable label stays
// unreadable), and that Measure agrees with ReadRowLabel.
func FuzzReadRowLabel(f *testing.F) {
	addRowSeeds(f)
	f.Fuzz(func(t *testing.T, row []byte) {
		l, present, err := ReadRowLabel(row)
		if err != nil && !present {
			t.Fatalf("ReadRowLabel(%q): error %v with present = false", row, err)
		}
		again := jsjson.AppendJS(nil, row)
		l2, present2, err2 := ReadRowLabel(again)
		if (err != nil) != (err2 != nil) || present != present2 {
			t.Fatalf("ReadRowLabel(%q) = (%v, %v), but of its rewrite %q = (%v, %v)", row, present, err, again, present2, err2)
		}
		if diff := cmp.Diff(l, l2); diff != "" {
			t.Fatalf("ReadRowLabel(%q) label changed by rewrite %q (-first +rewrite):\n%s", row, again, diff)
		}
		if err == nil && present {
			c, _ := json.Marshal(l.Confidentiality)
			back, perr := ParseConfidentiality(c)
			if perr != nil {
				t.Fatalf("readable label %s does not parse back: %v", c, perr)
			}
			if diff := cmp.Diff(l.Confidentiality, back); diff != "" {
				t.Fatalf("label round trip (-read +parsed):\n%s", diff)
			}
		}

		r := Measure(Input{Rows: []jsontext.Value{row}})
		// Told where the label is (Input.LabelSpans), with and without a
		// ceiling that withholds some labels, Measure answers the same.
		for _, in := range []Input{{}, {Ceiling: CeilingOf(conf(`"A"`))}} {
			in.Rows = []jsontext.Value{row}
			want := Measure(in)
			in.LabelSpans = labelSpans(in.Rows)
			if diff := cmp.Diff(want, Measure(in), bytesEqual); diff != "" {
				t.Fatalf("Measure(%q) told %+v (-told nothing +told):\n%s", row, in.LabelSpans, diff)
			}
		}
		if len(r.Entries) != 1 {
			t.Fatalf("Measure(%q): %d entries, want 1 (omitted %d)", row, len(r.Entries), r.Omitted)
		}
		e := r.Entries[0]
		if (err != nil) != (e.ReasonCode == ReasonLabelReadFailed) || (err == nil) != e.Admitted {
			t.Fatalf("Measure(%q) = %+v, ReadRowLabel error %v", row, e, err)
		}
		if e.Admitted {
			if !json.Valid(e.Value) || !utf8.Valid(e.Value) {
				t.Fatalf("Measure(%q) value %q is not valid JSON", row, e.Value)
			}
			if want := (present && err == nil); (e.LabelSource == SourceRow) != want {
				t.Fatalf("Measure(%q) labelSource %s, present %v", row, e.LabelSource, present)
			}
			if again := jsjson.AppendJS(nil, e.Value); string(again) != string(e.Value) {
				t.Fatalf("Measure(%q) value %q is not in the writer's form (%q)", row, e.Value, again)
			}
		}
	})
}

// FuzzParseConfidentiality checks parse → marshal → parse round trips.
func FuzzParseConfidentiality(f *testing.F) {
	for _, s := range []string{
		`[]`, `["A"]`, `[{"type":"T","x":{"b":1,"a":[1.0,"<>"]}}]`, `[{"anyOf":["A",{"type":"B"}]}]`,
		`[{"anyOf":[]}]`, `[1]`, `[{"type":"T","type":2}]`, "[\"\xff\\ud800\\u2028\"]", `null`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfidentiality(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("json.Marshal(%q): %v", c, err)
		}
		back, err := ParseConfidentiality(out)
		if err != nil {
			t.Fatalf("ParseConfidentiality(%s) after marshal of %q: %v", out, data, err)
		}
		if diff := cmp.Diff(c, back); diff != "" {
			t.Fatalf("round trip of %q through %s (-first +second):\n%s", data, out, diff)
		}
		// A row labeled with the same list reads the same clauses.
		row := append(append([]byte(`{"ifc":{"confidentiality":`), data...), "}}"...)
		l, present, err := ReadRowLabel(row)
		if err != nil || !present {
			t.Fatalf("ReadRowLabel(%q) = (%v, %v), but ParseConfidentiality accepted it", row, present, err)
		}
		if diff := cmp.Diff(c, l.Confidentiality); diff != "" {
			t.Fatalf("ReadRowLabel vs ParseConfidentiality (-parse +row):\n%s", diff)
		}
	})
}

// FuzzAppendJS checks the writer: valid UTF-8 JSON out, idempotent, and the
// streaming path equal to the tree path used for repeated names.
func FuzzAppendJS(f *testing.F) {
	addRowSeeds(f)
	f.Add([]byte(`{"a":"\u0000\u001f\ud83d\ude00\ud83d","b":[1e3,-0.0,true,null]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, cut, err := new(jsjson.Writer).AppendBounded(nil, data, 8)
		if err != nil {
			return
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("new(jsjson.Writer).AppendBounded(%q) = %q: not valid JSON", data, out)
		}
		n, err := jsjson.ParseTree(data)
		if err != nil {
			t.Fatalf("jsjson.ParseTree(%q) fails where the stream succeeded: %v", data, err)
		}
		tree, tcut := jsjson.AppendNode(nil, n, 8)
		if string(tree) != string(out) || tcut != cut {
			t.Fatalf("stream %q (cut %v) != tree %q (cut %v) for %q", out, cut, tree, tcut, data)
		}
		full := jsjson.AppendJS(nil, data)
		if again := jsjson.AppendJS(nil, full); string(again) != string(full) {
			t.Fatalf("AppendJS not idempotent: %q → %q → %q", data, full, again)
		}
		if again, _, _ := new(jsjson.Writer).AppendBounded(nil, out, 8); string(again) != string(out) {
			t.Fatalf("cutting twice changes %q → %q", out, again)
		}
	})
}
