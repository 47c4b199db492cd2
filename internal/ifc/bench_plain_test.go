package ifc

// The plain path: the emitter and Measure exactly as first written (package
// jsontext reading every token, labels read afresh on every call), kept
// here as the reference the fast path is tested against
// (bench_equiv_test.go). Generated from the original jsjson.go and
// measure.go by renaming; do not edit by hand.

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// plainAppendBounded appends v like AppendJS, cutting every string value longer
// than limit UTF-16 units (limit < 0: no cut). It reports whether a string
// was cut.
func plainAppendBounded(dst []byte, v []byte, limit int) ([]byte, bool, error) {
	var e plainEmitter
	e.limit = limit
	e.buf = dst
	e.reset(v)
	err := e.value()
	if err == nil {
		err = e.end()
	}
	if err == errDuplicate {
		n, perr := parseTree(v)
		if perr != nil {
			return dst, false, perr
		}
		out, cut := appendNode(dst, n, limit)
		return out, cut, nil
	}
	if err != nil {
		return dst, false, err
	}
	return e.buf, e.cut, nil
}

// plainEmitter streams one JSON value from a jsontext.Decoder into buf in the
// writer's form. It gives up with errDuplicate on the first repeated member
// name, leaving the caller to take the slower tree path that applies
// JavaScript's last-value rule; inputs almost never repeat a name.
type plainEmitter struct {
	dec    *jsontext.Decoder
	src    bytes.Buffer // what dec reads; reset for every value
	buf    []byte
	limit  int // string cut in UTF-16 units; < 0 means none
	cut    bool
	frames []plainFrame
	names  []plainSpan // member names of the open objects, as offsets into buf
}

type plainFrame struct {
	obj      bool
	wantName bool
	n        int // members or elements written
	names    int // index in plainEmitter.names of this object's first name
	set      map[string]struct{}
}

type plainSpan struct{ lo, hi int }

func (e *plainEmitter) reset(v []byte) {
	e.src = *bytes.NewBuffer(v)
	if e.dec == nil {
		e.dec = jsontext.NewDecoder(&e.src, decodeOptions...)
	} else {
		e.dec.Reset(&e.src, decodeOptions...)
	}
	e.cut = false
	e.frames = e.frames[:0]
	e.names = e.names[:0]
}

// end checks that nothing but whitespace follows the value.
func (e *plainEmitter) end() error {
	if _, err := e.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errTrailing
		}
		return err
	}
	return nil
}

