package jsjson

import (
	"bytes"
	"unicode/utf8"
)

// Names holds the member names of the objects open in a value being read,
// and is the one place that decides whether an object repeats a member
// name as the Writer compares names: two names are the same when their
// writer's forms (AppendName) are the same bytes, one spelling per
// JavaScript string. The names themselves stay in the caller's buffer
// (Add is given where each one is), and each open object's NameSet stays
// with the caller, beside what else it keeps of the object.
type Names struct {
	spans []span
}

// NameSet is one open object's names: Names.spans[first:], a bit per
// nameBit of them, and, past maxLinearNames of them, a set.
type NameSet struct {
	first int
	seen  uint64
	set   map[string]struct{}
}

// maxLinearNames is how many names an object may have before Names looks
// them up in a set rather than compare them in turn.
const maxLinearNames = 32

// AppendName appends raw, a member name as a JSON string literal (quotes
// included), in the writer's form to dst: AppendQuoted's, of which a name
// without escapes that is valid UTF-8 is its own form.
func AppendName(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return append(dst, raw...)
	}
	dst, _ = AppendQuoted(dst, raw, -1)
	return dst
}

// Reset forgets every name.
func (n *Names) Reset() { n.spans = n.spans[:0] }

// Open returns the NameSet of a new innermost object, with no names yet.
func (n *Names) Open() NameSet { return NameSet{first: len(n.spans)} }

// Close forgets the names of o, the innermost open object.
func (n *Names) Close(o *NameSet) { n.spans = n.spans[:o.first] }

// Add records buf[lo:], a member name in the writer's form just appended
// to buf, as a name of o, the innermost open object, and reports false
// when o already has it. buf holds every name Add was given of the
// objects still open, where it was given them.
func (n *Names) Add(o *NameSet, buf []byte, lo int) bool {
	name := buf[lo:]
	if o.set != nil {
		if _, ok := o.set[string(name)]; ok {
			return false
		}
		o.set[string(name)] = struct{}{}
		return true
	}
	// Names almost never repeat: compare only when one of the object's
	// names had the same nameBit.
	bit := nameBit(name)
	if o.seen&bit != 0 {
		for _, s := range n.spans[o.first:] {
			if bytes.Equal(buf[s.lo:s.hi], name) {
				return false
			}
		}
	}
	o.seen |= bit
	n.spans = append(n.spans, span{lo, len(buf)})
	if len(n.spans)-o.first > maxLinearNames {
		o.set = make(map[string]struct{}, 2*maxLinearNames)
		for _, s := range n.spans[o.first:] {
			o.set[string(buf[s.lo:s.hi])] = struct{}{}
		}
	}
	return true
}

// nameBit is one bit of 64 chosen by a member name in the writer's form
// (quotes included): names with different bits differ.
func nameBit(name []byte) uint64 {
	h := uint(len(name))*131 + uint(name[len(name)/2])*31 + uint(name[len(name)-2])
	return 1 << (h & 63)
}
