package store

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/ifc"
)

func testRef(n int) Referent {
	return Referent{
		Kind:        "document",
		Source:      "loom_search",
		Value:       []byte(fmt.Sprintf(`{"n":%d}`, n)),
		Label:       ifc.Label{Confidentiality: ifc.Confidentiality{ifc.Clause(`"A"`)}},
		LabelSource: "row",
	}
}

func TestMintToken(t *testing.T) {
	identity := Identity(testRef(1))
	// An independent spelling of the derivation.
	want := func(run string, attempt int) string {
		pre := run + "\x00" + string(identity)
		if attempt > 0 {
			pre += "\x00" + strconv.Itoa(attempt)
		}
		sum := sha256.Sum256([]byte(pre))
		var b strings.Builder
		b.WriteString("cfh:v:")
		for _, c := range sum[:5] {
			b.WriteByte("23456789abcdefghjkmnpqrstvwxyz"[c%30])
		}
		return b.String()
	}
	seen := map[string]string{}
	for _, tc := range []struct {
		run     string
		attempt int
	}{
		{"run-1", 0}, {"run-1", 1}, {"run-1", 2}, {"run-1", 10}, {"run-2", 0}, {"", 0},
	} {
		got := MintToken(tc.run, identity, tc.attempt)
		if w := want(tc.run, tc.attempt); got != w {
			t.Errorf("MintToken(%q, id, %d) = %q, want %q", tc.run, tc.attempt, got, w)
		}
		if again := MintToken(tc.run, identity, tc.attempt); again != got {
			t.Errorf("MintToken(%q, id, %d) not deterministic: %q then %q", tc.run, tc.attempt, got, again)
		}
		if !IsValueToken(got) || len(got) != 11 {
			t.Errorf("MintToken(%q, id, %d) = %q, not an 11-character value token", tc.run, tc.attempt, got)
		}
		key := fmt.Sprintf("%s/%d", tc.run, tc.attempt)
		if prev, ok := seen[got]; ok {
			t.Errorf("MintToken gave %q for both %s and %s", got, prev, key)
		}
		seen[got] = key
	}
}

func TestIdentity(t *testing.T) {
	base := testRef(1)
	with := func(f func(r *Referent)) Referent {
		r := base
		r.Label = ifc.Label{
			Confidentiality: append(ifc.Confidentiality(nil), base.Label.Confidentiality...),
			Integrity:       append([]ifc.Atom(nil), base.Label.Integrity...),
		}
		f(&r)
		return r
	}
	tests := []struct {
		name string
		r    Referent
		same bool
	}{
		{"token ignored", with(func(r *Referent) { r.Token = "cfh:v:22222" }), true},
		{"nil integrity equals empty", with(func(r *Referent) { r.Label.Integrity = []ifc.Atom{} }), true},
		{"kind", with(func(r *Referent) { r.Kind = "cell" }), false},
		{"source", with(func(r *Referent) { r.Source = "loom_people" }), false},
		{"value", with(func(r *Referent) { r.Value = []byte(`{"n":2}`) }), false},
		{"labelSource", with(func(r *Referent) { r.LabelSource = "query" }), false},
		{"public", with(func(r *Referent) { r.Label.Confidentiality = nil }), false},
		{"clause added", with(func(r *Referent) { r.Label.Confidentiality = append(r.Label.Confidentiality, ifc.Clause(`"B"`)) }), false},
		{"integrity", with(func(r *Referent) { r.Label.Integrity = []ifc.Atom{ifc.Atom(`"I"`)} }), false},
		{"clause moved to integrity", with(func(r *Referent) {
			r.Label.Confidentiality, r.Label.Integrity = nil, []ifc.Atom{ifc.Atom(`"A"`)}
		}), false},
		{"field boundary", with(func(r *Referent) { r.Kind, r.Source = "documentloom", "_search" }), false},
		{"value/label boundary", with(func(r *Referent) { r.Value = []byte(`{"n":1}{`) }), false},
	}
	want := string(Identity(base))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Identity(tt.r))
			if (got == want) != tt.same {
				t.Errorf("Identity(%s) == Identity(base) is %v, want %v", tt.name, got == want, tt.same)
			}
		})
	}
	nilConf := base
	nilConf.Label.Confidentiality = nil
	emptyConf := base
	emptyConf.Label.Confidentiality = ifc.Confidentiality{}
	if string(Identity(nilConf)) != string(Identity(emptyConf)) {
		t.Errorf("nil and empty confidentiality have different identities")
	}
	if n := labelJSONLen(base.Label); n != len(appendLabelJSON(nil, base.Label)) {
		t.Errorf("labelJSONLen = %d, want %d", n, len(appendLabelJSON(nil, base.Label)))
	}
	if got := string(appendLabelJSON(nil, ifc.Label{})); got != `{"confidentiality":[],"integrity":[]}` {
		t.Errorf("label JSON of the public label = %s", got)
	}
}

func TestTokenRecognisers(t *testing.T) {
	tests := []struct {
		s          string
		value, any bool
	}{
		{"cfh:v:22222", true, true},
		{"cfh:v:abcdez", true, true},
		{"cfh:a:23456", false, true},
		{"cfh:v:2222", false, false},
		{"cfh:v:2222i", false, false},
		{"cfh:v:2222l", false, false},
		{"cfh:v:2222o", false, false},
		{"cfh:v:2222u", false, false},
		{"cfh:v:2222A", false, false},
		{"cfh:v:22221", false, false},
		{"cfh:x:22222", false, false},
		{"CFH:V:22222", false, false},
		{" cfh:v:22222", false, false},
		{"cfh:v:22222 ", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := IsValueToken(tt.s); got != tt.value {
			t.Errorf("IsValueToken(%q) = %v, want %v", tt.s, got, tt.value)
		}
		if got := IsToken(tt.s); got != tt.any {
			t.Errorf("IsToken(%q) = %v, want %v", tt.s, got, tt.any)
		}
		whole := TokenPattern.FindString(tt.s) == tt.s && tt.s != ""
		if whole != tt.any {
			t.Errorf("TokenPattern matches all of %q = %v, want %v", tt.s, whole, tt.any)
		}
	}
	text := `see cfh:v:abcde, {"x":"cfh:a:zzzzzz"} and cfh:v:abcd and cfh:v:abcdei`
	got := TokenPattern.FindAllString(text, -1)
	want := []string{"cfh:v:abcde", "cfh:a:zzzzzz", "cfh:v:abcde"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TokenPattern.FindAllString = %q, want %q", got, want)
	}
}
