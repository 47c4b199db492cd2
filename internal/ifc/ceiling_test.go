package ifc

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	expType = "https://cfc.example/cfc/atom/Expires"
	marker  = `"cfc:label-read-failed"`
)

func expires(ts string) string { return `{"type":"` + expType + `","timestamp":` + ts + `}` }

func TestFits(t *testing.T) {
	tests := []struct {
		name    string
		label   Confidentiality
		ceiling Ceiling
		want    bool
	}{
		{"no ceiling admits anything readable", conf(`"A"`, `{"anyOf":["B","C"]}`), NoCeiling, true},
		{"no ceiling admits the marker", conf(marker), NoCeiling, true},
		{"no ceiling admits public", nil, NoCeiling, true},
		{"empty ceiling admits public", nil, CeilingOf(nil), true},
		{"empty ceiling refuses any clause", conf(`"A"`), CeilingOf(nil), false},
		{"equal atom", conf(`"A"`), CeilingOf(conf(`"A"`)), true},
		{"other atom", conf(`"B"`), CeilingOf(conf(`"A"`)), false},
		{"every label clause must fit", conf(`"A"`, `"B"`), CeilingOf(conf(`"A"`)), false},
		{"each label clause may use another ceiling clause", conf(`"A"`, `"B"`), CeilingOf(conf(`"B"`, `"A"`)), true},
		{"ceiling atom admits wider or", conf(`{"anyOf":["A","B"]}`), CeilingOf(conf(`"A"`)), true},
		{"ceiling or does not admit one of its atoms", conf(`"A"`), CeilingOf(conf(`{"anyOf":["A","B"]}`)), false},
		{"ceiling or admits label or with both", conf(`{"anyOf":["B","C","A"]}`), CeilingOf(conf(`{"anyOf":["A","B"]}`)), true},
		{"ceiling or with zero alternatives admits nothing", conf(`"A"`), CeilingOf(conf(`{"anyOf":[]}`)), false},
		{"marker outside a ceiling that lists it", conf(marker), CeilingOf(conf(marker)), false},
		{"marker as an alternative", conf(`{"anyOf":["A",` + marker + `]}`), CeilingOf(conf(`"A"`)), false},
		{"object key order ignored", conf(`{"type":"T","a":1,"b":[1,{"x":2,"y":3}]}`), CeilingOf(conf(`{"b":[1,{"y":3,"x":2}],"a":1,"type":"T"}`)), true},
		{"numbers compare by value", conf(`{"type":"T","n":1.0}`), CeilingOf(conf(`{"type":"T","n":1e0}`)), true},
		{"array order matters", conf(`{"type":"T","n":[1,2]}`), CeilingOf(conf(`{"type":"T","n":[2,1]}`)), false},
		{"extra member differs", conf(`{"type":"T","x":1}`), CeilingOf(conf(`{"type":"T"}`)), false},
		{"string is not number", conf(`{"type":"T","n":"1"}`), CeilingOf(conf(`{"type":"T","n":1}`)), false},
		{"escaped spelling equal", conf(`"A"`), CeilingOf(conf(`"\u0041"`)), true},
		{"expires earlier ceiling admits later label", conf(expires("200")), CeilingOf(conf(expires("100"))), true},
		{"expires equal", conf(expires("100")), CeilingOf(conf(expires("1e2"))), true},
		{"expires later ceiling refuses earlier label", conf(expires("100")), CeilingOf(conf(expires("200"))), false},
		{"expires key order", conf(`{"timestamp":300,"type":"` + expType + `"}`), CeilingOf(conf(expires("100"))), true},
		{"expires with extra key is plain", conf(`{"type":"` + expType + `","timestamp":300,"x":1}`), CeilingOf(conf(`{"type":"` + expType + `","timestamp":100,"x":1}`)), false},
		{"expires string timestamp is plain", conf(`{"type":"` + expType + `","timestamp":"300"}`), CeilingOf(conf(`{"type":"` + expType + `","timestamp":"100"}`)), false},
		{"expires infinite timestamp is plain", conf(`{"type":"` + expType + `","timestamp":1e400}`), CeilingOf(conf(expires("100"))), false},
		{"expires different types do not order", conf(`{"type":"https://other/cfc/atom/Expires","timestamp":300}`), CeilingOf(conf(expires("100"))), false},
		{"expires wrong suffix is plain", conf(`{"type":"https://x/Expires","timestamp":300}`), CeilingOf(conf(`{"type":"https://x/Expires","timestamp":100}`)), false},
		{"expires inside or", conf(`{"anyOf":["A",` + expires("300") + `]}`), CeilingOf(conf(expires("100"))), true},
		{"invalid label clause outside", conf(`{`), CeilingOf(conf(`"A"`)), false},
		{"invalid ceiling clause admits nothing", conf(`"A"`), CeilingOf(conf(`{`)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fits(tt.label, tt.ceiling); got != tt.want {
				t.Errorf("Fits(%s, %v) = %v, want %v", appendClauses(nil, tt.label), tt.ceiling, got, tt.want)
			}
			outside := Outside(tt.label, tt.ceiling)
			if (len(outside) == 0) != tt.want {
				t.Errorf("Outside(%s, %v) = %s, inconsistent with Fits = %v", appendClauses(nil, tt.label), tt.ceiling, appendClauses(nil, outside), tt.want)
			}
		})
	}
}

func TestOutside(t *testing.T) {
	got := Outside(conf(`"A"`, `"B"`, marker, `{"anyOf":["A","C"]}`), CeilingOf(conf(`"A"`)))
	want := []Clause{Clause(`"B"`), Clause(marker)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Outside (-want +got):\n%s", diff)
	}
}

