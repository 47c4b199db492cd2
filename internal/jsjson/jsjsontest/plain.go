// Package jsjsontest holds the plain reading of JavaScript-semantics JSON:
// the plain form of package jsjson's writer, with package jsontext
// reading every token, kept as the reference the fast Scanner-driven
// Writer is tested against (here and in package ifc), and the generators
// of random and mutated JSON those equivalence tests draw from. It is for
// tests only.
package jsjsontest

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// maxLinearNames is how many names an object may have before duplicate
// detection switches from a linear scan to a map, as in jsjson.
const maxLinearNames = 32

// SetLimit sets the length in UTF-16 units past which Row cuts a string
// (limit < 0: no cut).
func (e *Writer) SetLimit(limit int) { e.limit = limit }

// AppendBounded appends v like AppendJS, cutting every string value longer
// than limit UTF-16 units (limit < 0: no cut). It reports whether a string
// was cut.
func AppendBounded(dst []byte, v []byte, limit int) ([]byte, bool, error) {
	var e Writer
	e.limit = limit
	e.buf = dst
	e.reset(v)
	err := e.value()
	if err == nil {
		err = e.end()
	}
	if err == jsjson.ErrDuplicate {
		n, perr := jsjson.ParseTree(v)
		if perr != nil {
			return dst, false, perr
		}
		out, cut := jsjson.AppendNode(dst, n, limit)
		return out, cut, nil
	}
	if err != nil {
		return dst, false, err
	}
	return e.buf, e.cut, nil
}

// Writer streams one JSON value from a jsontext.Decoder into buf in the
// writer's form. It gives up with jsjson.ErrDuplicate on the first repeated member
// name, leaving the caller to take the slower tree path that applies
// JavaScript's last-value rule; inputs almost never repeat a name.
type Writer struct {
	dec    *jsontext.Decoder
	src    bytes.Buffer // what dec reads; reset for every value
	buf    []byte
	limit  int // string cut in UTF-16 units; < 0 means none
	cut    bool
	frames []frame
	names  []span // member names of the open objects, as offsets into buf
}

type frame struct {
	obj      bool
	wantName bool
	n        int // members or elements written
	names    int // index in Writer.names of this object's first name
	set      map[string]struct{}
}

type span struct{ lo, hi int }

func (e *Writer) reset(v []byte) {
	e.src = *bytes.NewBuffer(v)
	if e.dec == nil {
		e.dec = jsontext.NewDecoder(&e.src, jsjson.DecodeOptions...)
	} else {
		e.dec.Reset(&e.src, jsjson.DecodeOptions...)
	}
	e.cut = false
	e.frames = e.frames[:0]
	e.names = e.names[:0]
}

// end checks that nothing but whitespace follows the value.
func (e *Writer) end() error {
	if _, err := e.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = jsjson.ErrTrailing
		}
		return err
	}
	return nil
}

// value reads one complete value and writes it to buf.
func (e *Writer) value() error {
	base := len(e.frames)
	for {
		var fr *frame
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
			e.frames = append(e.frames, frame{obj: obj, wantName: obj, names: len(e.names)})
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
				e.buf, _ = jsjson.AppendQuoted(e.buf, raw, -1)
				if !e.addName(fr, start) {
					return jsjson.ErrDuplicate
				}
				e.buf = append(e.buf, ':')
				fr.wantName = false
				continue
			}
			e.sep(fr)
			var cut bool
			e.buf, cut = jsjson.AppendQuoted(e.buf, raw, e.limit)
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
func (e *Writer) sep(fr *frame) {
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
func (e *Writer) addName(fr *frame, start int) bool {
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
	e.names = append(e.names, span{start, len(e.buf)})
	if len(e.names)-fr.names > maxLinearNames {
		fr.set = make(map[string]struct{}, 2*maxLinearNames)
		for _, s := range e.names[fr.names:] {
			fr.set[string(e.buf[s.lo:s.hi])] = struct{}{}
		}
	}
	return true
}

// Row reads one row, which must be a JSON object, remembering its last own
// ifc member (copied into ifcBuf's memory). Unless skip is set it appends
// the row minus every ifc member to dst, strings cut at the Writer's limit; once more than maxBytes (>= 0)
// have been written it stops writing, drops what it wrote, reports over and
// only scans the remaining members for ifc.
func (e *Writer) Row(dst, row []byte, skip bool, maxBytes int, ifcBuf []byte) ([]byte, jsjson.RowScan, error) {
	e.buf = dst
	r, err := e.row(row, skip, maxBytes, ifcBuf)
	return e.buf, r, err
}

func (e *Writer) row(row []byte, skip bool, maxBytes int, ifcBuf []byte) (jsjson.RowScan, error) {
	r := jsjson.RowScan{Over: skip}
	e.reset(row)
	if k := e.dec.PeekKind(); k != jsontext.KindBeginObject {
		if k == jsontext.KindInvalid {
			_, err := e.dec.ReadToken()
			return r, err
		}
		return r, jsjson.ErrNotObject
	}
	if _, err := e.dec.ReadToken(); err != nil {
		return r, err
	}
	start := len(e.buf)
	if !r.Over {
		e.buf = append(e.buf, '{')
	}
	e.frames = append(e.frames, frame{obj: true, wantName: true})
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
		e.buf, _ = jsjson.AppendQuoted(e.buf, raw, -1)
		if string(e.buf[nameStart:]) == `"ifc"` {
			e.buf = e.buf[:mark]
			v, err := e.dec.ReadValue()
			if err != nil {
				return r, err
			}
			r.IFC = append(ifcBuf[:0], v...)
			r.HasIFC = true
			continue
		}
		if r.Over {
			e.buf = e.buf[:mark]
			if err := e.dec.SkipValue(); err != nil {
				return r, err
			}
			continue
		}
		if !e.addName(fr, nameStart) {
			return r, jsjson.ErrDuplicate
		}
		fr.n++
		e.buf = append(e.buf, ':')
		if err := e.value(); err != nil {
			return r, err
		}
		if maxBytes >= 0 && len(e.buf)-start > maxBytes {
			r.Over = true
			e.buf = e.buf[:start]
		}
	}
	if _, err := e.dec.ReadToken(); err != nil { // '}' or the syntax error
		return r, err
	}
	if err := e.end(); err != nil {
		return r, err
	}
	if !r.Over {
		e.buf = append(e.buf, '}')
	}
	r.Cut = e.cut && !r.Over
	return r, nil
}
