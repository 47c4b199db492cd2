package loom

import (
	"bytes"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Condensed is what Condense keeps of a command's stdout: the facts
// Decide reads, the shape verdict, the rows and envelope ifc.Measure reads,
// and a payload much smaller than stdout they are slices of. Decide and
// Measure read them to exactly the result, refusal or error the reading of
// stdout whole (package loomref) reads from stdout itself.
type Condensed struct {
	// Payload is stdout decoded (as loomref.Interpret decodes it) and cut
	// down, or nil when stdout is not exactly one JSON value.
	Payload []byte
	// More counts the rows of the payload's row list (its last one,
	// where the list member repeats) past the first ifc.MaxMeasuredRows,
	// or, read with a Measuring (CondenseFor), past the row with which
	// the entries are past the result, which are read but not kept:
	// Measure's More.
	More int
	// RowBytes[i] is the length, in stdout as decoded, of the i-th row
	// kept: Payload's row may be shorter (its long strings shortened).
	RowBytes []int
	// Facts are what Decide reads of the payload (as loomref.Interpret
	// reads them from stdout whole).
	Facts Facts
	// Shaped reports whether the payload has its tool's shape (ShapeOf);
	// Rows and Envelope are then what loomref.Split cuts of stdout whole:
	// the rows kept (the first ifc.MaxMeasuredRows, slices of Payload),
	// and the envelope of a list tool ("{}" when it has none of its
	// keys), nil for the others.
	Shaped   bool
	Rows     []jsontext.Value
	Envelope jsontext.Value
	// Labels, when not nil, are labels of Rows kept apart from them
	// (ifc.Input.Labels): CondenseFor keeps one copy of a label that
	// rows it admits share.
	Labels []jsontext.Value
	// LabelSpans, when not nil, tells where the labels of Rows are
	// (ifc.Input.LabelSpans): each row read whole by the validating scan
	// (wholeRow) and kept as loom wrote it, its label found on the way.
	LabelSpans []ifc.LabelSpan
	// Refused is set when stdout is one JSON value but passes one of the
	// bounds of what the pass holds (maxNameBytes and the others): the
	// gateway answers it ErrMalformedPayload before reading anything
	// else of it. Payload is then nil.
	Refused bool
	// Read is how many bytes of stdout were read.
	Read int64
	// BadAt, when Payload is nil and not Refused, is the offset in stdout
	// as decoded (UTF-8, a leading BOM dropped) where it stops being one
	// JSON value; Empty, that stdout had no byte at all.
	BadAt int64
	Empty bool

	// keep is the pooled memory Payload, Rows and RowBytes are in, as
	// Condense took it (its generation then in gen); nil when none is
	// held (Release).
	keep *keepBuffers
	gen  uint64
}

// Release gives the memory Payload, Rows, RowBytes and the facts are in
// back to Condense, for a later call to build in, and clears c. Nothing
// read from c (a row, a fact) may be used after it: the caller releases
// once it is done with them (ifc.Measure copies what its Result holds).
// Releasing a Condensed that holds nothing, or a copy of one already
// released, does nothing. A Condensed never released is left to the
// collector.
func (c *Condensed) Release() {
	k, gen := c.keep, c.gen
	*c = Condensed{}
	if k != nil && k.gen.CompareAndSwap(gen, gen+1) {
		k.put()
	}
}

// Bounds of what Condense holds of one piece of a payload. A payload that
// passes any of them is refused (Condensed.Refused) rather than held:
// none is near what loom prints, and each piece past its bound would be
// held whole (a name, a number), or read again whole (an envelope
// value), or compared with every other (an object's names).
const (
	// maxNameBytes bounds a member name, anywhere: its JSON text as
	// decoded, quotes and escapes included.
	maxNameBytes = 64 << 10
	// maxNumberBytes bounds a number's JSON text, anywhere.
	maxNumberBytes = 4 << 10
	// maxOpenMembers and maxOpenNameBytes bound the members read so far
	// of the objects open at any point of the payload, together, and the
	// JSON text of their names.
	maxOpenMembers   = 1 << 16
	maxOpenNameBytes = 1 << 20
	// maxEnvelopeBytes bounds the JSON text of each envelope member's
	// value (every occurrence) of a Search or PageDiscover payload.
	maxEnvelopeBytes = 1 << 20
)

// Condense reads r, a command's stdout, to its end in one pass as it
// arrives, and keeps only what the gateway can use of it (SEMANTICS (b),
// (d), (g)):
//
//   - every byte is decoded (WHATWG UTF-8, one leading BOM dropped) and
//     checked as JSON with the rules JavaScript's JSON.parse reads it with
//     (duplicate names and escaped lone surrogates allowed), so a payload
//     that is not one JSON value is Payload nil whatever its size;
//   - a string value longer than condenseUnits UTF-16 units keeps only
//     its first condenseUnits or so: the writer cuts every string at
//     ifc.StringBound, and the prefix decides the cut. Member names, and
//     anything inside a row's ifc member (its label, whose text and length
//     Measure reads), are kept whole;
//   - of a list tool's object (Search, PageDiscover) only the list member,
//     the envelope keys and the members Decide reads (ok, code,
//     hasProfile, schemaVersion) are kept, and of CalendarList's object only
//     the latter; a container Decide reads only the kind of becomes an
//     empty one;
//   - rows past the first ifc.MaxMeasuredRows are checked and counted in
//     More, never kept; Measure never reaches them;
//   - where each row kept as loom wrote it has its label is noted
//     (LabelSpans), where the validating scan tells it;
//   - of a row longer than ifc.MaxTreeRowBytes whose value is already past
//     any room, only what the writer still reads (note).
//
// A payload of another shape than its tool's is kept as the value 0, which
// Decide reads the same way, and is not Shaped. Whatever r
// returns after its end, or an error, ends the reading: what came before
// is the output, as RunTool's is.
//
// A payload that passes one of the bounds of what the pass holds of a
// piece of it (maxNameBytes, maxNumberBytes, maxOpenMembers,
// maxOpenNameBytes, maxEnvelopeBytes) is read to its end only to check
// that it is one JSON value, and comes back Refused. Of an envelope key
// or a member Decide reads that repeats, only the last value is kept.
//
// The memory Condense holds is its window and what it keeps: the rows'
// count, their strings' bound and 1 MiB of each row, a row label up to
// 1 MiB, an envelope value up to maxEnvelopeBytes, and the names bounded
// above; read with the measurement's ceiling (CondenseFor), of the rows
// past the first 1 MiB kept only what the result can show
// (docs/operators.md, "Memory").
func Condense(tool Tool, r io.Reader) Condensed {
	return CondenseFor(tool, r, nil)
}

// Measuring is what the measurement of a call's rows is given beside
// them (ifc.Input's Ceiling and Unlabeled).
type Measuring struct {
	Ceiling   ifc.Ceiling
	Unlabeled ifc.Label

	// from, when set, replaces pruneFrom (the tests judge small
	// payloads).
	from    int
	fromSet bool
}

// CondenseFor is Condense for rows measured with m (nil: not known). With
// m, a row list kept past pruneFrom bytes keeps only what the
// measurement can show under it: a row it withholds is kept as a short
// stand-in with the same entry, and once the entries of the rows read are
// past the result (whatever its envelope and reservation), the rows
// after them are counted in More, not kept. Measure then reads to the
// same result from what is kept, under m's ceiling and query label only.
func CondenseFor(tool Tool, r io.Reader, m *Measuring) Condensed {
	c := condenser{src: r, tool: tool, envStart: -1, measuring: m, pruneAt: math.MaxInt}
	switch {
	case m != nil && m.fromSet:
		c.pruneAt = m.from
	case m != nil:
		c.pruneAt = pruneFrom
	}
	c.run()
	if c.refused {
		return Condensed{Refused: true, Read: c.offset()}
	}
	out := Condensed{Payload: c.payload, More: c.dropped, RowBytes: c.rowBytes, Facts: c.facts, Shaped: c.shaped, Read: c.offset(), BadAt: c.badAt, Empty: c.empty}
	k := c.keep
	if k == nil { // not one JSON value: nothing is held
		return out
	}
	out.keep, out.gen = k, k.gen.Load()
	if len(out.RowBytes) == 0 {
		out.RowBytes = nil
	}
	if c.shaped {
		rows := k.rows[:0]
		for _, sp := range c.rowSpans {
			rows = append(rows, jsontext.Value(c.payload[sp.lo:sp.hi:sp.hi]))
		}
		k.rows = rows
		if len(rows) > 0 {
			out.Rows = rows[:len(rows):len(rows)]
		}
		if c.envelope != nil {
			out.Envelope = c.envelope
		}
		if len(c.labels) > 0 {
			out.Labels = c.labels[:min(len(c.labels), len(rows)):min(len(c.labels), len(rows))]
		}
		if n := min(len(c.labelSpans), len(rows)); n > 0 {
			out.LabelSpans = c.labelSpans[:n:n]
		}
	}
	return out
}

// condenseUnits is how many UTF-16 units of a long string value Condense
// keeps at least: more than ifc.StringBound, so that the writer still cuts
// it, at the same place.
const condenseUnits = ifc.StringBound + 8

// Sizes of the window Condense reads stdout through.
const (
	condenseRead  = 128 << 10 // read from stdout at once
	condenseLow   = 16 << 10  // readAhead reads on below this much unread
	condenseAhead = 64 << 10  // to this much
)

// condenseBuffers are a Condense call's read buffer and the first
// capacity of its window, reused between calls.
type condenseBuffers struct {
	raw    [condenseRead]byte
	window []byte
}

// keepBuffers are the memory what one Condense call keeps is built in:
// the payload, its rows and their lengths, and the rows' spans. A
// Condensed holds them until Release; a reading that keeps nothing gives
// them back at once. gen counts the releases, so that only the holder of
// the current generation gives them back.
type keepBuffers struct {
	payload    []byte
	rows       []jsontext.Value
	rowBytes   []int
	spans      []span
	labelSpans []ifc.LabelSpan
	gen        atomic.Uint64
}

var keeps = sync.Pool{New: func() any { return new(keepBuffers) }}

// maxPooledKeep bounds the payload buffer keeps holds on to; the rows,
// lengths and spans are at most ifc.MaxMeasuredRows long.
const maxPooledKeep = 1 << 20

// put returns k to keeps, unless its payload buffer has grown past
// maxPooledKeep. The rows it held are cleared: the pool keeps no slice
// of a payload.
func (k *keepBuffers) put() {
	if cap(k.payload) > maxPooledKeep {
		return
	}
	clear(k.rows[:cap(k.rows)])
	keeps.Put(k)
}

var condenseBufs = sync.Pool{New: func() any {
	return &condenseBuffers{window: make([]byte, 0, 2*condenseRead)}
}}

type condenseMode int

const (
	modeRow   condenseMode = iota // the payload object is the one row
	modeList                      // an object with a list member and an envelope
	modeArray                     // an array of rows (CalendarList)
)

// condenser is one Condense call: a pull parser over decoded stdout.
type condenser struct {
	src  io.Reader
	tool Tool
	keep *keepBuffers // where what is kept is built

	// The decoded window: b[i:] is unread, b[:i] read; base is the decoded
	// offset of b[0].
	b    []byte
	i    int
	base int64
	// raw is the read buffer; its first pend bytes are an incomplete UTF-8
	// sequence held back from the last read.
	raw     []byte
	pend    int
	started bool // the BOM has been looked for
	eof     bool

	bad bool // stdout is not one JSON value
	// badAt is where stdout stops being one JSON value (its decoded
	// offset), empty that it has no byte at all (when bad).
	badAt   int64
	empty   bool
	refused bool // a bound of what the pass holds was passed

	// The members read so far of the objects open, and the bytes of their
	// names (maxOpenMembers, maxOpenNameBytes).
	openMembers, openNameBytes int
	// inName: a member name is being read, from nameStart.
	inName    bool
	nameStart int64
	// envStart is where the envelope value being read starts, or -1.
	envStart int64

	facts Facts
	// factSpans are where the last value of each of factNames is in the
	// payload of a one-row tool (rowValue at depth 0); hi 0: absent.
	factSpans [len(factNames)]span
	shaped    bool
	rowSpans  []span // the kept rows in the buffer they are kept in
	envelope  []byte
	// Where the kept rows' labels are (Condensed.LabelSpans), and that of
	// the row wholeRow read last.
	labelSpans []ifc.LabelSpan
	rowLabel   ifc.LabelSpan

	out    *[]byte // where what is kept goes; nil while dropping
	keepWS bool    // keep whitespace too (inside a row's label)

	payload  []byte
	list     []byte // the value of the last list member, when an array
	dropped  int
	rowBytes []int
	sc       jsjson.Scanner

	// The row being read (row): where it starts, the least the writer
	// writes of its strings kept so far, and whether the rest of it is
	// past what the measurement reads (wrote).
	inRow      bool
	rowStart   int64
	rowWritten int
	rowOver    bool
	rowDup     bool // past rowOver, a repeated name was found (and kept)
	// Past rowOver, the names of the objects open in the value being
	// skimmed, in the writer's form (jsjson.AppendName), and where they
	// are (jsjson.Names decides whether one repeats).
	skimNames []byte
	skimSpans jsjson.Names
	// The row's own ifc member being read: where its value starts in
	// *out, and whether it is no longer kept (labelTooLong).
	inIFC     bool
	labelMark int
	labelCut  bool
	name      []byte // scratch for a member name
	num       []byte // scratch for a number or literal

	// What the measurement will be given beyond the rows (nil: nothing
	// known), and, once the row list kept is past pruneFrom (pruning),
	// its rows judged with it (judgeRows): judged of them, and past once
	// the rows after them are sure to be omitted.
	measuring *Measuring
	labels    []jsontext.Value  // the rows' labels kept apart (Condensed.Labels)
	labelSet  map[string][]byte // each of them once, by its text
	scratch   []byte            // a row less its label (apart)
	judge     *ifc.Judge
	pruneAt   int // pruneFrom, or never (math.MaxInt) without measuring
	judged    int
	pruning   bool
	past      bool
}

func (c *condenser) run() {
	shape := ShapeOf(c.tool)
	mode, listName, envelope := modeRow, shape.List, shape.Envelope
	switch {
	case shape.List != "":
		mode = modeList
	case shape.Array:
		mode = modeArray
	}
	bufs := condenseBufs.Get().(*condenseBuffers)
	c.b, c.raw = bufs.window[:0], bufs.raw[:]
	// What is kept is built in pooled buffers (keepBuffers): the payload,
	// or, of a list tool's object, the list (object), which becomes the
	// payload, never both; appending rows to a slice of its own would
	// copy and reallocate it a few dozen times as it grows.
	k := keeps.Get().(*keepBuffers)
	c.keep = k
	c.payload, c.list = k.payload[:0], k.payload[:0]
	c.rowBytes, c.rowSpans = k.rowBytes[:0], k.spans[:0]
	c.labelSpans = k.labelSpans[:0]
	ok, oneRow := false, false
	switch ch := c.peek(); {
	case ch == '{' && mode == modeRow:
		c.out = &c.payload
		start := c.offset()
		ok = c.row(0)
		c.rowBytes = append(c.rowBytes, int(c.offset()-start))
		c.rowSpans = append(c.rowSpans[:0], span{0, len(c.payload)})
		oneRow = ok
	case ch == '{':
		ok = c.object(listName, envelope)
	case ch == '[' && mode == modeArray:
		c.out = &c.payload
		ok = c.rows(0)
		c.shaped = true
	default:
		ok = c.value(0, true)
		c.payload = append(c.payload[:0], '0')
	}
	c.out = nil
	if !ok || !c.atEnd() {
		c.bad, c.badAt = true, c.offset()
		c.empty = c.badAt == 0 && c.atEnd()
	}
	c.drain()
	c.judge.Release()
	c.judge = nil
	condenseBufs.Put(bufs)
	c.b, c.raw = nil, nil
	if oneRow && !c.bad && !c.refused {
		// The row is the payload: its facts were found as it was read.
		c.facts = Facts{Object: true}
		for i, sp := range c.factSpans {
			if sp.hi > 0 {
				c.facts.set(i, jsontext.Value(c.payload[sp.lo:sp.hi:sp.hi]))
			}
		}
		c.shaped = true
	}
	// The buffers keep what they grew to; the payload is the list or
	// the payload itself, whichever grew.
	k.payload = c.payload
	if cap(c.list) > cap(k.payload) {
		k.payload = c.list
	}
	k.rowBytes, k.spans, k.labelSpans = c.rowBytes, c.rowSpans, c.labelSpans
	c.list = nil
	if c.bad || c.refused {
		c.keep = nil
		k.put()
	}
	if c.bad {
		*c = condenser{badAt: c.badAt, empty: c.empty}
	}
}

// offset is the decoded offset of the next byte.
func (c *condenser) offset() int64 { return c.base + int64(c.i) }

// fill reads more of stdout into the window, keeping b[i:]; it returns
// false at the end (nothing was added). It reads straight into the
// window's free space, after the bytes of an incomplete UTF-8 sequence
// held back from the last read (raw[:pend]): stdout that is valid UTF-8,
// as loom's is, is never copied. Bytes that are not are copied to raw
// and decoded back into the window.
func (c *condenser) fill() bool {
	if c.eof {
		return false
	}
	if c.i > 0 {
		n := copy(c.b, c.b[c.i:])
		c.b = c.b[:n]
		c.base += int64(c.i)
		c.i = 0
	}
	for {
		if cap(c.b)-len(c.b) < len(c.raw) {
			c.b = slices.Grow(c.b, len(c.raw))
		}
		free := c.b[len(c.b) : len(c.b)+len(c.raw)]
		copy(free, c.raw[:c.pend])
		n, err := c.src.Read(free[c.pend:])
		p := free[:c.pend+n]
		if err != nil {
			c.eof = true
		}
		if !c.started {
			if len(p) < 3 && !c.eof {
				c.pend = copy(c.raw, p)
				continue
			}
			c.started = true
			if bytes.HasPrefix(p, bom) {
				p = free[:copy(free, p[3:])]
			}
		}
		j := len(p)
		if !c.eof {
			j = completeUTF8(p)
		}
		added := j > 0
		var held [utf8.UTFMax]byte // the incomplete sequence after p[:j]
		h := copy(held[:], p[j:])
		if jsjson.ValidUTF8(p[:j]) {
			c.b = c.b[:len(c.b)+j]
		} else {
			// p is the window's free space, which decoding writes.
			c.b = appendDecodedUTF8(c.b, c.raw[:copy(c.raw, p[:j])])
		}
		c.pend = copy(c.raw, held[:h])
		if added {
			return true
		}
		if c.eof {
			return false
		}
	}
}

var bom = []byte("\xef\xbb\xbf")

// completeUTF8 returns the length of the longest prefix of p that does not
// end in the first bytes of a UTF-8 sequence more bytes could complete.
func completeUTF8(p []byte) int {
	for k := 1; k <= 3 && k <= len(p); k++ {
		c := p[len(p)-k]
		if c < 0x80 {
			break
		}
		if c >= 0xC0 {
			if !utf8.FullRune(p[len(p)-k:]) {
				return len(p) - k
			}
			break
		}
	}
	return len(p)
}

// drain reads stdout to its end, discarding it.
func (c *condenser) drain() {
	for !c.eof {
		if _, err := c.src.Read(c.raw); err != nil {
			c.eof = true
		}
	}
}

// atEnd reports whether only whitespace is left of stdout.
func (c *condenser) atEnd() bool { return c.peek() == 0 && c.i == len(c.b) }

// need makes sure k unread bytes are in the window, if stdout has them.
func (c *condenser) need(k int) bool {
	for len(c.b)-c.i < k {
		if !c.fill() {
			return false
		}
	}
	return true
}

// peek skips whitespace (keeping it when keepWS) and returns the next
// byte, or 0 at the end of stdout.
func (c *condenser) peek() byte {
	for {
		start := c.i
		for c.i < len(c.b) {
			ch := c.b[c.i]
			if ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r' {
				break
			}
			c.i++
		}
		if c.keepWS && c.out != nil && c.i > start {
			*c.out = append(*c.out, c.b[start:c.i]...)
		}
		if c.i < len(c.b) {
			return c.b[c.i]
		}
		if !c.fill() {
			return 0
		}
	}
}

