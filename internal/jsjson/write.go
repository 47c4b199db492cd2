package jsjson

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

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

// UTF16Len returns the length of s in UTF-16 code units, the unit every bound
// in SEMANTICS is stated in. An invalid UTF-8 sequence counts as the one
// U+FFFD it decodes to.
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, w := decodeRune(s[i:])
		n += runeUnits(r)
		i += w
	}
	return n
}

// CutString returns the first limit UTF-16 units of s and true when s is
// longer than that, else s and false (a string of exactly limit units is
// untouched). A cut that would split a surrogate pair drops the
// dangling high half, so the result may be one unit short (Gateway
// decision 1). Invalid UTF-8 is counted as U+FFFD but kept as given.
func CutString(s string, limit int) (string, bool) {
	n := 0
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = decodeRune(s[i:])
		}
		u := runeUnits(r)
		if n+u > limit {
			return s[:i], true
		}
		n += u
		i += w
	}
	return s, false
}

// UTF16LenBytes counts the UTF-16 units of b, which must be valid UTF-8 (as
// everything the writer produces is).
func UTF16LenBytes(b []byte) int {
	n := 0
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&hiBits == 0 { // ASCII: a unit a byte
			n += 8
		} else {
			n += utf16LenTail(b[:8])
		}
		b = b[8:]
	}
	return n + utf16LenTail(b)
}

func utf16LenTail(b []byte) int {
	n := 0
	for _, c := range b {
		if c&0xC0 != 0x80 {
			n++
		}
		if c >= 0xF0 {
			n++
		}
	}
	return n
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// decodeRune decodes the first character of b, which must not be empty. An
// invalid sequence decodes to U+FFFD and consumes its maximal subpart, as
// the WHATWG UTF-8 decoder does (Go's own decoder consumes one byte).
func decodeRune[B ~string | ~[]byte](b B) (rune, int) {
	c := b[0]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	var r rune
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need, r = 1, rune(c&0x1F)
	case c == 0xE0:
		need, r, lo = 2, rune(c&0x0F), 0xA0
	case c == 0xED:
		need, r, hi = 2, rune(c&0x0F), 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need, r = 2, rune(c&0x0F)
	case c == 0xF0:
		need, r, lo = 3, rune(c&0x07), 0x90
	case c >= 0xF1 && c <= 0xF3:
		need, r = 3, rune(c&0x07)
	case c == 0xF4:
		need, r, hi = 3, rune(c&0x07), 0x8F
	default:
		return utf8.RuneError, 1
	}
	n := 1
	for ; need > 0; need-- {
		if n >= len(b) || b[n] < lo || b[n] > hi {
			return utf8.RuneError, n
		}
		r = r<<6 | rune(b[n]&0x3F)
		lo, hi = 0x80, 0xBF
		n++
	}
	return r, n
}

const hexDigits = "0123456789abcdef"

// appendRune appends r inside a JSON string the way JSON.stringify does. A
// surrogate code point (only reachable through an escape) is written as a
// lowercase \udXXX escape.
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r >= 0x20 && r < utf8.RuneSelf:
		return append(dst, byte(r))
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20, r >= 0xD800 && r <= 0xDFFF:
		return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
	default:
		return utf8.AppendRune(dst, r)
	}
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	// A run of printable ASCII, as most strings are whole, eight bytes at
	// a time.
	i := 0
	for i+8 <= len(s) {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if specialMask(v)|v&hiBits != 0 {
			break
		}
		i += 8
	}
	dst = append(dst, s[:i]...)
	for i < len(s) {
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf && strPlain[s[j]] {
			j++
		}
		if j > i { // a run written as it is
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		r, w := decodeRune(s[i:])
		dst = appendRune(dst, r)
		i += w
	}
	return append(dst, '"')
}

// AppendQuoted transcodes raw, one JSON string literal including its quotes
// as it appears in the input, to its JavaScript form. When limit >= 0 the
// value is cut to its first limit UTF-16 units if it is longer, dropping a
// surrogate pair the cut would split; it reports whether it cut.
func AppendQuoted(dst, raw []byte, limit int) ([]byte, bool) {
	dst = append(dst, '"')
	s := raw[1 : len(raw)-1]
	units := 0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		if j > i {
			if limit >= 0 && units+(j-i) > limit {
				dst = append(dst, s[i:i+limit-units]...)
				return append(dst, '"'), true
			}
			dst = append(dst, s[i:j]...)
			units += j - i
			i = j
			continue
		}
		var r rune
		var w int
		switch c := s[i]; {
		case c == '\\':
			r, w = unescape(s[i:])
		case c >= utf8.RuneSelf:
			r, w = decodeRune(s[i:])
		default: // a raw control character or quote: not valid JSON, kept safe
			r, w = rune(c), 1
		}
		u := runeUnits(r)
		if limit >= 0 && units+u > limit {
			return append(dst, '"'), true
		}
		units += u
		dst = appendRune(dst, r)
		i += w
	}
	return append(dst, '"'), false
}

