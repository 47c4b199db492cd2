package ifc

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// conf builds a Confidentiality from clause texts.
func conf(clauses ...string) Confidentiality {
	var c Confidentiality
	for _, s := range clauses {
		c = append(c, Clause(s))
	}
	return c
}

func atoms(texts ...string) []Atom {
	var a []Atom
	for _, s := range texts {
		a = append(a, Atom(s))
	}
	return a
}

func TestReadRowLabelReadable(t *testing.T) {
	tests := []struct {
		name        string
		row         string
		want        Label
		wantPresent bool
	}{
		{"no ifc", `{"id":1}`, Label{}, false},
		{"empty row", `{}`, Label{}, false},
		{"nested ifc is data", `{"v":{"ifc":null},"a":[{"ifc":1}]}`, Label{}, false},
		{"public", `{"ifc":{"confidentiality":[]}}`, Label{}, true},
		{"string atom", `{"ifc":{"confidentiality":["A"]}}`, Label{Confidentiality: conf(`"A"`)}, true},
		{"object atom with extra fields", `{"ifc":{"confidentiality":[{"type":"T","x":[1,{"y":2}]}]}}`,
			Label{Confidentiality: conf(`{"type":"T","x":[1,{"y":2}]}`)}, true},
		{"object atom with empty type", `{"ifc":{"confidentiality":[{"type":""}]}}`,
			Label{Confidentiality: conf(`{"type":""}`)}, true},
		{"or clause", `{"ifc":{"confidentiality":[{"anyOf":["A",{"type":"T"}]}]}}`,
			Label{Confidentiality: conf(`{"anyOf":["A",{"type":"T"}]}`)}, true},
		{"several clauses kept in order and duplicated", `{"ifc":{"confidentiality":["B","A","B"]}}`,
			Label{Confidentiality: conf(`"B"`, `"A"`, `"B"`)}, true},
		{"integrity empty", `{"ifc":{"confidentiality":["A"],"integrity":[]}}`,
			Label{Confidentiality: conf(`"A"`)}, true},
		{"integrity atoms", `{"ifc":{"confidentiality":[],"integrity":["I",{"type":"J","k":1}]}}`,
			Label{Integrity: atoms(`"I"`, `{"type":"J","k":1}`)}, true},
		{"other ifc members ignored", `{"ifc":{"confidentiality":["A"],"version":3,"integrity":[],"x":null}}`,
			Label{Confidentiality: conf(`"A"`)}, true},
		{"whitespace compacted", " { \"ifc\" : { \"confidentiality\" : [ { \"type\" : \"T\" , \"n\" : 1.0 } ] } } ",
			Label{Confidentiality: conf(`{"type":"T","n":1.0}`)}, true},
		{"escaped ifc name", `{"\u0069fc":{"confidentiality":["A"]}}`, Label{Confidentiality: conf(`"A"`)}, true},
		{"ifc after other members", `{"a":1,"b":[2],"ifc":{"confidentiality":["A"]}}`, Label{Confidentiality: conf(`"A"`)}, true},
		{"last ifc wins over unreadable", `{"ifc":7,"a":1,"ifc":{"confidentiality":["A"]}}`, Label{Confidentiality: conf(`"A"`)}, true},
		{"last confidentiality wins", `{"ifc":{"confidentiality":7,"confidentiality":["A"]}}`, Label{Confidentiality: conf(`"A"`)}, true},
		{"duplicate in atom keeps last", `{"ifc":{"confidentiality":[{"type":1,"type":"T"}]}}`,
			Label{Confidentiality: conf(`{"type":"T"}`)}, true},
		{"html and separators unescaped", `{"ifc":{"confidentiality":["\u003c\u2028"]}}`,
			Label{Confidentiality: conf("\"<\u2028\"")}, true},
		{"other members repeat", `{"a":1,"a":2,"ifc":{"confidentiality":["A"]}}`, Label{Confidentiality: conf(`"A"`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, present, err := ReadRowLabel(jsontext.Value(tt.row))
			if err != nil {
				t.Fatalf("ReadRowLabel(%s) error: %v", tt.row, err)
			}
			if present != tt.wantPresent {
				t.Errorf("ReadRowLabel(%s) present = %v, want %v", tt.row, present, tt.wantPresent)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadRowLabel(%s) (-want +got):\n%s", tt.row, diff)
			}
		})
	}
}

// unreadableLabels are ifc values that (e.2) refuses.
var unreadableLabels = []struct{ name, ifc string }{
	{"null", `null`},
	{"array", `[]`},
	{"string", `"A"`},
	{"number", `1`},
	{"true", `true`},
	{"empty object", `{}`},
	{"integrity only", `{"integrity":[]}`},
	{"confidentiality null", `{"confidentiality":null}`},
	{"confidentiality object", `{"confidentiality":{}}`},
	{"confidentiality string", `{"confidentiality":"A"}`},
	{"clause number", `{"confidentiality":[1]}`},
	{"clause boolean", `{"confidentiality":[false]}`},
	{"clause null", `{"confidentiality":[null]}`},
	{"clause array", `{"confidentiality":[["A"]]}`},
	{"clause without type", `{"confidentiality":[{"name":"A"}]}`},
	{"clause with numeric type", `{"confidentiality":[{"type":1}]}`},
	{"clause with null type", `{"confidentiality":[{"type":null}]}`},
	{"anyOf string", `{"confidentiality":[{"anyOf":"A"}]}`},
	{"anyOf null", `{"confidentiality":[{"anyOf":null}]}`},
	{"anyOf empty", `{"confidentiality":[{"anyOf":[]}]}`},
	{"anyOf with other member", `{"confidentiality":[{"anyOf":["A"],"other":1}]}`},
	{"typed atom with anyOf", `{"confidentiality":[{"type":"A","anyOf":["B"]}]}`},
	{"typed atom with empty anyOf", `{"confidentiality":[{"type":"A","anyOf":[]}]}`},
	{"nested anyOf", `{"confidentiality":[{"anyOf":[{"anyOf":["A"]}]}]}`},
	{"anyOf number", `{"confidentiality":[{"anyOf":["A",1]}]}`},
	{"anyOf untyped object", `{"confidentiality":[{"anyOf":[{"name":"A"}]}]}`},
	{"anyOf typed atom with anyOf", `{"confidentiality":[{"anyOf":[{"type":"A","anyOf":[]}]}]}`},
	{"one bad clause among good", `{"confidentiality":["A",{"type":"B"},7]}`},
	{"integrity null", `{"confidentiality":[],"integrity":null}`},
	{"integrity string", `{"confidentiality":[],"integrity":"x"}`},
	{"integrity number element", `{"confidentiality":[],"integrity":[17]}`},
	{"integrity untyped element", `{"confidentiality":[],"integrity":[{"name":"x"}]}`},
	{"integrity or clause", `{"confidentiality":[],"integrity":[{"anyOf":["A"]}]}`},
	{"integrity atom with anyOf", `{"confidentiality":[],"integrity":[{"type":"A","anyOf":[]}]}`},
	{"last confidentiality bad", `{"confidentiality":["A"],"confidentiality":null}`},
}

func TestReadRowLabelUnreadable(t *testing.T) {
	type tc struct{ name, row string }
	var tests []tc
	for _, u := range unreadableLabels {
		tests = append(tests, tc{"ifc " + u.name, `{"id":1,"ifc":` + u.ifc + `}`})
	}
	tests = append(tests,
		tc{"last ifc unreadable", `{"ifc":{"confidentiality":["A"]},"ifc":{}}`},
		tc{"row string", `"x"`},
		tc{"row number", `1`},
		tc{"row array", `[{"ifc":{"confidentiality":[]}}]`},
		tc{"row null", `null`},
		tc{"row empty", ``},
		tc{"row invalid JSON", `{"ifc":{"confidentiality":[]}`},
		tc{"row invalid after ifc", `{"ifc":{"confidentiality":[]},"a":}`},
		tc{"row trailing data", `{"ifc":{"confidentiality":[]}} {}`},
		tc{"row unlabeled but invalid", `{"a":[1,}`},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, present, err := ReadRowLabel(jsontext.Value(tt.row))
			if err == nil {
				t.Fatalf("ReadRowLabel(%s) = nil error, want unreadable", tt.row)
			}
			if !present {
				t.Errorf("ReadRowLabel(%s) present = false with error %v; unreadable must never read as absent", tt.row, err)
			}
			if _, ok := errors.AsType[*LabelError](err); !ok {
				t.Errorf("ReadRowLabel(%s) error %T, want *LabelError", tt.row, err)
			}
		})
	}
}