// take reads the byte peek returned, keeping it.
func (c *condenser) take() {
	if c.out != nil {
		*c.out = append(*c.out, c.b[c.i])
	}
	c.i++
}

// value reads one value inside depth open containers, keeping it; short:
// a long string value is shortened. In a row past its over point (rowOver)
// it keeps only what the writer still reads (standIn, dropElement).
func (c *condenser) value(depth int, short bool) bool {
	if c.pastOver() {
		return c.standIn(depth)
	}
	switch ch := c.peek(); ch {
	case '{', '[':
		if depth >= jsjson.MaxDepth {
			return false
		}
		c.take()
		c.note(2)
		if c.peek() == jsjson.Closer(ch) {
			c.take()
			return true
		}
		members, nameBytes := c.openMembers, c.openNameBytes
		kept := 0 // elements kept
		for {
			out := c.out
			c.labelTooLong()
			if c.labelCut || c.envelopeTooLong() || c.refused {
				c.out = nil
			}
			var ok bool
			if ch == '[' && c.pastOver() {
				var k int
				k, ok = c.dropElement(depth+1, kept > 0)
				kept += k
			} else {
				if kept > 0 && c.out != nil {
					*c.out = append(*c.out, ',')
				}
				kept++
				if ch == '{' {
					if c.peek() != '"' || !c.memberKey() || !c.colon() {
						return false
					}
					c.note(3)
				}
				ok = c.value(depth+1, short)
			}
			c.out = out
			if !ok {
				return false
			}
			switch c.peek() {
			case ',':
				c.i++ // kept, if at all, before the element it separates
			case jsjson.Closer(ch):
				c.take()
				c.openMembers, c.openNameBytes = members, nameBytes
				return true
			default:
				return false
			}
		}
	case '"':
		return c.str(short)
	case 0:
		return false
	default:
		return c.scalar()
	}
}