// unescape decodes the escape sequence at the start of s. A high surrogate
// escape followed by a low surrogate escape decodes to one code point; any
// other surrogate escape decodes to the lone surrogate itself.
func unescape[B ~string | ~[]byte](s B) (rune, int) {
	if len(s) < 2 {
		return '\\', 1
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		v, ok := hex4(s[2:])
		if !ok {
			return '\\', 1
		}
		if v >= 0xD800 && v <= 0xDBFF && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := hex4(s[8:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (v-0xD800)<<10 + (lo - 0xDC00), 12
			}
		}
		return v, 6
	}
	return '\\', 1
}

func hex4[B ~string | ~[]byte](s B) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var v rune
	for i := range 4 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// Unquote returns the Go string of a JSON string in the writer's form. A
// lone surrogate becomes U+FFFD, the only loss a Go string forces.
func Unquote(text string) string {
	s := text[1 : len(text)-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b = append(b, s[i])
			i++
			continue
		}
		r, w := unescape(s[i:])
		if r >= 0xD800 && r <= 0xDFFF {
			r = utf8.RuneError
		}
		b = utf8.AppendRune(b, r)
		i += w
	}
	return string(b)
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
	names   []span // member names of the open objects, as offsets into buf
}

type frame struct {
	obj   bool
	n     int    // members written
	start int    // offset in buf of the opening byte
	names int    // index in Writer.names of this object's first name
	seen  uint64 // a bit per nameBit of the object's names
	set   map[string]struct{}
}

type span struct{ lo, hi int }

// maxLinearNames is how many names an object may have before duplicate
// detection switches from a linear scan to a map.
const maxLinearNames = 32

