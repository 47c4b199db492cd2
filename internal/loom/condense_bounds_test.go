package loom_test

// The bounds of what Condense holds, read off the whole payload: the
// reference of Condensed.Refused.

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// passesBounds reports whether stdout, read whole, is one JSON value that
// passes a bound of what Condense holds: a member name or a number longer
// than loom.MaxNameBytes or loom.MaxNumberBytes, more than loom.MaxOpenMembers members
// (or loom.MaxOpenNameBytes of their names) read so far in the objects open at
// some point, or, for Search and PageDiscover, an envelope member whose
// value is longer than loom.MaxEnvelopeBytes.
func passesBounds(tool loom.Tool, stdout []byte) bool {
	payload := bytes.Trim(loomref.DecodeUTF8(stdout), " \t\r\n")
	if len(payload) == 0 || !jsjson.Valid(payload) {
		return false
	}
	if keys := loom.ShapeOf(tool).Envelope; payload[0] == '{' && keys != nil {
		over := false
		jsjson.Walk(payload, '{', func(name []byte, v jsontext.Value) {
			if loom.EnvelopeIndex(string(jsjson.MemberName(name)), keys) >= 0 && len(v) > loom.MaxEnvelopeBytes {
				over = true
			}
		})
		if over {
			return true
		}
	}
	type open struct {
		object            bool
		members, namesLen int
	}
	var stack []open
	members, namesLen := 0, 0
	key := false // the next string is a member name
	for i := 0; i < len(payload); {
		switch ch := payload[i]; {
		case ch == '{' || ch == '[':
			stack = append(stack, open{object: ch == '{'})
			key = ch == '{'
			i++
		case ch == '}' || ch == ']':
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			members -= top.members
			namesLen -= top.namesLen
			i++
		case ch == ',':
			key = stack[len(stack)-1].object
			i++
		case ch == ':':
			key = false
			i++
		case ch == '"':
			j := i + 1
			for payload[j] != '"' {
				if payload[j] == '\\' {
					j++
				}
				j++
			}
			j++
			if key {
				n := j - i
				top := &stack[len(stack)-1]
				top.members++
				top.namesLen += n
				members++
				namesLen += n
				if n > loom.MaxNameBytes || members > loom.MaxOpenMembers || namesLen > loom.MaxOpenNameBytes {
					return true
				}
			}
			i = j
		case ch == '-' || '0' <= ch && ch <= '9':
			j := i
			for j < len(payload) && loom.ScalarByte[payload[j]] {
				j++
			}
			if j-i > loom.MaxNumberBytes {
				return true
			}
			i = j
		default: // whitespace, literals
			i++
		}
	}
	return false
}