// pastOver reports whether what comes next is part of a row's value
// (not of its label) past its over point: the writer has stopped
// writing, and reads only the names of the objects still open (to find a
// repeated one) and the labels of the members that follow.
func (c *condenser) pastOver() bool { return c.rowOver && c.out != nil && !c.inIFC }

// standIn reads a value of a row past its over point, keeping 0 in its
// place, or, when it holds an object that repeats a name (the writer
// finds it there) and none was found before, an object that does.
func (c *condenser) standIn(depth int) bool {
	ok, dup := c.skim(depth)
	switch {
	case !ok:
		return false
	case dup:
		*c.out = append(*c.out, repeatsAName...)
	default:
		*c.out = append(*c.out, '0')
	}
	return true
}

// repeatsAName stands in for a value of a row that repeats a name.
const repeatsAName = `{"d":0,"d":0}`

// dropElement reads an element of an array of a row past its over point,
// keeping nothing, or, as standIn, an object that repeats a name, after a
// comma when comma; it returns how many elements it kept.
func (c *condenser) dropElement(depth int, comma bool) (int, bool) {
	ok, dup := c.skim(depth)
	if !ok || !dup {
		return 0, ok
	}
	if comma {
		*c.out = append(*c.out, ',')
	}
	*c.out = append(*c.out, repeatsAName...)
	return 1, true
}

