package ifc

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Ceiling is an observation ceiling (maxConfidentiality, SEMANTICS (e.1)).
// The zero value, NoCeiling, is undefined: no check, every readable label
// fits. A defined ceiling with no clauses admits only labels with no
// clauses. Ceiling is a value; copies share clause bytes, which are never
// mutated.
type Ceiling struct {
	defined bool
	clauses Confidentiality
}

// NoCeiling is the undefined ceiling.
var NoCeiling Ceiling

// CeilingOf returns the defined ceiling with clauses c; CeilingOf(nil) is
// the defined, empty (public only) ceiling.
func CeilingOf(c Confidentiality) Ceiling {
	if len(c) == 0 {
		c = nil
	}
	return Ceiling{defined: true, clauses: c}
}

// Defined reports whether c is a ceiling at all.
func (c Ceiling) Defined() bool { return c.defined }

// Clauses returns the clauses of c; nil when c is undefined or empty.
func (c Ceiling) Clauses() Confidentiality { return c.clauses }

// Equal reports whether c and d are both undefined, or both defined with
// the same clause texts in the same order. go-cmp uses it.
func (c Ceiling) Equal(d Ceiling) bool {
	if c.defined != d.defined || len(c.clauses) != len(d.clauses) {
		return false
	}
	for i := range c.clauses {
		if !bytes.Equal(c.clauses[i], d.clauses[i]) {
			return false
		}
	}
	return true
}

// String returns "none" for an undefined ceiling, else the clause list.
func (c Ceiling) String() string {
	if !c.defined {
		return "none"
	}
	return string(appendClauses(nil, c.clauses))
}

// MarshalJSON writes null for an undefined ceiling, else the clause array.
func (c Ceiling) MarshalJSON() ([]byte, error) {
	if !c.defined {
		return []byte("null"), nil
	}
	return appendClauses(nil, c.clauses), nil
}

// UnmarshalJSON reads null as NoCeiling and an array as CeilingOf its
// clauses, without checking clause shapes (as Confidentiality.UnmarshalJSON).
func (c *Ceiling) UnmarshalJSON(data []byte) error {
	var cs Confidentiality
	if err := cs.UnmarshalJSON(data); err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*c = NoCeiling
		return nil
	}
	*c = CeilingOf(cs)
	return nil
}

// ReadFailedMarker is the atom that marks a label whose reading failed
// upstream. A clause bearing it is outside every defined ceiling.
const ReadFailedMarker = "cfc:label-read-failed"

// expiresSuffix ends the type of the ordered Expires atom family.
const expiresSuffix = "/cfc/atom/Expires"

var markerText = `"` + ReadFailedMarker + `"`

// atomInfo is an atom compiled for the fit test.
type atomInfo struct {
	text    string // writer's form, as stored
	canon   string // structural form (appendCanon)
	expires bool   // an Expires atom: exactly type and a finite timestamp
	typ     string // the Expires type (writer's form), when expires
	ts      float64
}

// clauseInfo is a clause compiled for the fit test.
type clauseInfo struct {
	alts   []atomInfo
	marker bool // bears ReadFailedMarker, or is not JSON: outside any ceiling
}

func compileAtom(n *jsjson.Node) atomInfo {
	a := atomInfo{canon: string(jsjson.AppendCanon(nil, n))}
	b, _ := jsjson.AppendNode(nil, n, -1)
	a.text = string(b)
	if n.Kind == jsontext.KindBeginObject && len(n.Keys) == 2 {
		t, ts := n.Member(keyType), n.Member(keyTimestamp)
		if t != nil && ts != nil && t.Kind == jsontext.KindString && ts.Kind == jsontext.KindNumber &&
			strings.HasSuffix(jsjson.Unquote(t.Text), expiresSuffix) {
			if f, err := strconv.ParseFloat(ts.Text, 64); err == nil && !math.IsInf(f, 0) {
				a.expires, a.typ, a.ts = true, t.Text, f
			}
		}
	}
	return a
}

// alternatives returns the alternatives of a clause: its anyOf list for an
// OR-clause, else the clause itself.
func alternatives(n *jsjson.Node) []*jsjson.Node {
	if orShaped(n) {
		return n.Vals[0].Vals
	}
	return []*jsjson.Node{n}
}

// orShaped reports whether n is an OR-clause: an object whose sole member
// anyOf is an array.
func orShaped(n *jsjson.Node) bool {
	return n.Kind == jsontext.KindBeginObject && len(n.Keys) == 1 && n.Keys[0] == keyAnyOf &&
		n.Vals[0].Kind == jsontext.KindBeginArray
}

func compileClause(c Clause) clauseInfo {
	n, err := jsjson.ParseTree(c)
	if err != nil {
		return clauseInfo{marker: true}
	}
	var ci clauseInfo
	for _, a := range alternatives(n) {
		ai := compileAtom(a)
		ci.marker = ci.marker || ai.text == markerText
		ci.alts = append(ci.alts, ai)
	}
	return ci
}

func compileClauses(cs Confidentiality) []clauseInfo {
	out := make([]clauseInfo, len(cs))
	for i, c := range cs {
		out[i] = compileClause(c)
	}
	return out
}