func TestLabelErrorQuotesNoContent(t *testing.T) {
	_, _, err := ReadRowLabel(jsontext.Value(`{"ifc":{"confidentiality":["secret-atom",{"secret-key":"secret-value"}]}}`))
	if err == nil {
		t.Fatal("want error")
	}
	want := "ifc: unreadable label: ifc.confidentiality[1]: object without string type"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestParseConfidentiality(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Confidentiality
		wantErr bool
	}{
		{"empty", `[]`, nil, false},
		{"atoms and or", ` [ "A" , {"type":"T","x":1} , {"anyOf":["A","B"]} ] `, conf(`"A"`, `{"type":"T","x":1}`, `{"anyOf":["A","B"]}`), false},
		{"duplicate member keeps last", `[{"type":"X","type":"T"}]`, conf(`{"type":"T"}`), false},
		{"escapes normalised", `["\u0041\/"]`, conf(`"A/"`), false},
		{"null", `null`, nil, true},
		{"object", `{}`, nil, true},
		{"invalid", `[`, nil, true},
		{"bad clause", `[{"anyOf":[]}]`, nil, true},
		{"number clause", `[1]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfidentiality([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseConfidentiality(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfidentiality(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	// Every form ReadRowLabel refuses in confidentiality is refused here too.
	for _, u := range unreadableLabels {
		n, err := jsjson.ParseTree([]byte(u.ifc))
		if err != nil || n.Member(keyConfidentiality) == nil || n.Member(keyConfidentiality).Kind != jsontext.KindBeginArray || n.Member(keyIntegrity) != nil {
			continue
		}
		c, _ := jsjson.AppendNode(nil, n.Member(keyConfidentiality), -1)
		if _, err := ParseConfidentiality(c); err == nil {
			t.Errorf("ParseConfidentiality(%s) = nil error, want error", c)
		}
	}
}

func TestParseClauses(t *testing.T) {
	got, err := ParseClauses([]byte(`[1, {"anyOf":[]}, {"anyOf":"x"}, "A"]`))
	if err != nil {
		t.Fatalf("ParseClauses: %v", err)
	}
	if diff := cmp.Diff(conf(`1`, `{"anyOf":[]}`, `{"anyOf":"x"}`, `"A"`), got); diff != "" {
		t.Errorf("ParseClauses (-want +got):\n%s", diff)
	}
	for _, in := range []string{`null`, `{}`, `[`, `"A"`} {
		if _, err := ParseClauses([]byte(in)); err == nil {
			t.Errorf("ParseClauses(%s) = nil error, want error", in)
		}
	}
}

func TestParseLabel(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Label
		wantErr bool
	}{
		{"confidentiality only", `{"confidentiality":["A"]}`, Label{Confidentiality: conf(`"A"`)}, false},
		{"both", `{"confidentiality":[],"integrity":["I"]}`, Label{Integrity: atoms(`"I"`)}, false},
		{"unknown member", `{"confidentiality":[],"version":1}`, Label{}, true},
		{"missing confidentiality", `{"integrity":[]}`, Label{}, true},
		{"integrity null", `{"confidentiality":[],"integrity":null}`, Label{}, true},
		{"not an object", `[]`, Label{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLabel([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseLabel(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseLabel(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil confidentiality", Confidentiality(nil), `[]`},
		{"confidentiality", conf(`"A"`, `{"anyOf":["B","C"]}`), `["A",{"anyOf":["B","C"]}]`},
		{"zero label", Label{}, `{"confidentiality":[],"integrity":[]}`},
		{"label", Label{Confidentiality: conf(`"A"`), Integrity: atoms(`{"type":"I"}`)}, `{"confidentiality":["A"],"integrity":[{"type":"I"}]}`},
		{"zero disclosed", Disclosed{}, `{"confidentiality":[],"integrity":[]}`},
		{"disclosed", Disclosed{Confidentiality: [][]string{{"A", "B"}}, Integrity: []string{"I"}}, `{"confidentiality":[["A","B"]],"integrity":["I"]}`},
		{"no ceiling", NoCeiling, `null`},
		{"empty ceiling", CeilingOf(nil), `[]`},
		{"ceiling", CeilingOf(conf(`"A"`)), `["A"]`},
		{"clause", Clause(`{"type":"T"}`), `{"type":"T"}`},
		{"atom", Atom(`"A"`), `"A"`},
		{"clause list", []Clause{Clause(`"A"`)}, `["A"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal(%v) = %s, want %s", tt.v, got, tt.want)
			}
		})
	}
}

