package store

import (
	"context"
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

// preInsert holds tok in the run for a referent of a different identity, as
// if it had been minted earlier.
func preInsert(t *testing.T, m *Memory, id, tok string, r Referent) {
	t.Helper()
	k, ok := tokenKey(tok)
	if !ok {
		t.Fatalf("preInsert: %q is not a token", tok)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mr := m.runs[id]
	if mr.ids == nil {
		mr.ids = map[[sha256.Size]byte]int32{}
		mr.tokens = map[[tokenWidth]byte]int32{}
	}
	r.Token = tok
	mr.ids[sha256.Sum256(append([]byte(id+"\x00"), Identity(r)...))] = int32(len(mr.handles))
	mr.tokens[k] = int32(len(mr.handles))
	mr.handles = append(mr.handles, r)
	mr.run.Handles = len(mr.handles)
}

func newTestRun(t *testing.T, id string) *Memory {
	t.Helper()
	m := NewMemory(MemoryOptions{})
	if err := m.CreateRun(context.Background(), Run{ID: id, TokenHash: HashToken(id)}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMintCollisionPreInserted(t *testing.T) {
	ctx := context.Background()
	const id = "run-collide"
	m := newTestRun(t, id)
	c := testRef(3)
	ident := Identity(c)
	// The first two derivations of c's token are held by other referents.
	preInsert(t, m, id, MintToken(id, ident, 0), testRef(100))
	preInsert(t, m, id, MintToken(id, ident, 1), testRef(101))
	toks, err := m.Mint(ctx, id, []Referent{c, testRef(100)}, MintLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := MintToken(id, ident, 2); toks[0] != want {
		t.Errorf("Mint(c) = %q, want attempt 2 %q", toks[0], want)
	}
	if want := MintToken(id, ident, 0); toks[1] != want {
		t.Errorf("Mint(holder of attempt 0) = %q, want its held %q", toks[1], want)
	}
	again, err := m.Mint(ctx, id, []Referent{c}, MintLimits{})
	if err != nil || again[0] != toks[0] {
		t.Errorf("re-Mint(c) = %q, %v, want %q", again, err, toks[0])
	}
	got, ok, err := m.Handle(ctx, id, toks[0])
	if err != nil || !ok || string(got.Value) != string(c.Value) {
		t.Errorf("Handle(%q) = %s, %v, %v, want c", toks[0], got.Value, ok, err)
	}
	if hs, _ := m.Handles(ctx, id); len(hs) != 3 {
		t.Errorf("Handles = %d, want 3", len(hs))
	}
}

// collidingPair finds two referents whose first tokens in run id coincide.
func collidingPair(t *testing.T, id string) (a, b Referent) {
	t.Helper()
	seen := map[string]int{}
	for n := range 1_000_000 {
		tok := MintToken(id, Identity(testRef(n)), 0)
		if prev, ok := seen[tok]; ok {
			return testRef(prev), testRef(n)
		}
		seen[tok] = n
	}
	t.Fatal("no collision in 1e6 referents")
	return
}

func TestMintCollisionNatural(t *testing.T) {
	ctx := context.Background()
	const id = "run-birthday"
	a, b := collidingPair(t, id)
	first := MintToken(id, Identity(a), 0)
	if MintToken(id, Identity(b), 0) != first {
		t.Fatal("collidingPair returned a non-colliding pair")
	}
	retryB := MintToken(id, Identity(b), 1)
	retryA := MintToken(id, Identity(a), 1)
	tests := []struct {
		name    string
		batches [][]Referent
		want    [2]string // tokens of a and b
	}{
		{"one batch", [][]Referent{{a, b}}, [2]string{first, retryB}},
		{"one batch, b first", [][]Referent{{b, a}}, [2]string{retryA, first}},
		{"two batches", [][]Referent{{a}, {b}}, [2]string{first, retryB}},
		{"two batches, b first", [][]Referent{{b}, {a}}, [2]string{retryA, first}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestRun(t, id)
			got := map[string]string{}
			for _, batch := range tt.batches {
				toks, err := m.Mint(ctx, id, batch, MintLimits{})
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range batch {
					got[string(r.Value)] = toks[i]
				}
			}
			if got[string(a.Value)] != tt.want[0] || got[string(b.Value)] != tt.want[1] {
				t.Errorf("tokens a, b = %q, %q, want %q, %q",
					got[string(a.Value)], got[string(b.Value)], tt.want[0], tt.want[1])
			}
			for _, r := range []Referent{a, b} {
				h, ok, err := m.Handle(ctx, id, got[string(r.Value)])
				if err != nil || !ok || string(h.Value) != string(r.Value) {
					t.Errorf("Handle(%q) = %s, %v, %v, want %s", got[string(r.Value)], h.Value, ok, err, r.Value)
				}
			}
		})
	}
}

func TestMintHandleLimitWithCollision(t *testing.T) {
	// A refused batch must not leave a retried token behind.
	ctx := context.Background()
	const id = "run-birthday"
	a, b := collidingPair(t, id)
	m := newTestRun(t, id)
	if _, err := m.Mint(ctx, id, []Referent{a, b, testRef(-1)}, MintLimits{Handles: 2}); err != ErrHandleLimit {
		t.Fatalf("Mint(3 new, max 2) = %v, want ErrHandleLimit", err)
	}
	toks, err := m.Mint(ctx, id, []Referent{b}, MintLimits{Handles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := MintToken(id, Identity(b), 0); toks[0] != want {
		t.Errorf("Mint(b) after refusal = %q, want attempt 0 %q", toks[0], want)
	}
}
