package jsjson

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the JavaScript-style JSON writer that every length in the
// package is measured against (SEMANTICS (g)): compact output; strings
// escaped only for '"', '\' and control characters below U+0020; object
// members in the order given; numbers as their JSON text. Input is read with
// JavaScript's JSON.parse semantics where Go would differ: a duplicate object
// member keeps the position of its first occurrence and the value of its last;
// invalid UTF-8 becomes U+FFFD per maximal subpart (the WHATWG decoder the
// reference reads loom's stdout with); an escaped lone surrogate stays a lone
// surrogate and is written back as a lowercase \udXXX escape.

// DecodeOptions are the jsontext options every reader in the package uses.
var DecodeOptions = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
}

var (
	ErrDuplicate = errors.New("jsjson: duplicate object member")
	ErrNotObject = errors.New("jsjson: not a JSON object")
	ErrTrailing  = errors.New("jsjson: data after the JSON value")
)

// AppendJS appends v as JavaScript's JSON.stringify(JSON.parse(v)) would
// write it, with two exceptions taken from the gateway's decisions: member
// order is kept exactly as given (JavaScript would move integer-like names
// first) and numbers keep their JSON text (1.0 stays 1.0). A duplicate member
// name keeps its first position and its last value. Strings are not cut.
//
// v must be one valid JSON value (duplicate names and invalid UTF-8 are
// allowed); if it is not, AppendJS appends null.
func AppendJS(dst []byte, v jsontext.Value) []byte {
	var e Writer
	out, _, err := e.AppendBounded(dst, v, -1)
	if err != nil {
		return append(dst, "null"...)
	}
	return out
}

// AppendBounded appends v like AppendJS, cutting every string value longer
// than limit UTF-16 units (limit < 0: no cut). It reports whether a string
// was cut; an error means v is not one valid JSON value. It sets e's limit
// to limit and leaves e pointing at dst's memory until Release.
func (e *Writer) AppendBounded(dst []byte, v []byte, limit int) ([]byte, bool, error) {
	e.limit = limit
	e.buf = dst
	e.reset(v)
	err := e.value()
	if err == nil {
		err = e.end()
	}
	if err == ErrDuplicate {
		n, perr := ParseTree(v)
		if perr != nil {
			return dst, false, perr
		}
		out, cut := AppendNode(dst, n, limit)
		return out, cut, nil
	}
	if err != nil {
		return dst, false, err
	}
	return e.buf, e.cut, nil
}

// Writer streams one JSON value from its scanner into buf in the writer's
// form. It gives up with ErrDuplicate on the first repeated member name,
// leaving the caller to take the slower tree path that applies JavaScript's
// last-value rule; inputs almost never repeat a name.
//
// With stopAt >= 0, once buf is longer than stopAt the Writer stops
// writing values (and sets stopped): the rest of the value is still read,
// checked and searched for repeated names, but only the names of the
// objects still open are kept.
type Writer struct {
	s       Scanner
	buf     []byte
	limit   int // string cut in UTF-16 units; < 0 means none
	cut     bool
	stopAt  int
	stopped bool
	frames  []frame
	names   Names // member names of the open objects, in buf
}

type frame struct {
	obj   bool
	n     int     // members written
	start int     // offset in buf of the opening byte
	names NameSet // an object's names, in Writer.names
}

type span struct{ lo, hi int }

func (e *Writer) reset(v []byte) {
	e.s.reset(v)
	e.cut = false
	e.stopAt, e.stopped = -1, false
	e.frames = e.frames[:0]
	e.names.Reset()
}

// end checks that nothing but whitespace follows the value.
func (e *Writer) end() error {
	if !e.s.atEnd() {
		return ErrTrailing
	}
	return nil
}

// wrote notes that buf grew, stopping the writing past stopAt.
func (e *Writer) wrote() {
	if e.stopAt >= 0 && len(e.buf) > e.stopAt {
		e.stopped = true
	}
}