func TestUnmarshalRoundTrip(t *testing.T) {
	type stored struct {
		Ceiling Ceiling
		Label   Label
		Conf    Confidentiality
	}
	tests := []stored{
		{},
		{Ceiling: CeilingOf(nil)},
		{Ceiling: CeilingOf(conf(`"<A&>"`, `{"anyOf":[]}`)), Label: Label{Confidentiality: conf("\"\u2028\""), Integrity: atoms(`"I"`)}, Conf: conf(`{"type":"T","n":1.0}`)},
	}
	for i, want := range tests {
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatalf("%d: json.Marshal: %v", i, err)
		}
		var got stored
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%d: json.Unmarshal(%s): %v", i, b, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%d: round trip through %s (-want +got):\n%s", i, b, diff)
		}
	}
}

func TestUnmarshalCanonicalises(t *testing.T) {
	var c Confidentiality
	if err := json.Unmarshal([]byte(`[ {"type" : "T", "type":"U"} , "\u0041" ]`), &c); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(conf(`{"type":"U"}`, `"A"`), c); diff != "" {
		t.Errorf("Confidentiality.UnmarshalJSON (-want +got):\n%s", diff)
	}
	var l Label
	if err := json.Unmarshal([]byte(`{"confidentiality":null}`), &l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Label{}, l); diff != "" {
		t.Errorf("Label.UnmarshalJSON (-want +got):\n%s", diff)
	}
	l = Label{Confidentiality: conf(`"A"`)}
	if err := json.Unmarshal([]byte(`null`), &l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Label{}, l); diff != "" {
		t.Errorf("Label.UnmarshalJSON(null) (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"confidentiality":{}}`), &l); err == nil {
		t.Error("Label.UnmarshalJSON(confidentiality object) = nil error, want error")
	}
}