// skim reads one value inside depth open containers, keeping nothing,
// and reports whether an object in it repeats a member name, as the
// writer compares names (jsjson.Names decides, for both), unless a repeated one was found in the row
// before (rowDup, which it then sets): the writer stops at the first.
func (c *condenser) skim(depth int) (ok, dup bool) {
	out := c.out
	c.out = nil
	if c.rowDup {
		ok = c.value(depth, false)
	} else {
		c.skimNames = c.skimNames[:0]
		c.skimSpans.Reset()
		ok, dup = c.skimValue(depth)
		c.rowDup = ok && dup
		if cap(c.skimNames) > 64<<10 {
			c.skimNames, c.skimSpans = nil, jsjson.Names{}
		}
	}
	c.out = out
	return ok, ok && dup
}

// skimValue is skim's reading of one value.
func (c *condenser) skimValue(depth int) (ok, dup bool) {
	ch := c.peek()
	if ch != '{' && ch != '[' {
		return c.value(depth, false), false
	}
	if depth >= jsjson.MaxDepth {
		return false, false
	}
	c.i++
	if c.peek() == jsjson.Closer(ch) {
		c.i++
		return true, false
	}
	nameBytes := len(c.skimNames)
	members, openNameBytes := c.openMembers, c.openNameBytes
	var names jsjson.NameSet
	if ch == '{' {
		names = c.skimSpans.Open()
	}
	for {
		if ch == '{' && !dup && !c.refused {
			if c.peek() != '"' {
				return false, false
			}
			c.out, c.name = &c.name, c.name[:0]
			ok = c.memberKey()
			c.out = nil
			if !ok || !c.colon() {
				return false, false
			}
			lo := len(c.skimNames)
			c.skimNames = jsjson.AppendName(c.skimNames, c.name)
			dup = !c.skimSpans.Add(&names, c.skimNames, lo)
		} else if ch == '{' {
			if c.peek() != '"' || !c.memberKey() || !c.colon() {
				return false, false
			}
		}
		var d bool
		if dup {
			ok = c.value(depth+1, false)
		} else {
			ok, d = c.skimValue(depth + 1)
		}
		if !ok {
			return false, false
		}
		dup = dup || d
		switch c.peek() {
		case ',':
			c.i++
		case jsjson.Closer(ch):
			c.i++
			if ch == '{' {
				c.skimSpans.Close(&names)
			}
			c.skimNames = c.skimNames[:nameBytes]
			c.openMembers, c.openNameBytes = members, openNameBytes
			return true, dup
		default:
			return false, false
		}
	}
}