// value reads one complete value and writes it to buf.
func (e *Writer) value() error {
	base := len(e.frames)
	s := &e.s
	for {
		// A value is expected.
		switch c := s.ws(); c {
		case '{', '[':
			if len(e.frames) >= MaxDepth {
				return ErrDepth
			}
			s.i++
			e.frames = append(e.frames, frame{obj: c == '{', start: len(e.buf), names: e.names.Open()})
			e.buf = append(e.buf, c)
			if s.ws() != Closer(c) {
				if c == '{' {
					if err := e.name(); err != nil {
						return err
					}
				}
				continue
			}
			s.i++ // an empty container
			e.close(Closer(c))
		case '"':
			raw, err := s.str()
			if err != nil {
				return err
			}
			if !e.stopped {
				e.appendString(raw)
				e.wrote()
			}
		default:
			raw, err := s.scalar(c)
			if err != nil {
				return err
			}
			if !e.stopped {
				e.buf = append(e.buf, raw...)
				e.wrote()
			}
		}
		// After a value.
		for {
			if len(e.frames) == base {
				return nil
			}
			fr := &e.frames[len(e.frames)-1]
			open := byte('[')
			if fr.obj {
				open = '{'
			}
			c := s.ws()
			if c == Closer(open) {
				s.i++
				e.close(c)
				continue
			}
			if c != ',' {
				return ErrSyntax
			}
			s.i++
			if fr.obj {
				if err := e.name(); err != nil {
					return err
				}
			} else if !e.stopped {
				e.buf = append(e.buf, ',')
			}
			break
		}
	}
}

// appendString writes the string value raw, the one the scanner just
// read, cut at the limit.
func (e *Writer) appendString(raw []byte) {
	if (e.limit < 0 || len(raw)-2 <= e.limit) && e.s.verbatim(raw) {
		e.buf = append(e.buf, raw...) // already in the writer's form
		return
	}
	var cut bool
	e.buf, cut = AppendQuoted(e.buf, raw, e.limit)
	e.cut = e.cut || cut
}

// appendName writes the member name raw, the one the scanner just read,
// in the writer's form: AppendName's, with the scanner's own note of
// whether raw is verbatim.
func (e *Writer) appendName(raw []byte) {
	if e.s.verbatim(raw) {
		e.buf = append(e.buf, raw...)
		return
	}
	e.buf, _ = AppendQuoted(e.buf, raw, -1)
}

// close ends the innermost container with the byte c.
func (e *Writer) close(c byte) {
	fr := &e.frames[len(e.frames)-1]
	e.names.Close(&fr.names)
	if e.stopped {
		e.buf = e.buf[:fr.start]
	} else {
		e.buf = append(e.buf, c)
		e.wrote()
	}
	e.frames = e.frames[:len(e.frames)-1]
}

// name reads the next member name of the innermost object and its colon,
// and writes them, preceded by a comma unless it is the first.
func (e *Writer) name() error {
	s := &e.s
	if s.ws() != '"' {
		return ErrSyntax
	}
	raw, err := s.str()
	if err != nil {
		return err
	}
	fr := &e.frames[len(e.frames)-1]
	if fr.n > 0 {
		e.buf = append(e.buf, ',')
	}
	fr.n++
	start := len(e.buf)
	e.appendName(raw)
	if !e.names.Add(&fr.names, e.buf, start) {
		return ErrDuplicate
	}
	if s.ws() != ':' {
		return ErrSyntax
	}
	s.i++
	e.buf = append(e.buf, ':')
	return nil
}

// RowScan is what one pass over a row yields.
type RowScan struct {
	IFC    []byte // the last own ifc member's raw value, a slice of the row
	HasIFC bool
	Over   bool // the value was not written: it would exceed maxBytes
	Cut    bool
}

// Row reads one row, which must be a JSON object, remembering its last own
// ifc member (the label, SEMANTICS (e)). Unless skip is set it appends the
// row minus every ifc member to dst, strings cut at the limit SetLimit gave;
// once more than maxBytes (>= 0) have been written it stops writing, drops
// what it wrote, reports Over and only scans the remaining members for ifc.
// It returns dst, extended or not, on every path. ErrDuplicate means the
// row repeats a member name, which the caller must read with ParseTree.
func (e *Writer) Row(dst, row []byte, skip bool, maxBytes int) ([]byte, RowScan, error) {
	e.buf = dst
	r, err := e.row(row, skip, maxBytes)
	return e.buf, r, err
}

