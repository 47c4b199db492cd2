package ifc

import "bytes"

// A Judge measures a call's rows one by one, as they are read and before
// Measure sees them, under the ceiling and query label Measure will be
// given, so that a reader of the payload (loom.Condense) keeps of each row
// only what changes the result: a row sure to be withheld can be kept as
// a stand-in with the same entry (WithheldStandIn), and the rows after a
// row with which the entries cannot fit in the result need not be kept at
// all (they are omitted whatever the reservation turns out to be).
//
// The Judge walks the rows as Measure does (entry), with the least
// reservation any result has (no envelope, empty output id, kind and
// notice, one-digit counters): an entry fits in the Judge's walk whenever
// it fits in Measure's, and has the same size, so once the Judge's entries
// are past OutputBound, Measure's walk has stopped at that row or before.
// A Judge is for one call and one goroutine; Release it when done.
type Judge struct {
	m    *measurer
	size int  // the least reservation and the entries judged so far
	past bool // size is past OutputBound
}

// leastReserved is the least reservation of any result: the skeleton of
// appendHead with empty strings, counters of one digit and truncated
// true, its closing brace, and LabelAllowance.
var leastReserved = len(Result{}.appendHead(nil, 0, 0, 0, true)) + len("}") + LabelAllowance

// maxJudgeLabelBytes bounds the label texts a Judge keeps copies of, to
// read each distinct label once: past it, a label not among them is read
// again each time.
const maxJudgeLabelBytes = 1 << 20

// NewJudge returns a Judge for rows measured under ceiling with
// unlabeled as the query label (Input.Ceiling, Input.Unlabeled).
func NewJudge(ceiling Ceiling, unlabeled Label) *Judge {
	m := measurers.Get().(*measurer)
	m.ownRaw = true
	m.defined = ceiling.defined
	if m.defined {
		m.ceiling = ceilingReads.ceiling(ceiling.clauses)
	}
	m.em.SetLimit(StringBound)
	m.unlabeled = m.infoOf(labelReads.given(unlabeled))
	return &Judge{m: m, size: leastReserved}
}

// Verdict is what a Judge tells of a row.
type Verdict struct {
	// Withheld is the reason of the row's entry when it is withheld
	// (ReasonLabelReadFailed or ReasonCeilingExceeded), "" when not.
	Withheld string
	// Past: every row after this one is sure to be omitted.
	Past bool
	// Apart: the row is admitted and fits, repeats no name, and has its
	// own label, which may be kept apart from it (Input.Labels): the
	// row, less its own ifc members, with that label reads the same.
	Apart bool
}

// Row judges the next row, rowLen bytes long as loom wrote it (row may be
// a shorter form of it, as Input.RowBytes). row is not kept: it may
// change once Row returns.
func (j *Judge) Row(row []byte, rowLen int) Verdict {
	if j.past {
		return Verdict{Past: true}
	}
	e, n := j.m.entry(row, rowLen, OutputBound-j.size, nil, LabelSpan{})
	j.m.values = j.m.values[:0]
	j.size += n
	j.past = j.size > OutputBound
	v := Verdict{Past: j.past}
	if !e.Admitted {
		v.Withheld = e.ReasonCode // "" when it does not fit
	}
	v.Apart = e.Admitted && !j.past && j.m.scanErr == nil && j.m.scan.HasIFC && !j.m.scan.Over
	return v
}

// Release gives the Judge's scratch back; j is not used after. A nil
// Judge releases nothing.
func (j *Judge) Release() {
	if j != nil && j.m != nil {
		j.m.ownRaw, j.m.rawBytes = false, 0
		j.m.put()
		j.m = nil
	}
}

// WithheldStandIn returns the text of a row whose entry is withheld with
// reason, as a row of any other text withheld with it: a label that is
// not an object (unreadable), or one whose one clause bears
// ReadFailedMarker (outside every defined ceiling, and only a defined
// ceiling withholds a readable label). Nil for any other reason.
func WithheldStandIn(reason string) []byte {
	switch reason {
	case ReasonLabelReadFailed:
		return standInUnreadable
	case ReasonCeilingExceeded:
		return standInOutside
	}
	return nil
}

var (
	standInUnreadable = []byte(`{"ifc":7}`)
	standInOutside    = []byte(`{"ifc":{"confidentiality":["` + ReadFailedMarker + `"]}}`)
)

// ownLabel is raw, kept by the measurer as the key of its reading: raw
// itself, or a copy when the measurer's rows may change after it reads
// them (a Judge's), while the copies stay within maxJudgeLabelBytes. It
// reports false when the reading is not to be kept.
func (m *measurer) ownLabel(raw []byte) ([]byte, bool) {
	if !m.ownRaw {
		return raw, true
	}
	if m.rawBytes+len(raw) > maxJudgeLabelBytes {
		return nil, false
	}
	m.rawBytes += len(raw)
	return bytes.Clone(raw), true
}