type span struct{ lo, hi int }

// colon reads the colon after a member name.
func (c *condenser) colon() bool {
	if c.peek() != ':' {
		return false
	}
	c.take()
	return true
}

// row reads a row inside depth open containers: a value whose strings are
// shortened, except within its own ifc member, which is kept as it is.
func (c *condenser) row(depth int) bool {
	c.peek()
	c.inRow, c.rowStart, c.rowWritten, c.rowOver, c.rowDup = true, c.offset(), 0, false, false
	ok := c.rowValue(depth)
	c.inRow, c.rowOver, c.rowDup = false, false, false
	return ok
}

// rowValue is row, its row state set. A label longer than
// ifc.MaxTreeRowBytes is kept as 7 (labelTooLong).
func (c *condenser) rowValue(depth int) bool {
	if c.peek() != '{' {
		return c.value(depth, true)
	}
	if depth >= jsjson.MaxDepth {
		return false
	}
	c.take()
	c.note(2)
	if c.peek() == '}' {
		c.take()
		return true
	}
	lastLabel, lastLabelEnd := -1, -1 // the last label kept past the over member, in *c.out
	members, nameBytes := c.openMembers, c.openNameBytes
	for n := 0; ; n++ {
		// Past the member in which the writer went over (its over mark
		// falls at or before rowOver is set, and it then reads only the
		// labels of the members that follow), only the last label, and
		// of the payload object itself the facts Decide reads, are
		// kept.
		past := c.rowOver && c.out != nil
		ifcMember, ok := c.memberName()
		if !ok {
			return false
		}
		fi := -1
		if depth == 0 {
			fi = factIndex(string(jsjson.MemberName(c.name)))
		}
		fact := fi >= 0
		out := c.out
		if past && !fact && (!ifcMember || c.rowDup) || c.refused {
			c.out = nil
		}
		if past && ifcMember && c.out != nil && lastLabelEnd == len(*c.out) {
			*c.out = (*c.out)[:lastLabel] // only the last label counts
		}
		mark := 0
		if c.out != nil {
			mark = len(*c.out)
			if n > 0 {
				*c.out = append(*c.out, ',')
			}
			*c.out = append(*c.out, c.name...)
			*c.out = append(*c.out, ':')
		}
		at := 0
		if c.out != nil {
			at = len(*c.out)
		}
		switch {
		case ifcMember:
			keepWS := c.keepWS
			c.keepWS, c.inIFC, c.labelCut = true, true, false
			if c.out != nil {
				c.labelMark = len(*c.out)
			}
			ok = c.value(depth+1, false)
			if c.labelCut {
				c.out = out
				*c.out = append((*c.out)[:c.labelMark], '7')
			}
			c.keepWS, c.inIFC, c.labelCut = keepWS, false, false
			if past && c.out != nil {
				lastLabel, lastLabelEnd = mark, len(*c.out)
			}
		case past && c.out != nil:
			// A fact past the over member: kept as Decide reads it.
			c.rowOver = false
			ok = c.fact()
			c.rowOver = true
		default:
			c.note(3)
			ok = c.value(depth+1, true)
		}
		if fact && ok && c.out != nil {
			c.factSpans[fi] = span{at, len(*c.out)} // the last one wins
		}
		c.out = out
		if !ok {
			return false
		}
		switch c.peek() {
		case ',':
			c.i++ // kept, if at all, before the member it separates
		case '}':
			c.take()
			c.openMembers, c.openNameBytes = members, nameBytes
			return true
		default:
			return false
		}
	}
}

// labelTooLong stops keeping a row's label (its own ifc member) once more
// than ifc.MaxTreeRowBytes of it are kept: the row is then longer than
// that too, so the measurement reads the label as unreadable whatever it
// holds (longer than ifc.MaxLabelBytes, or in a row too long to read from
// a tree when it repeats a name), as it reads 7. rowValue writes 7 in its
// place when the label ends.
func (c *condenser) labelTooLong() {
	if c.inIFC && !c.labelCut && c.out != nil && len(*c.out)-c.labelMark > ifc.MaxTreeRowBytes {
		c.labelCut = true
		c.out = nil
	}
}

// memberName reads a row's member name, into c.name, and its colon,
// keeping neither, and reports whether the name reads as "ifc".
func (c *condenser) memberName() (isIFC, ok bool) {
	if c.peek() != '"' {
		return false, false
	}
	out := c.out
	c.out, c.name = &c.name, c.name[:0]
	ok = c.memberKey()
	c.out = nil
	ok = ok && c.colon()
	c.out = out
	if !ok {
		return false, false
	}
	return string(jsjson.MemberName(c.name)) == "ifc", true
}

// rows reads an array of rows inside depth open containers: the first
// ifc.MaxMeasuredRows are kept, the others counted in dropped.
func (c *condenser) rows(depth int) bool {
	if depth >= jsjson.MaxDepth {
		return false
	}
	out := c.out
	c.take()
	c.dropped, c.rowBytes, c.rowSpans = 0, c.rowBytes[:0], c.rowSpans[:0]
	c.labelSpans = c.labelSpans[:0]
	if c.peek() == ']' {
		c.take()
		return true
	}
	c.startJudge()
	for n := 0; ; n++ {
		past := n >= ifc.MaxMeasuredRows || c.past
		switch {
		case past:
			c.out = nil
			c.dropped++
		case c.refused:
			c.out = nil // nothing more is kept
		case n > 0:
			*c.out = append(*c.out, ',')
		}
		c.peek()
		c.readAhead()
		start := c.offset()
		lo := -1
		if c.out != nil {
			lo = len(*c.out)
		}
		if !c.wholeRow(depth+1, c.out != nil) && !c.row(depth+1) {
			return false
		}
		if !past {
			c.rowBytes = append(c.rowBytes, int(c.offset()-start))
		}
		if lo >= 0 {
			c.rowSpans = append(c.rowSpans, span{lo, len(*c.out)})
			c.labelSpans = append(c.labelSpans, c.rowLabel)
			if c.pruning || len(*c.out) >= c.pruneAt {
				c.judgeRows(out)
			}
		}
		switch c.peek() {
		case ',':
			c.i++ // kept above, before the next row it separates
		case ']':
			c.out = out
			c.take()
			return true
		default:
			return false
		}
	}
}

// pruneFrom is how many bytes the row list kept may take before a
// Condense given the measurement's ceiling and query label (Measuring)
// starts judging its rows (judgeRows).
const pruneFrom = 1 << 20