func TestCeilingAccessors(t *testing.T) {
	if NoCeiling.Defined() || NoCeiling.Clauses() != nil {
		t.Errorf("NoCeiling: Defined %v Clauses %v, want false nil", NoCeiling.Defined(), NoCeiling.Clauses())
	}
	empty := CeilingOf(Confidentiality{})
	if !empty.Defined() || empty.Clauses() != nil {
		t.Errorf("CeilingOf([]): Defined %v Clauses %v, want true nil", empty.Defined(), empty.Clauses())
	}
	if NoCeiling.Equal(empty) || !empty.Equal(CeilingOf(nil)) {
		t.Error("Equal: NoCeiling must differ from the empty ceiling; two empty ceilings are equal")
	}
	if got := (Ceiling{}).String(); got != "none" {
		t.Errorf("String() = %q, want none", got)
	}
}

func TestMeet(t *testing.T) {
	tests := []struct {
		name string
		a, b Ceiling
		want Ceiling
	}{
		{"both undefined", NoCeiling, NoCeiling, NoCeiling},
		{"undefined left", NoCeiling, CeilingOf(conf(`"B"`, `"A"`)), CeilingOf(conf(`"B"`, `"A"`))},
		{"undefined right", CeilingOf(conf(`"A"`)), NoCeiling, CeilingOf(conf(`"A"`))},
		{"empty wins", CeilingOf(nil), CeilingOf(conf(`"A"`)), CeilingOf(nil)},
		{"equal atoms survive", CeilingOf(conf(`"A"`)), CeilingOf(conf(`"A"`)), CeilingOf(conf(`"A"`))},
		{"distinct atoms become or", CeilingOf(conf(`"B"`)), CeilingOf(conf(`"A"`)), CeilingOf(conf(`{"anyOf":["A","B"]}`))},
		{"argument order irrelevant", CeilingOf(conf(`"A"`)), CeilingOf(conf(`"B"`)), CeilingOf(conf(`{"anyOf":["A","B"]}`))},
		{"structural duplicates removed", CeilingOf(conf(`{"type":"T","a":1}`)), CeilingOf(conf(`{"a":1,"type":"T"}`)), CeilingOf(conf(`{"type":"T","a":1}`))},
		{"pairs", CeilingOf(conf(`"A"`, `"B"`)), CeilingOf(conf(`"A"`, `"C"`)),
			CeilingOf(conf(`"A"`, `{"anyOf":["A","C"]}`, `{"anyOf":["A","B"]}`, `{"anyOf":["B","C"]}`))},
		{"duplicate clauses dropped", CeilingOf(conf(`"A"`, `"A"`)), CeilingOf(conf(`"A"`)), CeilingOf(conf(`"A"`))},
		{"zero alternatives skipped", CeilingOf(conf(`{"anyOf":[]}`, `"A"`)), CeilingOf(conf(`"B"`)), CeilingOf(conf(`{"anyOf":["A","B"]}`))},
		{"only zero alternatives", CeilingOf(conf(`{"anyOf":[]}`)), CeilingOf(conf(`"B"`)), CeilingOf(nil)},
		{"or-shaped single alternative stays wrapped", CeilingOf(conf(`{"anyOf":[{"anyOf":["A"]}]}`)), CeilingOf(conf(`{"anyOf":[{"anyOf":["A"]}]}`)), CeilingOf(conf(`{"anyOf":[{"anyOf":["A"]}]}`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Meet(tt.a, tt.b)
			if !got.Equal(tt.want) {
				t.Errorf("Meet(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestMeetProperty checks the law of (e.5) over generated clauses: a label
// fits Meet(a, b) exactly when it fits both a and b.
func TestMeetProperty(t *testing.T) {
	universe := []string{
		`"A"`, `"B"`, `"C"`,
		`{"type":"T","k":1}`, `{"k":1.0,"type":"T"}`, `{"type":"T","k":2}`,
		expires("100"), expires("200"), expires("300"),
		marker,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	clause := func(allowEmpty bool) string {
		n := rng.IntN(4)
		if n == 0 && !allowEmpty {
			n = 1
		}
		if n == 1 && rng.IntN(2) == 0 {
			return universe[rng.IntN(len(universe))]
		}
		s := `{"anyOf":[`
		for i := range n {
			if i > 0 {
				s += ","
			}
			s += universe[rng.IntN(len(universe))]
		}
		return s + "]}"
	}
	list := func(max int, allowEmpty bool) Confidentiality {
		var c Confidentiality
		for range rng.IntN(max + 1) {
			c = append(c, Clause(clause(allowEmpty)))
		}
		return c
	}
	ceiling := func() Ceiling {
		if rng.IntN(5) == 0 {
			return NoCeiling
		}
		return CeilingOf(list(3, true))
	}
	for i := range 5000 {
		a, b := ceiling(), ceiling()
		m := Meet(a, b)
		l := list(2, false)
		if got, want := Fits(l, m), Fits(l, a) && Fits(l, b); got != want {
			t.Fatalf("case %d: Fits(%s, Meet(%v, %v) = %v) = %v, want %v", i, appendClauses(nil, l), a, b, m, got, want)
		}
		if m2 := Meet(b, a); Fits(l, m2) != Fits(l, m) {
			t.Fatalf("case %d: Meet(b, a) = %v decides %s differently from Meet(a, b) = %v", i, m2, appendClauses(nil, l), m)
		}
	}
}