// value reads one complete value and writes it to buf.
func (e *plainEmitter) value() error {
	base := len(e.frames)
	for {
		var fr *plainFrame
		if len(e.frames) > base {
			fr = &e.frames[len(e.frames)-1]
		}
		switch k := e.dec.PeekKind(); k {
		case jsontext.KindBeginObject, jsontext.KindBeginArray:
			if _, err := e.dec.ReadToken(); err != nil {
				return err
			}
			e.sep(fr)
			e.buf = append(e.buf, byte(k))
			obj := k == jsontext.KindBeginObject
			e.frames = append(e.frames, plainFrame{obj: obj, wantName: obj, names: len(e.names)})
			continue
		case jsontext.KindEndObject, jsontext.KindEndArray:
			if _, err := e.dec.ReadToken(); err != nil {
				return err
			}
			e.names = e.names[:fr.names]
			e.frames = e.frames[:len(e.frames)-1]
			e.buf = append(e.buf, byte(k))
		case jsontext.KindString:
			raw, err := e.dec.ReadValue()
			if err != nil {
				return err
			}
			if fr != nil && fr.wantName {
				if fr.n > 0 {
					e.buf = append(e.buf, ',')
				}
				fr.n++
				start := len(e.buf)
				e.buf, _ = appendQuoted(e.buf, raw, -1)
				if !e.addName(fr, start) {
					return errDuplicate
				}
				e.buf = append(e.buf, ':')
				fr.wantName = false
				continue
			}
			e.sep(fr)
			var cut bool
			e.buf, cut = appendQuoted(e.buf, raw, e.limit)
			e.cut = e.cut || cut
		case jsontext.KindNumber, jsontext.KindNull, jsontext.KindTrue, jsontext.KindFalse:
			raw, err := e.dec.ReadValue()
			if err != nil {
				return err
			}
			e.sep(fr)
			e.buf = append(e.buf, raw...)
		default:
			_, err := e.dec.ReadToken()
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if len(e.frames) == base {
			return nil
		}
	}
}

// sep writes what precedes a value in the innermost open container.
func (e *plainEmitter) sep(fr *plainFrame) {
	if fr == nil {
		return
	}
	if fr.obj {
		fr.wantName = true
		return
	}
	if fr.n > 0 {
		e.buf = append(e.buf, ',')
	}
	fr.n++
}

// addName records the name written at buf[start:] for the object fr and
// reports false if the object already has it. Names compare in the writer's
// form, which is one spelling per JavaScript string.
func (e *plainEmitter) addName(fr *plainFrame, start int) bool {
	name := e.buf[start:]
	if fr.set != nil {
		if _, ok := fr.set[string(name)]; ok {
			return false
		}
		fr.set[string(name)] = struct{}{}
		return true
	}
	for _, s := range e.names[fr.names:] {
		if bytes.Equal(e.buf[s.lo:s.hi], name) {
			return false
		}
	}
	e.names = append(e.names, plainSpan{start, len(e.buf)})
	if len(e.names)-fr.names > maxLinearNames {
		fr.set = make(map[string]struct{}, 2*maxLinearNames)
		for _, s := range e.names[fr.names:] {
			fr.set[string(e.buf[s.lo:s.hi])] = struct{}{}
		}
	}
	return true
}

// row reads one row, which must be a JSON object, remembering its last own
// ifc member. Unless skip is set it writes the row minus every ifc member to
// buf, strings cut at the plainEmitter's limit; once more than maxBytes (>= 0)
// have been written it stops writing, drops what it wrote, reports over and
// only scans the remaining members for ifc.
func (e *plainEmitter) row(row []byte, skip bool, maxBytes int, ifcBuf []byte) (rowScan, error) {
	r := rowScan{over: skip}
	e.reset(row)
	if k := e.dec.PeekKind(); k != jsontext.KindBeginObject {
		if k == jsontext.KindInvalid {
			_, err := e.dec.ReadToken()
			return r, err
		}
		return r, errNotObject
	}
	if _, err := e.dec.ReadToken(); err != nil {
		return r, err
	}
	start := len(e.buf)
	if !r.over {
		e.buf = append(e.buf, '{')
	}
	e.frames = append(e.frames, plainFrame{obj: true, wantName: true})
	for e.dec.PeekKind() == jsontext.KindString {
		raw, err := e.dec.ReadValue()
		if err != nil {
			return r, err
		}
		fr := &e.frames[0]
		mark := len(e.buf)
		if fr.n > 0 {
			e.buf = append(e.buf, ',')
		}
		nameStart := len(e.buf)
		e.buf, _ = appendQuoted(e.buf, raw, -1)
		if string(e.buf[nameStart:]) == `"ifc"` {
			e.buf = e.buf[:mark]
			v, err := e.dec.ReadValue()
			if err != nil {
				return r, err
			}
			r.ifc = append(ifcBuf[:0], v...)
			r.hasIFC = true
			continue
		}
		if r.over {
			e.buf = e.buf[:mark]
			if err := e.dec.SkipValue(); err != nil {
				return r, err
			}
			continue
		}
		if !e.addName(fr, nameStart) {
			return r, errDuplicate
		}
		fr.n++
		e.buf = append(e.buf, ':')
		if err := e.value(); err != nil {
			return r, err
		}
		if maxBytes >= 0 && len(e.buf)-start > maxBytes {
			r.over = true
			e.buf = e.buf[:start]
		}
	}
	if _, err := e.dec.ReadToken(); err != nil { // '}' or the syntax error
		return r, err
	}
	if err := e.end(); err != nil {
		return r, err
	}
	if !r.over {
		e.buf = append(e.buf, '}')
	}
	r.cut = e.cut && !r.over
	return r, nil
}

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
	r := Result{OutputID: in.OutputID, Kind: in.Kind, Notice: in.Notice}
	if r.Notice == "" {
		r.Notice = Notice
	}
	if in.Envelope != nil {
		env, _, err := plainAppendBounded(nil, in.Envelope, StringBound)
		if err != nil {
			env = []byte("{}")
		}
		r.Envelope = env
	}
	n := len(in.Rows)
	size := utf16LenBytes(r.appendHead(nil, n, n, n, true)) + len("}") + LabelAllowance

	m := plainMeasurer{
		defined: in.Ceiling.defined,
		ceiling: compileClauses(in.Ceiling.clauses),
		cache:   map[string]*labelInfo{},
		values:  make([]byte, 0, 64<<10),
	}
	m.em.limit = StringBound
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
	em        plainEmitter
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
		disclosedLen: utf16LenBytes(appendDisclosed(nil, Disclose(l))),
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
	m.em.buf = m.values
	maxBytes := 3 * max(room, 0) // a value of more bytes has more UTF-16 units than room
	sc, err := m.em.row(row, false, maxBytes, m.ifcBuf)
	m.values = m.em.buf[:mark]
	if sc.ifc != nil {
		m.ifcBuf = sc.ifc
	}
	var li *labelInfo
	var value []byte
	over, cut := sc.over, sc.cut
	switch {
	case err == errDuplicate:
		li, value, cut = m.slowRow(row, mark)
		over = false
	case err != nil:
		return Entry{ReasonCode: ReasonLabelReadFailed}, sizeWithheldRead
	default:
		li = m.unlabeled
		if sc.hasIFC {
			li = m.labelFor(sc.ifc)
		}
		if !over {
			value = m.em.buf[mark:len(m.em.buf):len(m.em.buf)]
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
	m.values = m.em.buf // keep the value
	e := Entry{Admitted: true, Label: li.label, LabelSource: SourceQuery, Value: value, Truncated: cut}
	if li != m.unlabeled {
		e.LabelSource = SourceRow
	}
	size := len(admittedHead) + li.disclosedLen + len(labelSourceKey) + len(`""`) + len(e.LabelSource) +
		len(valueKey) + utf16LenBytes(value) + len(handleKey) + len(`""}`) + len(HandleStandIn)
	if cut {
		size += len(truncatedMember)
	}
	return e, size
}

// slowRow handles a row that repeats a member name: it is parsed whole with
// JavaScript's rule (first position, last value) and written from the tree.
func (m *plainMeasurer) slowRow(row []byte, mark int) (*labelInfo, []byte, bool) {
	n, err := parseTree(row)
	if err != nil || n.kind != jsontext.KindBeginObject {
		return &labelInfo{unreadable: true}, nil, false
	}
	li := m.unlabeled
	v := &node{kind: n.kind}
	for i, k := range n.keys {
		if k == `"ifc"` {
			raw, _ := appendNode(nil, n.vals[i], -1)
			li = m.labelFor(raw)
			continue
		}
		v.keys = append(v.keys, k)
		v.vals = append(v.vals, n.vals[i])
	}
	buf, cut := appendNode(m.values[:mark], v, StringBound)
	m.em.buf = buf
	return li, buf[mark:len(buf):len(buf)], cut
}