// startJudge starts over the judging of a row list (rows): a list that
// repeats starts over, as Split reads the last one. The Judge itself is
// made once the list kept is past pruneFrom (judgeRows).
func (c *condenser) startJudge() {
	c.judge.Release()
	c.judge, c.judged, c.pruning, c.past = nil, 0, false, false
	c.labels = c.labels[:0]
}

// judgeRows judges the rows kept in *out not judged yet, once the list
// kept is past pruneFrom bytes (so a payload whose rows take less is kept
// as before, and read once): each row the measurement is sure to withhold
// is replaced by a stand-in with the same entry (ifc.WithheldStandIn),
// when that is shorter, and once the entries of the rows judged are past
// the result (ifc.Judge), no row after them is kept: they are counted in
// dropped, omitted as the rows past ifc.MaxMeasuredRows are. Rows move
// down in *out as others shrink; their spans follow.
func (c *condenser) judgeRows(out *[]byte) {
	if c.measuring == nil || c.refused || out == nil {
		return
	}
	if !c.pruning {
		if len(*out) < c.pruneAt {
			return
		}
		c.pruning = true
		c.judge = ifc.NewJudge(c.measuring.Ceiling, c.measuring.Unlabeled)
	}
	buf := *out
	w := c.rowSpans[0].lo
	if c.judged > 0 {
		w = c.rowSpans[c.judged-1].hi
	}
	for k := c.judged; k < len(c.rowSpans); k++ {
		sp := c.rowSpans[k]
		row := buf[sp.lo:sp.hi]
		v := c.judge.Row(row, c.rowBytes[k])
		if s := ifc.WithheldStandIn(v.Withheld); s != nil && len(s) < len(row) {
			row = s
			c.labelSpans[k] = ifc.LabelSpan{} // not the row read
		}
		for len(c.labels) < k {
			c.labels = append(c.labels, nil)
		}
		if k > 0 {
			buf[w] = ','
			w++
		}
		var label []byte
		n := 0
		if v.Apart {
			n, label = c.apart(buf[w:], row)
		}
		if label == nil {
			n = copy(buf[w:], row)
		}
		c.labels = append(c.labels[:k], label)
		if label != nil {
			c.labelSpans[k] = ifc.LabelSpan{} // its label is apart
		}
		c.rowSpans[k] = span{w, w + n}
		w += n
		if v.Past {
			c.past = true
			c.dropped += len(c.rowSpans) - k - 1
			c.rowSpans, c.rowBytes = c.rowSpans[:k+1], c.rowBytes[:k+1]
			c.labelSpans = c.labelSpans[:k+1]
			c.labels = c.labels[:min(len(c.labels), k+1)]
			break
		}
	}
	*out = buf[:w]
	c.judged = len(c.rowSpans)
}

// apart writes row to dst (which may overlap row) less its own ifc
// members, and returns how many bytes it wrote and the last ifc member's
// value, kept once for all the rows whose labels are the same text
// (internLabel): nil, and dst not written, when it cannot. row is one the
// writer read without a repeated name (ifc.Verdict.Apart).
func (c *condenser) apart(dst, row []byte) (int, []byte) {
	var s jsjson.Scanner
	s.Reset(row)
	if s.Peek() != '{' {
		return 0, nil
	}
	s.Advance()
	out := append(c.scratch[:0], '{')
	var label []byte
	for s.Peek() != '}' {
		start := s.Offset()
		name, err := s.Name()
		if err != nil {
			return 0, nil
		}
		v, err := s.Value(1)
		if err != nil {
			return 0, nil
		}
		if string(jsjson.MemberName(name)) == "ifc" {
			label = v
		} else {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, row[start:s.Offset()]...)
		}
		if s.Peek() == ',' {
			s.Advance()
		}
	}
	if label == nil {
		return 0, nil
	}
	label = c.internLabel(label)
	out = append(out, '}')
	c.scratch = out
	return copy(dst, out), label
}

// internLabel returns a copy of label, the same one for every label of
// the same text the call keeps apart.
func (c *condenser) internLabel(label []byte) []byte {
	if c.labelSet == nil {
		c.labelSet = make(map[string][]byte)
	}
	if l, ok := c.labelSet[string(label)]; ok {
		return l
	}
	l := bytes.Clone(label)
	// The key is l's own bytes, which nothing writes: one copy a label.
	c.labelSet[unsafe.String(&l[0], len(l))] = l
	return l
}

// readAhead reads on, when less than condenseLow bytes of the window are
// unread, until condenseAhead are (or stdout ends), so that a row of
// less is wholly in the window and read by wholeRow: a pipe read while
// loom writes returns a page or a few, and a row cut by the window's end
// is read by row, a byte at a time. The window is moved once for each
// condenseAhead-condenseLow bytes read.
func (c *condenser) readAhead() {
	if c.eof || len(c.b)-c.i >= condenseLow {
		return
	}
	for len(c.b)-c.i < condenseAhead && c.fill() {
	}
}

// wholeRow is the fast way through a row that is an array or an object
// wholly in the window: one validating scan (jsjson.Scanner, the rules
// the reference reads with), then, when keep, the row kept as it is
// (loom's own bytes, which is what the reference reads) if it is too
// short to hold a string Condense would shorten. It reports false, having
// read nothing, when it cannot: the row is something else, goes on past
// the window, is invalid, or is long; row then reads it. Where the label
// of an object kept is, when the scan tells (jsjson.Scanner.RowValue), is
// noted in rowLabel.
func (c *condenser) wholeRow(depth int, keep bool) bool {
	c.rowLabel = ifc.LabelSpan{}
	if c.i >= len(c.b) || c.b[c.i] != '{' && c.b[c.i] != '[' {
		return false
	}
	c.sc.Reset(c.b[c.i:])
	var v []byte
	var err error
	if keep {
		var lo, hi int
		var found bool
		v, lo, hi, found, err = c.sc.RowValue(depth)
		c.rowLabel = ifc.LabelSpan{Read: found, Lo: int32(lo), Hi: int32(hi)}
	} else {
		v, err = c.sc.Value(depth)
	}
	if err != nil || keep && len(v) > condenseUnits || !c.withinBounds(len(v)) {
		c.rowLabel = ifc.LabelSpan{}
		return false
	}
	if keep {
		*c.out = append(*c.out, v...)
	}
	c.i += len(v)
	return true
}

// withinBounds reports whether a value of n bytes read whole is sure to
// pass none of the bounds memberKey and scalar count: none of its names
// or numbers is longer than it, and it has fewer members than bytes.
func (c *condenser) withinBounds(n int) bool {
	return n <= min(maxNameBytes, maxNumberBytes) && c.openMembers+n <= maxOpenMembers && c.openNameBytes+n <= maxOpenNameBytes
}