func (e *Writer) reset(v []byte) {
	e.s.reset(v)
	e.cut = false
	e.stopAt, e.stopped = -1, false
	e.frames = e.frames[:0]
	e.names = e.names[:0]
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
			e.frames = append(e.frames, frame{obj: c == '{', start: len(e.buf), names: len(e.names)})
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

// appendName writes the member name raw, the one the scanner just read.
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
	e.names = e.names[:fr.names]
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
	if !e.addName(fr, start) {
		return ErrDuplicate
	}
	if s.ws() != ':' {
		return ErrSyntax
	}
	s.i++
	e.buf = append(e.buf, ':')
	return nil
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
	// Names almost never repeat: compare only when one of the object's
	// names had the same nameBit.
	bit := nameBit(name)
	if fr.seen&bit != 0 {
		for _, s := range e.names[fr.names:] {
			if bytes.Equal(e.buf[s.lo:s.hi], name) {
				return false
			}
		}
	}
	fr.seen |= bit
	e.names = append(e.names, span{start, len(e.buf)})
	if len(e.names)-fr.names > maxLinearNames {
		fr.set = make(map[string]struct{}, 2*maxLinearNames)
		for _, s := range e.names[fr.names:] {
			fr.set[string(e.buf[s.lo:s.hi])] = struct{}{}
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
	return cap(e.s.stack), cap(e.frames), cap(e.names)
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
	e.frames = append(e.frames, frame{obj: true})
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
		case !e.addName(fr, nameStart):
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

// Node is a parsed JSON value with JavaScript's duplicate-name rule applied.
// Scalars hold their text in the writer's form; object names too.
type Node struct {
	Kind jsontext.Kind // KindString, KindNumber, KindNull, KindTrue, KindFalse, KindBeginObject, KindBeginArray
	Text string        // scalars
	Keys []string      // object member names, first-occurrence order
	Vals []*Node       // object member values (last occurrence) or array elements
}

// Member returns the value of the member whose name, in the writer's form,
// is key, or nil.
func (n *Node) Member(key string) *Node {
	if n.Kind != jsontext.KindBeginObject {
		return nil
	}
	if i := slices.Index(n.Keys, key); i >= 0 {
		return n.Vals[i]
	}
	return nil
}

// treeDecoder is a reusable decoder for ParseTree, which reads labels
// and clauses many times per call.
type treeDecoder struct {
	src bytes.Buffer
	dec jsontext.Decoder
}

var treeDecoders = sync.Pool{New: func() any { return new(treeDecoder) }}

func (td *treeDecoder) put() {
	td.src = bytes.Buffer{}
	td.dec.Reset(&td.src) // drop the input
	treeDecoders.Put(td)
}

// ParseTree parses one JSON value.
func ParseTree(v []byte) (*Node, error) {
	td := treeDecoders.Get().(*treeDecoder)
	defer td.put()
	td.src = *bytes.NewBuffer(v)
	td.dec.Reset(&td.src, DecodeOptions...)
	dec := &td.dec
	n, err := parseNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = ErrTrailing
		}
		return nil, err
	}
	return n, nil
}

func parseNode(dec *jsontext.Decoder) (*Node, error) {
	switch k := dec.PeekKind(); k {
	case jsontext.KindBeginObject:
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &Node{Kind: k}
		var index map[string]int
		for dec.PeekKind() == jsontext.KindString {
			raw, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			b, _ := AppendQuoted(nil, raw, -1)
			key := string(b)
			v, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			i := -1
			if index != nil {
				if j, ok := index[key]; ok {
					i = j
				}
			} else {
				i = slices.Index(n.Keys, key)
			}
			if i >= 0 {
				n.Vals[i] = v
				continue
			}
			n.Keys = append(n.Keys, key)
			n.Vals = append(n.Vals, v)
			if index != nil {
				index[key] = len(n.Keys) - 1
			} else if len(n.Keys) > maxLinearNames {
				index = make(map[string]int, 2*len(n.Keys))
				for j, k := range n.Keys {
					index[k] = j
				}
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return n, nil
	case jsontext.KindBeginArray:
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &Node{Kind: k}
		for {
			switch dec.PeekKind() {
			case jsontext.KindEndArray:
				if _, err := dec.ReadToken(); err != nil {
					return nil, err
				}
				return n, nil
			case jsontext.KindInvalid:
				_, err := dec.ReadToken()
				return nil, err
			}
			v, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			n.Vals = append(n.Vals, v)
		}
	case jsontext.KindString:
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		b, _ := AppendQuoted(nil, raw, -1)
		return &Node{Kind: k, Text: string(b)}, nil
	case jsontext.KindNumber, jsontext.KindNull, jsontext.KindTrue, jsontext.KindFalse:
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return &Node{Kind: k, Text: string(raw)}, nil
	default:
		_, err := dec.ReadToken()
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// AppendNode writes n in the writer's form, cutting strings longer than
// limit (>= 0) units; it reports whether it cut.
func AppendNode(dst []byte, n *Node, limit int) ([]byte, bool) {
	switch n.Kind {
	case jsontext.KindString:
		if limit < 0 {
			return append(dst, n.Text...), false
		}
		return AppendQuoted(dst, []byte(n.Text), limit)
	case jsontext.KindBeginObject:
		cut := false
		dst = append(dst, '{')
		for i, k := range n.Keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, k...)
			dst = append(dst, ':')
			var c bool
			dst, c = AppendNode(dst, n.Vals[i], limit)
			cut = cut || c
		}
		return append(dst, '}'), cut
	case jsontext.KindBeginArray:
		cut := false
		dst = append(dst, '[')
		for i, v := range n.Vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			var c bool
			dst, c = AppendNode(dst, v, limit)
			cut = cut || c
		}
		return append(dst, ']'), cut
	default:
		return append(dst, n.Text...), false
	}
}

// AppendCanon writes the structural form of n: object members sorted by
// name, numbers by their float64 value. Two values are structurally equal
// (deep equality, member order ignored, as the reference compares atoms)
// exactly when their structural forms are equal.
func AppendCanon(dst []byte, n *Node) []byte {
	switch n.Kind {
	case jsontext.KindNumber:
		f, _ := strconv.ParseFloat(n.Text, 64) // out of range yields ±Inf, as in JavaScript
		switch {
		case f == 0:
			return append(dst, '0')
		case math.IsInf(f, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(f, -1):
			return append(dst, "-Infinity"...)
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	case jsontext.KindBeginObject:
		order := make([]int, len(n.Keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			switch {
			case n.Keys[a] < n.Keys[b]:
				return -1
			case n.Keys[a] > n.Keys[b]:
				return 1
			}
			return 0
		})
		dst = append(dst, '{')
		for i, j := range order {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, n.Keys[j]...)
			dst = append(dst, ':')
			dst = AppendCanon(dst, n.Vals[j])
		}
		return append(dst, '}')
	case jsontext.KindBeginArray:
		dst = append(dst, '[')
		for i, v := range n.Vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendCanon(dst, v)
		}
		return append(dst, ']')
	default:
		return append(dst, n.Text...)
	}
}