// entails reports a ⊨ b for ceiling atom a and label atom b: structural
// equality, or two Expires atoms of the same type with a.timestamp <=
// b.timestamp.
func entails(a, b *atomInfo) bool {
	if a.expires && b.expires && a.typ == b.typ {
		return a.ts <= b.ts
	}
	return a.canon == b.canon
}

// subsumes reports whether ceiling clause c admits label clause l: c has at
// least one alternative and every one of them entails some alternative of l.
func subsumes(c, l *clauseInfo) bool {
	if len(c.alts) == 0 {
		return false
	}
	for i := range c.alts {
		ok := false
		for j := range l.alts {
			if entails(&c.alts[i], &l.alts[j]) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func outsideAll(l *clauseInfo, ceiling []clauseInfo) bool {
	if l.marker {
		return true
	}
	for i := range ceiling {
		if subsumes(&ceiling[i], l) {
			return false
		}
	}
	return true
}

// Outside returns the clauses of conf that do not fit c (SEMANTICS (e.4),
// atomsOutsideCeiling), nil when conf fits. Under NoCeiling nothing is
// outside. Under a defined ceiling a clause is outside when it bears
// ReadFailedMarker (as itself or as an alternative) or when no ceiling
// clause subsumes it: ceiling [A] admits {"anyOf":[A,B]}, ceiling
// [{"anyOf":[A,B]}] does not admit A, and a ceiling clause with no
// alternatives admits nothing. Atoms match by deep structural equality
// (member order ignored, numbers by value), and an Expires atom (exactly
// "type", ending in /cfc/atom/Expires, and a finite numeric "timestamp")
// admits an Expires atom of the same type whose timestamp is not earlier.
// Clause texts that are not JSON are outside every defined ceiling.
func Outside(conf Confidentiality, c Ceiling) []Clause {
	if !c.defined {
		return nil
	}
	ceiling := compileClauses(c.clauses)
	var out []Clause
	for _, cl := range conf {
		ci := compileClause(cl)
		if outsideAll(&ci, ceiling) {
			out = append(out, cl)
		}
	}
	return out
}

// Fits reports whether every clause of conf fits c, that is whether Outside
// returns nothing.
func Fits(conf Confidentiality, c Ceiling) bool {
	if !c.defined {
		return true
	}
	return fitsCompiled(conf, compileClauses(c.clauses))
}

func fitsCompiled(conf Confidentiality, ceiling []clauseInfo) bool {
	for _, cl := range conf {
		ci := compileClause(cl)
		if outsideAll(&ci, ceiling) {
			return false
		}
	}
	return true
}

// Meet returns the ceiling that admits exactly the labels both a and b
// admit (SEMANTICS (e.5)). An undefined side yields the other verbatim.
// Otherwise every pair of clauses (one from a, one from b, neither without
// alternatives) becomes one clause whose alternatives are both lists
// together, structural duplicates removed, sorted by structural form
// (object members sorted by name, numbers by value) so the result does not
// depend on spelling or argument order; a single alternative is written as
// the bare atom unless it is itself OR-shaped. Structurally duplicate
// clauses are then dropped, keeping the first. Meet with an empty defined
// ceiling is the empty ceiling.
func Meet(a, b Ceiling) Ceiling {
	if !a.defined {
		return b
	}
	if !b.defined {
		return a
	}
	pa, pb := parseClauses(a.clauses), parseClauses(b.clauses)
	var out Confidentiality
	seen := map[string]bool{}
	for _, ca := range pa {
		for _, cb := range pb {
			if ca == nil || cb == nil {
				continue
			}
			aa, ab := alternatives(ca), alternatives(cb)
			if len(aa) == 0 || len(ab) == 0 {
				continue
			}
			text, canon := joinAlternatives(append(slices.Clip(aa), ab...))
			if seen[canon] {
				continue
			}
			seen[canon] = true
			out = append(out, text)
		}
	}
	return CeilingOf(out)
}

// parseClauses parses clause texts; an unparsable clause is nil.
func parseClauses(cs Confidentiality) []*jsjson.Node {
	out := make([]*jsjson.Node, len(cs))
	for i, c := range cs {
		out[i], _ = jsjson.ParseTree(c)
	}
	return out
}

// joinAlternatives builds the normalised clause over alts and returns its
// text and structural form.
func joinAlternatives(alts []*jsjson.Node) (Clause, string) {
	type alt struct {
		n     *jsjson.Node
		canon string
	}
	var list []alt
	for _, n := range alts {
		c := string(jsjson.AppendCanon(nil, n))
		if !slices.ContainsFunc(list, func(a alt) bool { return a.canon == c }) {
			list = append(list, alt{n, c})
		}
	}
	slices.SortStableFunc(list, func(x, y alt) int { return strings.Compare(x.canon, y.canon) })
	if len(list) == 1 && !orShaped(list[0].n) {
		b, _ := jsjson.AppendNode(nil, list[0].n, -1)
		return b, list[0].canon
	}
	text := []byte(`{"anyOf":[`)
	canon := []byte(`{"anyOf":[`)
	for i, a := range list {
		if i > 0 {
			text = append(text, ',')
			canon = append(canon, ',')
		}
		text, _ = jsjson.AppendNode(text, a.n, -1)
		canon = append(canon, a.canon...)
	}
	return append(text, "]}"...), string(append(canon, "]}"...))
}