// TestCondenseRefusesPastBounds: payloads just past each bound are
// refused, payloads at it are read, whatever the pieces stdout comes in;
// the reference (passesBounds) says the same.
func TestCondenseRefusesPastBounds(t *testing.T) {
	work := `"ifc":{"confidentiality":[` + cAtomWork + `]}`
	name := func(n int) string { return `"` + strings.Repeat("n", n-2) + `"` } // n bytes of JSON text
	number := func(n int) string { return "1." + strings.Repeat("5", n-2) }
	envelope := func(n int) string { return `[` + strings.Repeat(`1,`, (n-3)/2) + `1]` }
	names := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":1`, i)
		}
		return b.String()
	}
	cases := []struct {
		name    string
		tool    loom.Tool
		stdout  string
		refused bool
	}{
		{"a name at the bound", loom.PageRead, `{` + name(loom.MaxNameBytes) + `:1,` + work + `}`, false},
		{"a name past the bound", loom.PageRead, `{` + name(loom.MaxNameBytes+1) + `:1,` + work + `}`, true},
		{"an escaped name past the bound", loom.PageRead, `{"` + strings.Repeat(`\u0041`, loom.MaxNameBytes/6+1) + `":1}`, true},
		{"a name of invalid UTF-8", loom.Search, `{"hits":[{` + `"` + strings.Repeat("\xff", loom.MaxNameBytes/3) + `":1}]}`, true},
		{"a name past the bound in a label", loom.Search, `{"hits":[{"ifc":{"confidentiality":[{` + name(loom.MaxNameBytes+1) + `:1}]}}]}`, true},
		{"a name past the bound in a dropped row", loom.Search, `{"hits":[` + strings.Repeat(`1,`, 1100) + `{` + name(loom.MaxNameBytes+1) + `:1}]}`, true},
		{"a name past the bound, the payload invalid after it", loom.PageRead, `{` + name(loom.MaxNameBytes+1) + `:1,}`, false},
		{"a number at the bound", loom.PageRead, `{"x":` + number(loom.MaxNumberBytes) + `,` + work + `}`, false},
		{"a number past the bound", loom.PageRead, `{"x":` + number(loom.MaxNumberBytes+1) + `,` + work + `}`, true},
		{"a number past the bound, invalid late", loom.PageRead, `{"x":` + number(loom.MaxNumberBytes+1) + `e}`, false},
		{"a schemaVersion past the bound", loom.Search, `{"hits":[],"schemaVersion":1.` + strings.Repeat("0", loom.MaxNumberBytes) + `}`, true},
		{"a number past the bound, the payload not an object", loom.Search, number(3 * loom.MaxNumberBytes), true},
		{"members at the bound", loom.PageRead, `{` + names(loom.MaxOpenMembers-2) + `,` + work + `}`, false},
		{"members past the bound", loom.PageRead, `{` + names(loom.MaxOpenMembers) + `,` + work + `}`, true},
		{"members past the bound, nested", loom.CalendarList, `[{"a":{` + names(loom.MaxOpenMembers/2) + `},"b":{` + names(loom.MaxOpenMembers/2) + `}}]`, false},
		{"members past the bound, open together", loom.CalendarList, `[{"a":{` + names(loom.MaxOpenMembers/2) + `,"b":{` + names(loom.MaxOpenMembers/2) + `}}}]`, true},
		{"names past the bound", loom.PageRead, `{"a":{` + strings.Repeat(`"`+strings.Repeat("n", 1000)+`":1,`, loom.MaxOpenNameBytes/1002+1) + `"z":1}}`, true},
		{"an envelope at the bound", loom.Search, `{"hits":[],"warnings":` + envelope(loom.MaxEnvelopeBytes) + `}`, false},
		{"an envelope past the bound", loom.Search, `{"hits":[],"warnings":` + envelope(loom.MaxEnvelopeBytes+2) + `}`, true},
		{"an envelope past the bound, replaced", loom.PageDiscover, `{"pages":[],"totalPages":` + envelope(loom.MaxEnvelopeBytes+2) + `,"totalPages":1}`, true},
		{"an envelope of repeated keys", loom.Search, `{"hits":[],` + strings.Repeat(`"query":"q",`, 60000) + `"truncated":false}`, false},
		{"an envelope of too many repeated keys", loom.Search, `{"hits":[],` + strings.Repeat(`"query":"q",`, loom.MaxOpenMembers) + `"truncated":false}`, true},
		{"a long non-envelope member", loom.Search, `{"hits":[],"other":` + envelope(2*loom.MaxEnvelopeBytes) + `}`, false},
		{"a long envelope member of another tool", loom.CalendarList, `{"warnings":` + envelope(2*loom.MaxEnvelopeBytes) + `}`, false},
	}
	for _, tt := range cases {
		if got := passesBounds(tt.tool, []byte(tt.stdout)); got != tt.refused {
			t.Errorf("%s: reference refuses %v, want %v", tt.name, got, tt.refused)
		}
		readers := []io.Reader{&chunked{data: []byte(tt.stdout), cuts: []byte{7, 200}}}
		if !loom.RaceEnabled {
			readers = append(readers, strings.NewReader(tt.stdout))
		}
		for _, r := range readers {
			if c := loom.Condense(tt.tool, r); c.Refused != tt.refused || c.Refused && c.Payload != nil {
				t.Errorf("%s: Condense refused %v (payload %d bytes), want %v", tt.name, c.Refused, len(c.Payload), tt.refused)
			}
		}
		if !loom.RaceEnabled || len(tt.stdout) < 64<<10 {
			checkCondense(t, tt.tool, []byte(tt.stdout), []byte{255})
		}
	}
}

