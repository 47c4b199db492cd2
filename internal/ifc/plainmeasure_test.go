package ifc

// The plain path: Measure over the plain writer of package jsjsontest
// (package jsontext reading every token), labels read afresh on every
// call, the reference the fast path is tested against
// (plainmeasure_equiv_test.go).

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/jsjson/jsjsontest"
)

// plainMeasure applies SEMANTICS (g) to in. String leaves of the envelope are
// cut without setting Truncated. The reservation is the skeleton (counters
// all at len(in.Rows), truncated true, the cut envelope) plus
// LabelAllowance. Rows are then taken in order: an unreadable label is
// withheld with ReasonLabelReadFailed, a label outside the ceiling with
// ReasonCeilingExceeded, anything else is admitted with its ifc removed and
// its strings cut; an admitted entry is sized with a handle (Gateway
// decision 6). The first entry that does not fit ends the walk and it and
// every later row are omitted, never decoded. Unlabeled rows take
// in.Unlabeled with SourceQuery. An envelope that is not valid JSON is
// replaced by {}. plainMeasure is pure and safe for concurrent use.
func plainMeasure(in Input) Result {
	r := Result{OutputID: in.OutputID, Command: in.Command, Notice: in.Notice}
	if r.Notice == "" {
		r.Notice = Notice
	}
	if in.Envelope != nil {
		env, _, err := jsjsontest.AppendBounded(nil, in.Envelope, StringBound)
		if err != nil {
			env = []byte("{}")
		}
		r.Envelope = env
	}
	n := len(in.Rows)
	size := jsjson.UTF16LenBytes(r.appendHead(nil, n, n, n, true)) + len("}") + LabelAllowance

	m := plainMeasurer{
		defined: in.Ceiling.defined,
		ceiling: compileClauses(in.Ceiling.clauses),
		cache:   map[string]*labelInfo{},
		values:  make([]byte, 0, 64<<10),
	}
	m.em.SetLimit(StringBound)
	m.unlabeled = m.info(in.Unlabeled, nil)

	var observed []Confidentiality
	for _, row := range in.Rows {
		e, entrySize := m.entry(row, OutputBound-size)
		if size+entrySize > OutputBound {
			break
		}
		size += entrySize
		r.Entries = append(r.Entries, e)
		if e.Admitted {
			r.Admitted++
			r.Truncated = r.Truncated || e.Truncated
			observed = append(observed, e.Label.Confidentiality)
		} else {
			r.Withheld++
		}
	}
	r.Omitted = n - len(r.Entries)
	r.Truncated = r.Truncated || r.Omitted > 0
	r.Observed = Join(observed...)
	return r
}

type plainMeasurer struct {
	em        jsjsontest.Writer
	defined   bool
	ceiling   []clauseInfo
	cache     map[string]*labelInfo // by raw ifc text
	unlabeled *labelInfo
	values    []byte // arena for admitted values
	ifcBuf    []byte
}

func (m *plainMeasurer) info(l Label, err error) *labelInfo {
	if err != nil {
		return &labelInfo{unreadable: true}
	}
	return &labelInfo{
		label:        l,
		fits:         !m.defined || fitsCompiled(l.Confidentiality, m.ceiling),
		disclosedLen: jsjson.UTF16LenBytes(appendDisclosed(nil, Disclose(l))),
	}
}

func (m *plainMeasurer) labelFor(raw []byte) *labelInfo {
	if li, ok := m.cache[string(raw)]; ok {
		return li
	}
	li := m.info(readIFC(raw))
	m.cache[string(raw)] = li
	return li
}

// entry measures one row given the room left, returning the entry and its
// size. A value that cannot fit in room is not kept: its size is reported
// as room+1.
func (m *plainMeasurer) entry(row []byte, room int) (Entry, int) {
	mark := len(m.values)
	maxBytes := 3 * max(room, 0) // a value of more bytes has more UTF-16 units than room
	buf, sc, err := m.em.Row(m.values, row, false, maxBytes, m.ifcBuf)
	m.values = buf[:mark]
	if sc.IFC != nil {
		m.ifcBuf = sc.IFC
	}
	var li *labelInfo
	var value []byte
	over, cut := sc.Over, sc.Cut
	switch {
	case err == jsjson.ErrDuplicate:
		li, buf, cut = m.slowRow(row, mark)
		value = buf[mark:len(buf):len(buf)]
		over = false
	case err != nil:
		return Entry{ReasonCode: ReasonLabelReadFailed}, sizeWithheldRead
	default:
		li = m.unlabeled
		if sc.HasIFC {
			li = m.labelFor(sc.IFC)
		}
		if !over {
			value = buf[mark:len(buf):len(buf)]
		}
	}
	switch {
	case li.unreadable:
		return Entry{ReasonCode: ReasonLabelReadFailed}, sizeWithheldRead
	case !li.fits:
		return Entry{ReasonCode: ReasonCeilingExceeded}, sizeWithheldCeiling
	case over:
		return Entry{}, room + 1
	}
	m.values = buf // keep the value
	e := Entry{Admitted: true, Label: li.label, LabelSource: SourceQuery, Value: value, Truncated: cut}
	if li != m.unlabeled {
		e.LabelSource = SourceRow
	}
	size := len(admittedHead) + li.disclosedLen + len(labelSourceKey) + len(`""`) + len(e.LabelSource) +
		len(valueKey) + jsjson.UTF16LenBytes(value) + len(handleKey) + len(`""}`) + len(HandleStandIn)
	if cut {
		size += len(truncatedMember)
	}
	return e, size
}

// slowRow handles a row that repeats a member name: it is parsed whole with
// JavaScript's rule (first position, last value) and written from the tree
// to m.values[:mark], which it returns extended.
func (m *plainMeasurer) slowRow(row []byte, mark int) (*labelInfo, []byte, bool) {
	n, err := jsjson.ParseTree(row)
	if err != nil || n.Kind != jsontext.KindBeginObject {
		return &labelInfo{unreadable: true}, m.values[:mark], false
	}
	li := m.unlabeled
	v := &jsjson.Node{Kind: n.Kind}
	for i, k := range n.Keys {
		if k == `"ifc"` {
			raw, _ := jsjson.AppendNode(nil, n.Vals[i], -1)
			li = m.labelFor(raw)
			continue
		}
		v.Keys = append(v.Keys, k)
		v.Vals = append(v.Vals, n.Vals[i])
	}
	buf, cut := jsjson.AppendNode(m.values[:mark], v, StringBound)
	return li, buf, cut
}