// object reads a list tool's or CalendarList's payload object, keeping the
// members Decide and Measure read: the last of each of those Decide
// reads, the last of each envelope key (in the order of their first
// occurrences, as loomref.Split reads them), and the last list member (when
// listName is not empty), which goes first: the rows are kept where the
// payload begins, the other members (few and short) beside them.
func (c *condenser) object(listName string, envelope []string) bool {
	c.i++
	var facts [len(factNames)][]byte // the last value of each, nil when absent
	var env [maxEnvelopeKeys][]byte  // the same, of each envelope key
	var has [maxEnvelopeKeys]bool
	var order [maxEnvelopeKeys]int // envelope keys in the order first seen
	seen := 0
	hasList, listArray := false, false
	listHead := `{"` + listName + `":`
	if c.peek() == '}' {
		c.i++
	} else {
		for {
			c.out = nil
			if c.peek() != '"' {
				return false
			}
			c.out, c.name = &c.name, c.name[:0]
			ok := c.memberKey()
			c.out = nil
			if !ok || !c.colon() {
				return false
			}
			name := string(jsjson.MemberName(c.name))
			fact, key := factIndex(name), envelopeIndex(name, envelope)
			switch {
			case c.refused:
				ok = c.value(1, true) // nothing more is kept
			case name == listName && listName != "":
				hasList = true
				c.list = append(c.list[:0], listHead...)
				listArray = c.peek() == '['
				if listArray {
					c.out = &c.list
					ok = c.rows(1)
				} else {
					c.list = append(c.list, '0')
					ok = c.value(1, true)
				}
			case fact >= 0:
				facts[fact] = facts[fact][:0]
				c.out = &facts[fact]
				ok = c.fact()
			case key >= 0:
				if !has[key] {
					has[key] = true
					order[seen] = key
					seen++
				}
				env[key] = env[key][:0]
				c.out = &env[key]
				c.peek()
				c.envStart = c.offset()
				ok = c.value(1, true)
				if ok && c.offset()-c.envStart > maxEnvelopeBytes {
					c.refuse()
				}
				c.envStart = -1
			default:
				ok = c.value(1, true)
			}
			c.out = nil
			if !ok {
				return false
			}
			switch c.peek() {
			case ',':
				c.i++
				continue
			case '}':
				c.i++
			default:
				return false
			}
			break
		}
	}
	if c.refused {
		c.list = nil
		return true
	}
	if hasList {
		c.payload = c.list
	} else {
		c.payload = append(c.payload[:0], '{')
	}
	comma := hasList
	member := func(name string, v []byte) {
		if comma {
			c.payload = append(c.payload, ',')
		}
		comma = true
		c.payload = append(c.payload, '"')
		c.payload = append(c.payload, name...)
		c.payload = append(c.payload, '"', ':')
		c.payload = append(c.payload, v...)
	}
	for i, v := range facts {
		if v != nil {
			member(factNames[i], v)
		}
	}
	envAt := len(c.payload)
	for _, k := range order[:seen] {
		member(envelope[k], env[k])
	}
	c.payload = append(c.payload, '}')
	c.list = nil
	c.facts = Facts{Object: true}
	for i, v := range facts {
		c.facts.set(i, v)
	}
	c.shaped = listName != "" && hasList && listArray
	if c.shaped {
		// The envelope is the members after the facts, as an object.
		members := c.payload[envAt : len(c.payload)-1]
		if len(members) > 0 && members[0] == ',' {
			members = members[1:]
		}
		c.envelope = append(append(append(make([]byte, 0, len(members)+2), '{'), members...), '}')
	}
	return true
}

// factNames are the payload object's members Decide reads.
var factNames = [...]string{"ok", "code", "hasProfile", "schemaVersion"}

// factIndex is name's index in factNames, or -1.
func factIndex(name string) int {
	for i, f := range factNames {
		if name == f {
			return i
		}
	}
	return -1
}

// envelopeIndex is name's index in keys, or -1.
func envelopeIndex(name string, keys []string) int {
	for i, k := range keys {
		if name == k {
			return i
		}
	}
	return -1
}

// fact reads the value of a member Decide reads into *c.out: a
// container becomes an empty one of its kind (Decide reads only its
// kind), anything else is kept.
func (c *condenser) fact() bool {
	switch ch := c.peek(); ch {
	case '{', '[':
		out := c.out
		c.out = nil
		if !c.value(1, true) {
			return false
		}
		*out = append(*out, ch, jsjson.Closer(ch))
		return true
	}
	return c.value(1, true)
}

// scalar reads a number or a literal, keeping it: the longest run of the
// bytes they are made of, which must be exactly one of them (what follows
// it is the caller's to check). A number longer than maxNumberBytes is
// checked as it is read, not held, and refuses the payload.
func (c *condenser) scalar() bool {
	c.num = c.num[:0]
	n := 0
	st := numStart
	for {
		start := c.i
		for c.i < len(c.b) && scalarByte[c.b[c.i]] {
			c.i++
		}
		run := c.b[start:c.i]
		n += len(run)
		switch {
		case n <= maxNumberBytes:
			c.num = append(c.num, run...)
		case len(c.num) > 0:
			// Past the bound: from here on the run is checked as a number
			// as it is read.
			st = numberState(numberState(st, c.num), run)
			c.num = c.num[:0]
		default:
			st = numberState(st, run)
		}
		if st == numBad {
			return false
		}
		if c.i < len(c.b) || !c.fill() {
			break
		}
	}
	if n > maxNumberBytes {
		if !numAccepts(st) {
			return false
		}
		c.refuse()
		if c.out != nil {
			*c.out = append(*c.out, '0')
		}
		return true
	}
	if !validScalar(c.num) {
		return false
	}
	if c.out != nil {
		*c.out = append(*c.out, c.num...)
		c.note(1)
	}
	return true
}

// States of numberState, reading a JSON number.
const (
	numBad     = iota // not a number
	numStart          // nothing read
	numMinus          // -
	numZero           // a leading 0
	numInt            // digits of the integer part
	numDot            // .
	numFrac           // digits of the fraction
	numE              // e or E
	numExpSign        // its sign
	numExp            // digits of the exponent
)