// shapeReader is a benchdata.Shape's payload, made as it is read.
type shapeReader struct {
	parts [][]byte
	reps  int // of parts[1] still to give
	off   int
}

func newShape(sh benchdata.Shape, size int) *shapeReader {
	return &shapeReader{parts: [][]byte{[]byte(sh.Head), []byte(sh.Body), []byte(sh.Tail)}, reps: sh.Reps(size)}
}

func (s *shapeReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(s.parts) > 0 {
		k := copy(p[n:], s.parts[0][s.off:])
		n += k
		s.off += k
		if s.off < len(s.parts[0]) {
			break
		}
		s.off = 0
		if len(s.parts) == 2 && s.reps > 1 { // parts[0] is the body
			s.reps--
			continue
		}
		s.parts = s.parts[1:]
	}
	if len(s.parts) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// TestCondenseMemoryPerShape: Condense, read knowing the ceiling and
// query label as the gateway reads (CondenseFor), and Interpret,
// SplitContext and Measure after it, hold a bounded heap on 48 MB
// payloads of each shape (heap in use, sampled, above what it was
// before): at most 16 MiB for one call, 128 MiB for 8 at once.
func TestCondenseMemoryPerShape(t *testing.T) {
	size := 48 << 20
	if loom.RaceEnabled || testing.Short() {
		size = 2 << 20
	}
	const most, mostTogether = 16 << 20, 128 << 20
	for _, sh := range benchdata.Shapes {
		t.Run(sh.Name, func(t *testing.T) {
			before, peak := peakHeap(func() { shapeCall(t, sh, size) })
			if extra := int64(peak) - int64(before); extra > most {
				t.Errorf("%s of %d MiB: heap peaked %.1f MiB above where it was, want at most %d MiB", sh.Name, size>>20, float64(extra)/(1<<20), most>>20)
			} else {
				t.Logf("%s of %d MiB: %.1f MiB above", sh.Name, size>>20, float64(extra)/(1<<20))
			}
			if sh.Refused {
				return // never held (8 at once: BENCHMARKS.md section 3)
			}
			before, peak = peakHeap(func() {
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() { shapeCall(t, sh, size) })
				}
				wg.Wait()
			})
			if extra := int64(peak) - int64(before); extra > mostTogether {
				t.Errorf("%s of %d MiB, 8 at once: heap peaked %.1f MiB above where it was, want at most %d MiB", sh.Name, size>>20, float64(extra)/(1<<20), mostTogether>>20)
			} else {
				t.Logf("%s of %d MiB, 8 at once: %.1f MiB above", sh.Name, size>>20, float64(extra)/(1<<20))
			}
		})
	}
}

// shapeCall reads a payload of sh of about size bytes as a call does
// under the work ceiling, and checks it is answered as sh is.
func shapeCall(t *testing.T, sh benchdata.Shape, size int) {
	tool := loom.Tool(sh.Tool)
	m := &loom.Measuring{Ceiling: condenseCeilings[0], Unlabeled: condenseUnlabeled}
	c := loom.CondenseFor(tool, newShape(sh, size), m)
	defer c.Release()
	if c.Refused != sh.Refused {
		t.Errorf("%s: refused %v, want %v", sh.Name, c.Refused, sh.Refused)
	}
	if c.Refused {
		return
	}
	if err := loom.Decide(tool, false, c.Payload != nil, 0, c.Facts); err != nil || !c.Shaped {
		t.Errorf("%s: %v, shaped %v", sh.Name, err, c.Shaped)
		return
	}
	res := ifc.Measure(ifc.Input{
		OutputID: "run_x:" + string(tool) + ":1", Command: tool.Command(), Notice: ifc.Notice,
		Rows: c.Rows, Labels: c.Labels, LabelSpans: c.LabelSpans, More: c.More, RowBytes: c.RowBytes, Envelope: c.Envelope,
		Ceiling: condenseCeilings[0], Unlabeled: condenseUnlabeled,
	})
	_ = res.AppendJSON(nil, condenseHandles[:res.Admitted])
}

