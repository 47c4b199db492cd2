package ifc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJoin(t *testing.T) {
	tests := []struct {
		name  string
		lists []Confidentiality
		want  Confidentiality
	}{
		{"none", nil, nil},
		{"all empty is nil", []Confidentiality{nil, {}, nil}, nil},
		{"first occurrence order", []Confidentiality{conf(`"B"`, `"A"`), conf(`"C"`, `"A"`, `"B"`)}, conf(`"B"`, `"A"`, `"C"`)},
		{"duplicates within one list", []Confidentiality{conf(`"A"`, `"A"`)}, conf(`"A"`)},
		{"different spelling counts twice", []Confidentiality{conf(`{"type":"T","a":1}`), conf(`{"a":1,"type":"T"}`)}, conf(`{"type":"T","a":1}`, `{"a":1,"type":"T"}`)},
		{"or clauses by text", []Confidentiality{conf(`{"anyOf":["A","B"]}`), conf(`{"anyOf":["B","A"]}`, `{"anyOf":["A","B"]}`)}, conf(`{"anyOf":["A","B"]}`, `{"anyOf":["B","A"]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Join(tt.lists...)); diff != "" {
				t.Errorf("Join (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJoinMany crosses the number of clauses Join keeps in a list
// before it uses a map, against the plain reading of its rule.
func TestJoinMany(t *testing.T) {
	plainJoin := func(lists ...Confidentiality) Confidentiality {
		var out Confidentiality
		seen := map[string]bool{}
		for _, l := range lists {
			for _, c := range l {
				if !seen[string(c)] {
					seen[string(c)] = true
					out = append(out, c)
				}
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 500 {
		lists := make([]Confidentiality, rng.IntN(8))
		for i := range lists {
			for range rng.IntN(12) {
				lists[i] = append(lists[i], Clause(fmt.Sprintf(`"c%d"`, rng.IntN(3*maxLinearJoin))))
			}
		}
		if diff := cmp.Diff(plainJoin(lists...), Join(lists...)); diff != "" {
			t.Fatalf("Join(%q) (-plain +got):\n%s", lists, diff)
		}
	}
}

func TestJoinModelContext(t *testing.T) {
	const psi = `"https://cfc.example/cfc/atom/PromptSlotInfluence"`
	psiObj := `{"type":"https://cfc.example/cfc/atom/PromptSlotInfluence","slot":"x"}`
	tests := []struct {
		name      string
		prev, obs Confidentiality
		want      Confidentiality
	}{
		{"empty", nil, nil, nil},
		{"join", conf(`"A"`), conf(`"B"`, `"A"`), conf(`"A"`, `"B"`)},
		{"string atom dropped", conf(`"A"`), conf(psi), conf(`"A"`)},
		{"object atom dropped", conf(psiObj, `"A"`), nil, conf(`"A"`)},
		{"only influence gives nil", conf(psi), conf(psiObj), nil},
		{"alternative removed", conf(`{"anyOf":["A",` + psi + `,"B"]}`), nil, conf(`{"anyOf":["A","B"]}`)},
		{"or left with one is unwrapped and deduplicated", conf(`"A"`, `{"anyOf":["A",`+psiObj+`]}`), nil, conf(`"A"`)},
		{"or left with none dropped", conf(`{"anyOf":[` + psi + `]}`), conf(`"B"`), conf(`"B"`)},
		{"suffix only", conf(`"PromptSlotInfluenceX"`), nil, conf(`"PromptSlotInfluenceX"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second reads the clauses from the cache
				if diff := cmp.Diff(tt.want, JoinModelContext(tt.prev, tt.obs)); diff != "" {
					t.Errorf("JoinModelContext (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestMeetIntegrity(t *testing.T) {
	tests := []struct {
		name  string
		lists [][]Atom
		want  []Atom
	}{
		{"no lists", nil, nil},
		{"one list deduplicated", [][]Atom{atoms(`"A"`, `"B"`, `"A"`)}, atoms(`"A"`, `"B"`)},
		{"common only", [][]Atom{atoms(`"A"`, `"B"`, `"C"`), atoms(`"C"`, `"A"`), atoms(`"A"`, `"C"`, `"D"`)}, atoms(`"A"`, `"C"`)},
		{"structural equality", [][]Atom{atoms(`{"type":"T","a":1}`), atoms(`{"a":1.0,"type":"T"}`)}, atoms(`{"type":"T","a":1}`)},
		{"an empty list empties the meet", [][]Atom{atoms(`"A"`), nil}, nil},
		{"nothing common", [][]Atom{atoms(`"A"`), atoms(`"B"`)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MeetIntegrity(tt.lists...)); diff != "" {
				t.Errorf("MeetIntegrity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDisclose(t *testing.T) {
	tests := []struct {
		name  string
		label Label
		want  Disclosed
	}{
		{"public", Label{}, Disclosed{Confidentiality: [][]string{}, Integrity: []string{}}},
		{"string and object atoms", Label{Confidentiality: conf(`"A"`, `{"type":"T","secret":"s"}`)},
			Disclosed{Confidentiality: [][]string{{"A"}, {"T"}}, Integrity: []string{}}},
		{"or in written order with duplicates", Label{Confidentiality: conf(`{"anyOf":["B",{"type":"A","x":1},"B"]}`)},
			Disclosed{Confidentiality: [][]string{{"B", "A", "B"}}, Integrity: []string{}}},
		{"untypeable alternatives dropped", Label{Confidentiality: conf(`{"anyOf":[1,"A",{"name":"n"}]}`)},
			Disclosed{Confidentiality: [][]string{{"A"}}, Integrity: []string{}}},
		{"empty clause dropped", Label{Confidentiality: conf(`{"anyOf":[]}`, `7`, `{"type":3}`, `"A"`)},
			Disclosed{Confidentiality: [][]string{{"A"}}, Integrity: []string{}}},
		{"integrity types", Label{Integrity: atoms(`"I"`, `{"type":"J","v":2}`, `{"name":"x"}`)},
			Disclosed{Confidentiality: [][]string{}, Integrity: []string{"I", "J"}}},
		{"escapes decoded", Label{Confidentiality: conf(`"a\"b\u2028"`)},
			Disclosed{Confidentiality: [][]string{{"a\"b\u2028"}}, Integrity: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Disclose(tt.label)); diff != "" {
				t.Errorf("Disclose (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLabelForUnlabeledRow(t *testing.T) {
	tests := []struct {
		name              string
		query, configured Confidentiality
		want              Label
	}{
		{"nothing observed is public", nil, nil, Label{}},
		{"query label", conf(`"A"`), nil, Label{Confidentiality: conf(`"A"`)}},
		{"configured only", nil, conf(`"F"`), Label{Confidentiality: conf(`"F"`)}},
		{"joined without duplicates", conf(`"A"`, `"F"`), conf(`"F"`, `"G"`), Label{Confidentiality: conf(`"A"`, `"F"`, `"G"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, LabelForUnlabeledRow(tt.query, tt.configured)); diff != "" {
				t.Errorf("LabelForUnlabeledRow (-want +got):\n%s", diff)
			}
		})
	}
}