// numberState is the state after reading b from state st.
func numberState(st int, b []byte) int {
	for _, ch := range b {
		digit := '0' <= ch && ch <= '9'
		switch {
		case st == numStart && ch == '-':
			st = numMinus
		case (st == numStart || st == numMinus) && ch == '0':
			st = numZero
		case (st == numStart || st == numMinus) && digit:
			st = numInt
		case st == numInt && digit:
		case (st == numZero || st == numInt) && ch == '.':
			st = numDot
		case (st == numDot || st == numFrac) && digit:
			st = numFrac
		case (st == numZero || st == numInt || st == numFrac) && (ch == 'e' || ch == 'E'):
			st = numE
		case st == numE && (ch == '+' || ch == '-'):
			st = numExpSign
		case (st == numE || st == numExpSign || st == numExp) && digit:
			st = numExp
		default:
			return numBad
		}
	}
	return st
}

// numAccepts reports whether a number may end in state st.
func numAccepts(st int) bool {
	return st == numZero || st == numInt || st == numFrac || st == numExp
}

// scalarByte marks the bytes numbers and literals are made of.
var scalarByte = func() (t [256]bool) {
	for _, ch := range []byte("0123456789+-.eEtrufalsn") {
		t[ch] = true
	}
	return t
}()

// validScalar reports whether b is exactly one JSON number or literal.
func validScalar(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	var s jsjson.Scanner
	s.Reset(b)
	if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	v, err := s.Value(0)
	return err == nil && len(v) == len(b)
}

// str reads a string, keeping it; short: past condenseUnits UTF-16 units
// the rest of its characters are read but not kept.
func (c *condenser) str(short bool) bool {
	c.take() // the opening quote
	units := 0
	keep := c.out != nil
	for {
		// A run of plain bytes, up to the end of the window.
		start := c.i
		b := c.b
		i := start + jsjson.PlainLen(b[start:])
		c.i = i
		if keep {
			run := b[start:i]
			if short {
				run = c.shorten(run, &units)
				if len(run) < i-start {
					keep = false
				}
			}
			*c.out = append(*c.out, run...)
			if c.inIFC {
				c.labelTooLong()
				keep = c.out != nil
			}
			if c.inName && c.offset()-c.nameStart > maxNameBytes {
				keep = false // refused when it ends (memberKey)
			}
		}
		if c.i == len(c.b) {
			if !c.fill() {
				return false
			}
			continue
		}
		switch c.b[c.i] {
		case '"':
			c.take()
			if short {
				c.wrote(units)
			}
			return true
		case '\\':
			if !c.need(2) {
				return false
			}
			w := 2
			switch c.b[c.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				w = 6
				if !c.need(6) || !isHex4(c.b[c.i+2:c.i+6]) {
					return false
				}
			default:
				return false
			}
			if keep && short && units+1 > condenseUnits {
				keep = false
			}
			if keep {
				*c.out = append(*c.out, c.b[c.i:c.i+w]...)
				units++
			}
			c.i += w
			if c.inName && c.offset()-c.nameStart > maxNameBytes {
				keep = false
			}
		default: // a control character
			return false
		}
	}
}

// memberKey reads a member name, keeping it, and counts it among the
// members of the objects open (maxNameBytes, maxOpenMembers,
// maxOpenNameBytes): a name longer than maxNameBytes is not kept whole.
func (c *condenser) memberKey() bool {
	c.inName, c.nameStart = true, c.offset()
	ok := c.str(false)
	c.inName = false
	if !ok {
		return false
	}
	n := int(c.offset() - c.nameStart)
	c.openMembers++
	c.openNameBytes += n
	if n > maxNameBytes || c.openMembers > maxOpenMembers || c.openNameBytes > maxOpenNameBytes {
		c.refuse()
	}
	return true
}

// envelopeTooLong reports whether an envelope value is being read that is
// already longer than maxEnvelopeBytes: the payload is refused, and the
// rest of the value is not kept.
func (c *condenser) envelopeTooLong() bool {
	if c.envStart < 0 || c.offset()-c.envStart <= maxEnvelopeBytes {
		return false
	}
	c.refuse()
	return true
}

// refuse notes that the payload passes a bound of what the pass holds:
// from here on it is read to check that it is one JSON value, and little
// more is kept.
func (c *condenser) refuse() { c.refused = true }

// wrote notes a string value of the row being read, kept with units
// UTF-16 units (or more than condenseUnits), of which the writer writes at
// least min(units, ifc.StringBound) + 2 units.
func (c *condenser) wrote(units int) {
	c.note(min(units, ifc.StringBound) + 2)
}

// note adds k to the least number of UTF-16 units the writer writes of
// the value of the row being read, when what was just read is kept and is
// part of its value (not of its label): a name takes at least 3 (its
// quotes and colon), a container 2, a number or literal 1, a string what
// wrote says. Each unit is a byte or more, so once that is past
// 3 x ifc.OutputBound the writer is past its over mark (3 bytes for each
// unit of the room, never more than ifc.OutputBound).
//
// Once, besides, more than ifc.MaxTreeRowBytes of the row are read,
// rowOver is set. The row is then too long to be read from a tree: the
// measurement reads it with the writer, or withholds it unreadable when
// the writer finds a repeated name. Past its over mark the writer writes
// nothing more; it reads on only the names of the objects still open, to
// find a repeated one, and, once the member it went over in ends, the
// labels. So from rowOver on Condense keeps only that: the names of the
// objects open at that point, with 0 for the values that follow them
// (standIn) and nothing for the elements of its arrays (dropElement), an
// object that repeats a name in place of the first value that holds one,
// the last label of the members after, and the facts Decide reads
// (rowValue). A shorter row is kept as it is read: one that repeats a
// name is read from a tree, where a later value replaces an earlier one,
// so that a row past any room before its last members may have a short
// value after them.
func (c *condenser) note(k int) {
	if !c.inRow || c.inIFC || c.out == nil {
		return
	}
	c.rowWritten += k
	if c.rowWritten > 3*ifc.OutputBound && c.offset()-c.rowStart > ifc.MaxTreeRowBytes {
		c.rowOver = true
	}
}

// shorten returns the part of run, a run of a string's plain bytes, that
// keeps the string within condenseUnits UTF-16 units, adding its units to
// *units. A character is never split.
func (c *condenser) shorten(run []byte, units *int) []byte {
	if u := jsjson.UTF16LenBytes(run); *units+u <= condenseUnits {
		*units += u
		return run
	}
	k := 0
	for k < len(run) && *units < condenseUnits {
		ch := run[k]
		if ch&0xC0 != 0x80 {
			*units++
			if ch >= 0xF0 {
				*units++
			}
		}
		k++
	}
	for k < len(run) && run[k]&0xC0 == 0x80 {
		k++
	}
	return run[:k]
}

func isHex4(b []byte) bool {
	for _, ch := range b[:4] {
		if !('0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F') {
			return false
		}
	}
	return true
}