// peakHeap runs f after a full collection while sampling the heap in
// use (live and not yet freed objects), returning it before and its
// sampled peak.
func peakHeap(f func()) (before, peak uint64) {
	runtime.GC()
	return testkit.PeakHeap(50*time.Microsecond, f)
}

// distinctLabels reads like a 48 MB search payload of rows that are each
// a label of about 60 KB within the ceiling, no two the same: the
// costliest payload for what CondenseFor keeps and Measure reads, as the
// label of every row the measurement admits is kept (once a text) and
// joined into the result's.
type distinctLabels struct {
	size, n int
	row     []byte
	head    bool
}

func (d *distinctLabels) Read(p []byte) (int, error) {
	if !d.head {
		d.head = true
		return copy(p, `{"hits":[`), nil
	}
	if len(d.row) == 0 {
		if d.n < 0 {
			return 0, io.EOF
		}
		if d.n*(60<<10) >= d.size {
			d.n = -1
			return copy(p, `{"i":0}]}`), nil
		}
		// A clause the work facet admits ({"anyOf":[work, ...]}) whose
		// other atom is 60 KB, its own in each row: the result's label
		// (the join) holds every one admitted.
		d.row = fmt.Appendf(d.row[:0], `{"id":%d,"ifc":{"confidentiality":[{"anyOf":[%s,{"type":"t","n":"%d%s"}]}]}},`, d.n, cAtomWork, d.n, strings.Repeat("x", 60<<10))
		d.n++
	}
	k := copy(p, d.row)
	d.row = d.row[k:]
	return k, nil
}

// TestCondenseMemoryDistinctLabels: the worst case README.md and
// docs/operators.md state, held: 48 MB of rows that are each a label of
// 60 KB the measurement admits, no two the same text. Every one of the
// rows whose entries fit in the result (about 380) is read for its label,
// which is kept (once a text) until Measure has read it and joined it
// into the result's label, which holds them all: at most 128 MiB above
// where the heap was for one call, 1 GiB for 8 at once (measured: about
// 100-110 MiB and 770-790 MiB).
func TestCondenseMemoryDistinctLabels(t *testing.T) {
	size := 48 << 20
	if loom.RaceEnabled || testing.Short() {
		size = 4 << 20
	}
	const most, mostTogether = 128 << 20, 1 << 30
	m := &loom.Measuring{Ceiling: condenseCeilings[0], Unlabeled: condenseUnlabeled}
	call := func() {
		c := loom.CondenseFor(loom.Search, &distinctLabels{size: size}, m)
		defer c.Release()
		res := ifc.Measure(ifc.Input{
			OutputID: "run_x:loom_search:1", Command: "search", Notice: ifc.Notice,
			Rows: c.Rows, Labels: c.Labels, LabelSpans: c.LabelSpans, More: c.More, RowBytes: c.RowBytes, Envelope: c.Envelope,
			Ceiling: condenseCeilings[0], Unlabeled: condenseUnlabeled,
		})
		if res.Admitted < 100 && size == 48<<20 {
			t.Errorf("admitted %d rows, want the result full of them", res.Admitted)
		}
		_ = res.AppendJSON(nil, condenseHandles[:res.Admitted])
	}
	before, peak := peakHeap(call)
	if extra := int64(peak) - int64(before); extra > most {
		t.Errorf("%d MiB: heap peaked %.1f MiB above, want at most %d MiB", size>>20, float64(extra)/(1<<20), most>>20)
	} else {
		t.Logf("%d MiB: %.1f MiB above", size>>20, float64(extra)/(1<<20))
	}
	before, peak = peakHeap(func() {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(call)
		}
		wg.Wait()
	})
	if extra := int64(peak) - int64(before); extra > mostTogether {
		t.Errorf("%d MiB, 8 at once: heap peaked %.1f MiB above, want at most %d MiB", size>>20, float64(extra)/(1<<20), mostTogether>>20)
	} else {
		t.Logf("%d MiB, 8 at once: %.1f MiB above", size>>20, float64(extra)/(1<<20))
	}
}
