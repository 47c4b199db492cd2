package ifc

import (
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Join merges confidentiality lists (SEMANTICS (e.6)): every clause once,
// in first-occurrence order, duplicates judged by exact clause text (so one
// atom spelled with two member orders counts twice). It returns nil when
// the result is empty, which callers read as "nothing observed". The result
// shares clause bytes with the inputs.
func Join(lists ...Confidentiality) Confidentiality {
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total == 0 {
		return nil
	}
	out := make(Confidentiality, 0, min(total, 8))
	var seen map[string]bool // once out is long; before, out is searched
	for _, l := range lists {
		for _, c := range l {
			switch {
			case seen != nil:
				if seen[string(c)] {
					continue
				}
				seen[string(c)] = true
			case slices.ContainsFunc(out, func(o Clause) bool { return string(o) == string(c) }):
				continue
			case len(out) == maxLinearJoin:
				seen = make(map[string]bool, 4*maxLinearJoin)
				for _, o := range out {
					seen[string(o)] = true
				}
				seen[string(c)] = true
			}
			out = append(out, c)
		}
	}
	return out
}

// maxLinearJoin is how many distinct clauses Join finds by searching its
// result before it keeps them in a map: labels have a handful.
const maxLinearJoin = 16

// promptSlotInfluence ends the type of atoms that record prompt-slot
// influence, an integrity fact that never belongs in confidentiality.
const promptSlotInfluence = "PromptSlotInfluence"

// JoinModelContext folds an observation into a run's model-context label:
// Join(prev, obs) with every atom whose type ends in PromptSlotInfluence
// removed. A bare such atom drops its clause; inside an OR-clause only the
// alternative goes (which narrows who may read), and an OR-clause left with
// one alternative is written as that atom, with none it is dropped.
func JoinModelContext(prev, obs Confidentiality) Confidentiality {
	var out Confidentiality
	for _, c := range Join(prev, obs) {
		if c, ok := promptSlotReads.drop(c); ok {
			out = append(out, c)
		}
	}
	return Join(out)
}

// promptSlotRead is what dropPromptSlot does with one clause text.
type promptSlotRead struct {
	dropped bool
	changed Clause // the clause left, when not the one given
}

// promptSlotCache keeps dropPromptSlot's decisions process-wide, by clause
// text: a run's model-context label is folded on every call that admits a
// row, and its clauses repeat.
type promptSlotCache struct{ reads readCache[promptSlotRead] }

var promptSlotReads promptSlotCache

// drop is dropPromptSlot(c), read once per distinct clause text. A clause
// left unchanged is c itself.
func (p *promptSlotCache) drop(c Clause) (Clause, bool) {
	r := p.reads.get(c, func() promptSlotRead {
		out, ok := dropPromptSlot(c)
		switch {
		case !ok:
			return promptSlotRead{dropped: true}
		case len(out) == len(c) && (len(c) == 0 || &out[0] == &c[0]):
			return promptSlotRead{}
		}
		return promptSlotRead{changed: out}
	})
	switch {
	case r.dropped:
		return nil, false
	case r.changed != nil:
		return r.changed, true
	}
	return c, true
}

// dropPromptSlot removes PromptSlotInfluence alternatives from c; it reports
// false when nothing is left.
func dropPromptSlot(c Clause) (Clause, bool) {
	n, err := jsjson.ParseTree(c)
	if err != nil {
		return c, true
	}
	alts := alternatives(n)
	kept := slices.DeleteFunc(slices.Clone(alts), func(a *jsjson.Node) bool {
		t, ok := atomType(a)
		return ok && strings.HasSuffix(t, promptSlotInfluence)
	})
	switch {
	case len(kept) == len(alts):
		return c, true
	case len(kept) == 0:
		return nil, false
	case len(kept) == 1 && !orShaped(kept[0]):
		b, _ := jsjson.AppendNode(nil, kept[0], -1)
		return b, true
	}
	b := []byte(`{"anyOf":[`)
	for i, a := range kept {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsjson.AppendNode(b, a, -1)
	}
	return append(b, "]}"...), true
}

// MeetIntegrity returns the atoms present, by structural equality, on every
// list: the receipt's hereditary integrity meet. Order and spelling are
// those of the first list, each atom once. It returns nil for no lists or
// no common atom.
func MeetIntegrity(lists ...[]Atom) []Atom {
	if len(lists) == 0 {
		return nil
	}
	sets := make([]map[string]bool, len(lists))
	for i, l := range lists[1:] {
		sets[i+1] = map[string]bool{}
		for _, a := range l {
			sets[i+1][atomCanon(a)] = true
		}
	}
	var out []Atom
	seen := map[string]bool{}
	for _, a := range lists[0] {
		c := atomCanon(a)
		if seen[c] {
			continue
		}
		seen[c] = true
		if !slices.ContainsFunc(sets[1:], func(s map[string]bool) bool { return !s[c] }) {
			out = append(out, a)
		}
	}
	return out
}

// atomCanon returns the structural form of an atom; a text that is not
// JSON is its own form, prefixed so it matches no JSON value.
func atomCanon(a Atom) string {
	n, err := jsjson.ParseTree(a)
	if err != nil {
		return "\x00" + string(a)
	}
	return string(jsjson.AppendCanon(nil, n))
}

// atomType returns the type of an atom: a string atom is its own type, an
// object atom's type is its string "type" member; other atoms have none.
func atomType(n *jsjson.Node) (string, bool) {
	switch n.Kind {
	case jsontext.KindString:
		return jsjson.Unquote(n.Text), true
	case jsontext.KindBeginObject:
		if t := n.Member(keyType); t != nil && t.Kind == jsontext.KindString {
			return jsjson.Unquote(t.Text), true
		}
	}
	return "", false
}

// Disclose returns the part of l the agent may see (SEMANTICS (e.7)): each
// clause becomes the types of its alternatives in written order, duplicates
// kept, untypeable alternatives dropped and a clause left empty dropped;
// integrity becomes its atoms' types. Nothing but types crosses. Both lists
// are non-nil, and the caller's own.
func Disclose(l Label) Disclosed {
	return labelReads.disclose(l)
}

// DiscloseShared is Disclose without the copy: the value is shared by every
// caller of the same label, so neither it nor its lists may be modified.
// It is for a disclosure that is only read or copied, such as a call log
// entry that the store copies when it keeps it.
func DiscloseShared(l Label) Disclosed {
	var kb [keyBuf]byte
	key := textKey(kb[:0], l)
	return labelReads.disclosedValues.get(key, func() Disclosed { return disclose(l) })
}

// disclose is Disclose without the process-wide readings.
func disclose(l Label) Disclosed {
	d := Disclosed{Confidentiality: [][]string{}, Integrity: []string{}}
	for _, c := range l.Confidentiality {
		n, err := jsjson.ParseTree(c)
		if err != nil {
			continue
		}
		var types []string
		for _, a := range alternatives(n) {
			if t, ok := atomType(a); ok {
				types = append(types, t)
			}
		}
		if len(types) > 0 {
			d.Confidentiality = append(d.Confidentiality, types)
		}
	}
	for _, a := range l.Integrity {
		n, err := jsjson.ParseTree(a)
		if err != nil {
			continue
		}
		if t, ok := atomType(n); ok {
			d.Integrity = append(d.Integrity, t)
		}
	}
	return d
}

// LabelForUnlabeledRow is the single function that decides the label of a
// row that carries no own "ifc" member (SEMANTICS (e.3) with Gateway
// decision 12): the query label's confidentiality (the run's model-context
// label when the call was made) joined with the operator's configured
// unlabeledRowLabel clauses, and no integrity. Every unlabeled row of one
// result shares it.
//
// This is a placeholder assumption, known deviation 10 of the reference:
// the store, not the asker, determines a row's sensitivity, so a row can be
// under-labeled. configured lets the operator state what the store holds;
// when loom emits per-row labels, this function is what gets replaced.
func LabelForUnlabeledRow(query, configured Confidentiality) Label {
	return Label{Confidentiality: Join(query, configured)}
}