// SetLimit sets the length in UTF-16 units past which Row cuts a string
// (limit < 0: no cut).
func (e *Writer) SetLimit(limit int) { e.limit = limit }

// Release drops e's references to its input and output and to the frames'
// name sets, keeping only its scratch capacity, so a pooled Writer holds
// no caller's memory.
func (e *Writer) Release() {
	e.buf, e.s.b = nil, nil
	clear(e.frames[:cap(e.frames)])
	e.frames = e.frames[:0]
}

// Scratch reports the capacity e keeps between calls: of the scanner's
// container stack in bytes, of its frame stack and of its name list in
// elements. A pool should drop a Writer that grew too large.
func (e *Writer) Scratch() (stack, frames, names int) {
	return cap(e.s.stack), cap(e.frames), cap(e.names.spans)
}

func (e *Writer) row(row []byte, skip bool, maxBytes int) (RowScan, error) {
	r := RowScan{Over: skip}
	e.reset(row)
	s := &e.s
	if s.ws() != '{' {
		return r, notObject(row)
	}
	s.i++
	start := len(e.buf)
	if !r.Over {
		e.buf = append(e.buf, '{')
	}
	e.frames = append(e.frames, frame{obj: true, names: e.names.Open()})
	c := s.ws()
	for c != '}' {
		if c != '"' {
			return r, ErrSyntax
		}
		raw, err := s.str()
		if err != nil {
			return r, err
		}
		fr := &e.frames[0]
		mark := len(e.buf)
		if fr.n > 0 {
			e.buf = append(e.buf, ',')
		}
		nameStart := len(e.buf)
		e.appendName(raw)
		isIFC := string(e.buf[nameStart:]) == `"ifc"`
		switch {
		case isIFC, r.Over:
			e.buf = e.buf[:mark]
		case !e.names.Add(&fr.names, e.buf, nameStart):
			return r, ErrDuplicate
		}
		if s.ws() != ':' {
			return r, ErrSyntax
		}
		s.i++
		switch {
		case isIFC:
			v, err := s.skip(1)
			if err != nil {
				return r, err
			}
			r.IFC = v
			r.HasIFC = true
		case r.Over:
			if _, err := s.skip(1); err != nil {
				return r, err
			}
		default:
			fr.n++
			e.buf = append(e.buf, ':')
			if s.ws() == '"' { // most members: a string, written here
				raw, err := s.str()
				if err != nil {
					return r, err
				}
				e.appendString(raw)
			} else {
				if maxBytes >= 0 {
					e.stopAt = start + maxBytes
				}
				if err := e.value(); err != nil {
					return r, err
				}
			}
			if e.stopped || maxBytes >= 0 && len(e.buf)-start > maxBytes {
				r.Over = true
				e.buf = e.buf[:start]
				e.stopAt, e.stopped = -1, false
			}
		}
		switch c = s.ws(); c {
		case ',':
			s.i++
			if c = s.ws(); c == '}' {
				return r, ErrSyntax // a trailing comma
			}
		case '}':
		default:
			return r, ErrSyntax
		}
	}
	s.i++
	if err := e.end(); err != nil {
		return r, err
	}
	if !r.Over {
		e.buf = append(e.buf, '}')
	}
	r.Cut = e.cut && !r.Over
	return r, nil
}

// notObject is the error for a row that does not start with '{': ErrNotObject
// when it starts like another JSON value, else jsontext's own error (the
// difference shows in ReadRowLabel's reason).
func notObject(row []byte) error {
	d := jsontext.NewDecoder(bytes.NewBuffer(row), DecodeOptions...)
	if k := d.PeekKind(); k != jsontext.KindInvalid {
		return ErrNotObject
	}
	_, err := d.ReadToken()
	return err
}
