package ifc

import "testing"

// A ceiling clause {"anyOf": []} is a valid ceiling (SEMANTICS e.4): it
// subsumes no label clause, so the ceiling admits only public labels. A
// label may not hold it.
func TestEmptyAlternativeCeiling(t *testing.T) {
	conf, err := ParseCeiling([]byte(`[{"anyOf": []}]`))
	if err != nil {
		t.Fatalf("ParseCeiling: %v", err)
	}
	c := CeilingOf(conf)
	if !Fits(nil, c) {
		t.Errorf("a public label does not fit")
	}
	for _, l := range []string{`["https://loom.example/facet/work"]`, `[{"anyOf":["a","b"]}]`} {
		lc, err := ParseConfidentiality([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if Fits(lc, c) {
			t.Errorf("label %s fits the empty-alternative ceiling", l)
		}
	}
	if _, err := ParseConfidentiality([]byte(`[{"anyOf": []}]`)); err == nil {
		t.Errorf("a label holding {\"anyOf\": []} was accepted")
	}
	for _, bad := range []string{`[{"anyOf": [], "x": 1}]`, `[{"anyOf": [1]}]`, `[7]`, `{}`} {
		if _, err := ParseCeiling([]byte(bad)); err == nil {
			t.Errorf("ParseCeiling(%s) accepted", bad)
		}
	}
	if got, err := ParseCeiling([]byte(`["a", {"anyOf": []}]`)); err != nil || len(got) != 2 {
		t.Errorf("ParseCeiling of two clauses = %v, %v", got, err)
	}
}
