package loom_test

// Condense against the reference reading (package loomref): stdout read
// whole, then Interpret, SplitContext and ifc.Measure. Both paths must give
// the same answer, down
// to the bytes of the result object, on generated payloads and on
// arbitrary bytes, with stdout delivered in arbitrary pieces.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
)

const (
	cAtomWork   = `"https://loom.example/facet/work"`
	cAtomHealth = `"https://loom.example/facet/health"`
)

var condenseCeilings = []ifc.Ceiling{
	ifc.CeilingOf(ifc.Confidentiality{ifc.Clause(cAtomWork)}),
	ifc.NoCeiling,
}

var condenseUnlabeled = ifc.LabelForUnlabeledRow(nil, ifc.Confidentiality{ifc.Clause(cAtomWork)})

// condenseHandles stands in for the tokens a store would mint.
var condenseHandles = func() []string {
	hs := make([]string, 1100)
	for i := range hs {
		hs[i] = fmt.Sprintf("cfh:v:%05d", i)
	}
	return hs
}()

// answerOf is what a caller can tell of a reading: its error, or the
// result object with handles, what it observed and its counts.
func answerOf(tool loom.Tool, ceiling ifc.Ceiling, rows [][]byte, more int, rowBytes []int, envelope []byte, err error) string {
	return answerApart(tool, ceiling, rows, nil, nil, more, rowBytes, envelope, err)
}

// answerApart is answerOf with labels kept apart from the rows
// (ifc.Input.Labels) and where the rows' own are (ifc.Input.LabelSpans).
func answerApart(tool loom.Tool, ceiling ifc.Ceiling, rows, labels [][]byte, spans []ifc.LabelSpan, more int, rowBytes []int, envelope []byte, err error) string {
	if err != nil {
		var hr *loom.HostRefusedError
		var ee *loom.ExitError
		switch {
		case errors.As(err, &hr):
			return fmt.Sprintf("host refused %q %v", hr.HostCode, hr.HasHostCode)
		case errors.As(err, &ee):
			return fmt.Sprintf("exit %d", ee.Code)
		}
		return "error " + err.Error()
	}
	in := ifc.Input{
		OutputID: "run_x:" + string(tool) + ":1", Command: tool.Command(), Notice: ifc.Notice,
		More: more, RowBytes: rowBytes, Envelope: envelope,
		Ceiling: ceiling, Unlabeled: condenseUnlabeled, LabelSpans: spans,
	}
	for _, r := range rows {
		in.Rows = append(in.Rows, r)
	}
	for _, l := range labels {
		in.Labels = append(in.Labels, l)
	}
	res := ifc.Measure(in)
	obs, _ := res.Observed.MarshalJSON()
	return fmt.Sprintf("%s\nobserved %s", res.AppendJSON(nil, condenseHandles[:res.Admitted]), obs)
}

// reading is what a reading of stdout gives Measure for one exit code and
// person lookup: the error the call answers, or the rows, the count of
// those past them, their lengths and the envelope.
type reading struct {
	rows     [][]byte
	labels   [][]byte
	spans    []ifc.LabelSpan
	more     int
	rowBytes []int
	envelope []byte
	err      error
}

// answer is the answer of r under ceiling.
func (r reading) answer(tool loom.Tool, ceiling ifc.Ceiling) string {
	return answerApart(tool, ceiling, r.rows, r.labels, r.spans, r.more, r.rowBytes, r.envelope, r.err)
}

// equal reports whether r and o give Measure the same input, so the same
// answer under every ceiling.
func (r reading) equal(o reading) bool {
	return r.err == o.err && r.more == o.more && slices.Equal(r.rowBytes, o.rowBytes) &&
		bytes.Equal(r.envelope, o.envelope) && (r.envelope == nil) == (o.envelope == nil) &&
		slices.EqualFunc(r.rows, o.rows, bytes.Equal) && slices.EqualFunc(r.labels, o.labels, bytes.Equal) &&
		slices.Equal(r.spans, o.spans)
}

// referenceReading reads stdout whole, with the reference reading:
// loomref.Interpret, then loomref.SplitContext.
//
// One reading is the gateway's own: stdout that is one JSON value but
// passes a bound of what Condense holds (passesBounds, given as bound) is
// refused as a malformed payload before anything else of it is read.
func referenceReading(tool loom.Tool, lookup bool, stdout []byte, exit int, bound bool) reading {
	if bound {
		return reading{err: loom.ErrMalformedPayload}
	}
	payload, err := loomref.Interpret(tool, lookup, loomref.Output{Stdout: stdout, ExitCode: exit})
	if err != nil {
		return reading{err: err}
	}
	rows, more, env, err := loomref.SplitContext(context.Background(), tool, payload, ifc.MaxMeasuredRows)
	var rs [][]byte
	for _, r := range rows {
		rs = append(rs, r)
	}
	return reading{rows: rs, more: more, envelope: env, err: err}
}

// referenceAnswer is the reference reading's answer under ceiling.
func referenceAnswer(tool loom.Tool, lookup bool, stdout []byte, exit int, ceiling ifc.Ceiling) string {
	return referenceReading(tool, lookup, stdout, exit, passesBounds(tool, stdout)).answer(tool, ceiling)
}

// condensedReading reads what Condense kept of stdout as the gateway
// does: Decide over its facts, its shape, then its rows and envelope.
func condensedReading(tool loom.Tool, lookup bool, c loom.Condensed, exit int) reading {
	if c.Refused {
		return reading{err: loom.ErrMalformedPayload}
	}
	if err := loom.Decide(tool, lookup, c.Payload != nil, exit, c.Facts); err != nil {
		return reading{err: err}
	}
	if !c.Shaped {
		return reading{err: loom.ErrMalformedPayload}
	}
	var rs, ls [][]byte
	for _, r := range c.Rows {
		rs = append(rs, r)
	}
	for _, l := range c.Labels {
		ls = append(ls, l)
	}
	return reading{rows: rs, labels: ls, spans: slices.Clone(c.LabelSpans), more: c.More, rowBytes: c.RowBytes, envelope: c.Envelope}
}

// condensedAnswer reads stdout through Condense, from r, as the gateway
// does, and answers under ceiling.
func condensedAnswer(tool loom.Tool, lookup bool, r io.Reader, exit int, ceiling ifc.Ceiling) string {
	return condensedReading(tool, lookup, loom.Condense(tool, r), exit).answer(tool, ceiling)
}

// pieces delivers data in pieces of the sizes cuts gives in turn (1 and
// up), then io.EOF, sometimes with the last piece.
type chunked struct {
	data   []byte
	cuts   []byte
	k      int
	eofNow bool
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.cuts) > 0 {
		n = 1 + int(c.cuts[c.k%len(c.cuts)])*int(c.cuts[c.k%len(c.cuts)])
		c.k++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	if len(c.data) == 0 && c.eofNow {
		return n, io.EOF
	}
	return n, nil
}

var condenseTools = []loom.Tool{loom.Search, loom.PageDiscover, loom.CalendarList, loom.PageRead, loom.Profile, loom.People}

// checkCondense holds the two readings equal on stdout for tool, every
// exit code and person lookup that decide differently, every ceiling, and
// a few ways of cutting stdout into pieces. Neither reading depends on the
// ceiling, nor Condense on the exit code or lookup: each is read once, and
// each answer compared under every ceiling (a reading that gives Measure
// the same input as the one before it has its answers).
func checkCondense(t *testing.T, tool loom.Tool, stdout []byte, cuts []byte) {
	t.Helper()
	exits := []int{0}
	if len(stdout) < 4096 {
		exits = []int{0, 1, 3}
	}
	var kept [3]loom.Condensed
	for i, r := range []io.Reader{
		bytes.NewReader(stdout),
		&chunked{data: stdout, cuts: cuts},
		&chunked{data: stdout, cuts: []byte{0}, eofNow: true},
	} {
		kept[i] = loom.Condense(tool, r)
	}
	// The same, read knowing the ceiling and query label, judging the
	// rows from the first (loom.CondenseFor).
	var judged [2][2]loom.Condensed
	for ci, ceiling := range condenseCeilings {
		m := loom.MeasuringFrom(loom.Measuring{Ceiling: ceiling, Unlabeled: condenseUnlabeled}, 0)
		judged[ci][0] = loom.CondenseFor(tool, bytes.NewReader(stdout), m)
		judged[ci][1] = loom.CondenseFor(tool, &chunked{data: stdout, cuts: cuts}, m)
	}
	for i := range kept {
		checkLabelSpans(t, kept[i], stdout)
	}
	for ci := range judged {
		for i := range judged[ci] {
			checkLabelSpans(t, judged[ci][i], stdout)
		}
	}
	bound := passesBounds(tool, stdout)
	for _, exit := range exits {
		lookups := []bool{false}
		if exit != 0 {
			lookups = append(lookups, true)
		}
		for _, lookup := range lookups {
			ref := referenceReading(tool, lookup, bytes.Clone(stdout), exit, bound)
			var got [len(kept)]reading
			for i, c := range kept {
				got[i] = condensedReading(tool, lookup, c, exit)
			}
			for ci, ceiling := range condenseCeilings {
				want := ref.answer(tool, ceiling)
				answer := ""
				for i := range got {
					if i == 0 || !got[i].equal(got[i-1]) {
						answer = got[i].answer(tool, ceiling)
					}
					if answer != want {
						t.Fatalf("%s exit %d lookup %v ceiling %v reader %d, stdout %.2000q:\ncondensed %.3000s\nreference %.3000s", tool, exit, lookup, ceiling, i, stdout, answer, want)
					}
				}
				// Read knowing the ceiling, judging every row.
				for i, c := range judged[ci] {
					if answer := condensedReading(tool, lookup, c, exit).answer(tool, ceiling); answer != want {
						t.Fatalf("%s exit %d lookup %v ceiling %v judged, reader %d, stdout %.2000q:\ncondensed %.3000s\nreference %.3000s", tool, exit, lookup, ceiling, i, stdout, answer, want)
					}
				}
			}
		}
	}
}

// checkLabelSpans holds where Condense tells the rows' labels are
// (Condensed.LabelSpans) to the writer's reading of each row: one JSON
// object, whose last own ifc member's value is there.
func checkLabelSpans(t *testing.T, c loom.Condensed, stdout []byte) {
	t.Helper()
	if len(c.LabelSpans) > len(c.Rows) {
		t.Fatalf("stdout %.2000q: %d label spans for %d rows", stdout, len(c.LabelSpans), len(c.Rows))
	}
	for i, at := range c.LabelSpans {
		if !at.Read {
			continue
		}
		row := c.Rows[i]
		var w jsjson.Writer
		_, sc, err := w.Row(nil, row, true, -1)
		if err != nil || at.Lo < 0 || at.Lo > at.Hi || int(at.Hi) > len(row) || sc.HasIFC != (at.Lo < at.Hi) ||
			!bytes.Equal(sc.IFC, row[at.Lo:at.Hi]) || i < len(c.Labels) && c.Labels[i] != nil {
			t.Fatalf("stdout %.2000q: row %d %q told %+v; the writer reads %q %v (%v)", stdout, i, row, at, sc.IFC, sc.HasIFC, err)
		}
	}
}

// longString returns a JSON string of about n characters whose
// characters near ifc.StringBound (and Condense's own bound) are escapes,
// pairs and multibyte characters in turn.
func longString(rng *rand.Rand, n int) string {
	parts := []string{"a", "é", "🙂", `\n`, `\u00e9`, `\ud83d\ude00`, `\"`, "\u2028", `\ud800`, "\xff", "x y", `\/`}
	var b strings.Builder
	b.WriteByte('"')
	for u := 0; u < n; {
		if rng.IntN(3) == 0 || (u > ifc.StringBound-12 && u < loom.CondenseUnits+12) {
			p := parts[rng.IntN(len(parts))]
			b.WriteString(p)
			u += 1 + strings.Count(p, `\u`)/2
			continue
		}
		k := 1 + rng.IntN(200)
		b.WriteString(strings.Repeat("w", k))
		u += k
	}
	b.WriteByte('"')
	return b.String()
}

// genCondenseRow writes one row: members with short and long strings,
// nested values, sometimes a repeated name, and a label of one of several
// kinds (none, fitting, over the ceiling, unreadable, with whitespace).
func genCondenseRow(rng *rand.Rand, b *strings.Builder) {
	labels := []string{
		``,
		`"ifc":{"confidentiality":[` + cAtomWork + `]}`,
		`"ifc" : { "confidentiality" : [ ` + cAtomWork + ` ] , "integrity":["https://loom.example/origin/mail"] }`,
		`"ifc":{"confidentiality":[` + cAtomWork + `,` + cAtomHealth + `]}`,
		`"ifc":{"confidentiality":[{"anyOf":[` + cAtomWork + `,` + cAtomHealth + `]}]}`,
		`"ifc":{"confidentiality":"x"}`,
		`"ifc":7`,
		`"\u0069fc":{"confidentiality":[]}`,
		`"ifc":{"confidentiality":[` + longString(rng, 30) + `]}`,
	}
	if rng.IntN(30) == 0 {
		b.WriteString([]string{`1`, `"s"`, `null`, `[]`, longString(rng, 5000)}[rng.IntN(5)])
		return
	}
	b.WriteByte('{')
	var members []string
	for range rng.IntN(6) {
		name := []string{`"id"`, `"title"`, `"snippet"`, `"n"`, `"a\u0062"`, `"deep"`}[rng.IntN(6)]
		var v string
		switch rng.IntN(7) {
		case 0:
			v = longString(rng, 3990+rng.IntN(40))
		case 1:
			v = longString(rng, 4000+rng.IntN(9000))
		case 2:
			v = `{"x":[1,2.50,{"y":` + longString(rng, 4100) + `}],"z":-0e0}`
		case 3:
			v = fmt.Sprintf("%d.%de%d", rng.IntN(100), rng.IntN(100), rng.IntN(5))
		case 4:
			v = `[true,false,null,"t"]`
		default:
			v = longString(rng, rng.IntN(40))
		}
		members = append(members, name+":"+v)
	}
	if l := labels[rng.IntN(len(labels))]; l != "" {
		members = append(members, l)
		if rng.IntN(15) == 0 {
			members = append(members, labels[rng.IntN(len(labels))])
		}
	}
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	b.WriteString(strings.Join(members, ","))
	b.WriteByte('}')
}

// genCondensePayload writes a payload for tool: mostly its own shape,
// with the envelope members and the members Interpret reads here and
// there, long strings in places, now and then more rows than Measure
// reads, and sometimes damaged.
func genCondensePayload(rng *rand.Rand, tool loom.Tool) []byte {
	var b strings.Builder
	if rng.IntN(20) == 0 {
		b.WriteString("\xef\xbb\xbf")
	}
	if rng.IntN(4) == 0 {
		b.WriteString(" \n")
	}
	nrows := rng.IntN(8)
	if rng.IntN(25) == 0 {
		nrows = ifc.MaxMeasuredRows - 3 + rng.IntN(10)
	}
	list := func() {
		b.WriteByte('[')
		for i := range nrows {
			if i > 0 {
				b.WriteByte(',')
			}
			if nrows > 100 {
				fmt.Fprintf(&b, `{"id":%d}`, i)
				continue
			}
			genCondenseRow(rng, &b)
		}
		b.WriteByte(']')
	}
	switch tool {
	case loom.CalendarList:
		if rng.IntN(10) == 0 {
			b.WriteString(`{"ok":false,"code":"E_X"}`)
		} else {
			list()
		}
	case loom.Search, loom.PageDiscover:
		listName, keys := "hits", []string{`"query"`, `"source_status"`, `"warnings"`, `"truncated"`}
		if tool == loom.PageDiscover {
			listName, keys = "pages", []string{`"totalPages"`, `"omittedViews"`}
		}
		keys = append(keys, `"ok"`, `"code"`, `"schemaVersion"`, `"other"`, `"`+listName+`"`, `"`+listName+`"`)
		values := []string{`null`, `1`, `"q"`, `{"mail":"ok","notes":` + longString(rng, 4100) + `}`, `["w1"]`, `false`, `true`, `"E_BUSY"`, `1.0`, `2`, longString(rng, 5000), `[1,[2]]`}
		var members []string
		for range rng.IntN(5) {
			k := keys[rng.IntN(len(keys))]
			if k == `"`+listName+`"` && rng.IntN(4) == 0 {
				members = append(members, k+":"+values[rng.IntN(len(values))])
				continue
			}
			members = append(members, k+":"+values[rng.IntN(len(values))])
		}
		b.WriteByte('{')
		b.WriteString(strings.Join(members, ","))
		if len(members) > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s":`, listName)
		list()
		if rng.IntN(3) == 0 {
			b.WriteString(`,"query" : "again"`)
		}
		b.WriteByte('}')
	default:
		genCondenseRow(rng, &b)
	}
	if rng.IntN(4) == 0 {
		b.WriteString("\n")
	}
	p := []byte(b.String())
	switch rng.IntN(14) {
	case 0:
		p = p[:rng.IntN(len(p)+1)]
	case 1:
		p = append(p, " {}"...)
	case 2:
		if len(p) > 0 {
			p[rng.IntN(len(p))] = `{}[],:"\x`[rng.IntN(9)]
		}
	}
	return p
}

func TestCondenseMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	n := 1200
	if testing.Short() || loom.RaceEnabled {
		n = 150
	}
	for i := range n {
		tool := condenseTools[i%len(condenseTools)]
		cuts := []byte{byte(rng.IntN(256)), byte(rng.IntN(8)), byte(rng.IntN(64))}
		checkCondense(t, tool, genCondensePayload(rng, tool), cuts)
	}
}

// TestCondenseMatchesReferenceOther holds the two readings equal on the
// inputs the other equivalence tests generate: Interpret's and Split's.
func TestCondenseMatchesReferenceOther(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	n := 1500
	if testing.Short() || loom.RaceEnabled {
		n = 200
	}
	for i := range n {
		tool := condenseTools[i%len(condenseTools)]
		checkCondense(t, tool, loomref.GenStdout(rng), []byte{1, 2, 3})
		checkCondense(t, tool, loomref.GenListPayload(rng, tool), []byte{0, 5})
	}
}

// TestCondenseKeepsLittle: what Condense keeps of a large payload is
// bounded by the rows Measure reads and the string bound, not by stdout.
func TestCondenseKeepsLittle(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"query":"q","hits":[`)
	for i := range 20000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"snippet":"%s","ifc":{"confidentiality":[%s]}}`, i, strings.Repeat("x", 100), cAtomWork)
	}
	b.WriteString(`]}`)
	page := `{"title":"t","content":"` + strings.Repeat("long page ", 1<<20) + `"}`
	for _, tt := range []struct {
		tool    loom.Tool
		stdout  string
		most    int
		dropped int
	}{
		{loom.Search, b.String(), ifc.MaxMeasuredRows * 200, 20000 - ifc.MaxMeasuredRows},
		{loom.PageRead, page, 5000, 0},
		{loom.Search, `{"hits":[` + strings.Repeat(" ", 8<<20) + `],"warnings":[]}`, 64, 0},
	} {
		c := loom.Condense(tt.tool, strings.NewReader(tt.stdout))
		if c.Payload == nil || len(c.Payload) > tt.most || c.More != tt.dropped {
			t.Errorf("%s of %d bytes: kept %d bytes (at most %d), dropped %d (want %d)", tt.tool, len(tt.stdout), len(c.Payload), tt.most, c.More, tt.dropped)
		}
		if !loom.RaceEnabled {
			checkCondense(t, tt.tool, []byte(tt.stdout), []byte{200})
		}
	}
}

// bigRow writes a row of n members whose values are strings of size
// bytes (past the string bound), then tail, the rest of its members.
func bigRow(n, size int, head, tail string) string {
	var b strings.Builder
	b.WriteString("{" + head)
	word := strings.Repeat("doc ", size/4)
	for i := range n {
		if i > 0 || head != "" {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"d%d":"%s\n%d"`, i, word, i)
	}
	b.WriteString(tail + "}")
	return b.String()
}

// TestCondenseLongRows: of a row whose kept strings already take its
// value past the result and that is longer than ifc.MaxTreeRowBytes,
// Condense keeps the rest of the strings as "", and the answer is the
// same: labelled within or above the ceiling, unreadable, unlabelled,
// repeating a name before or after that point, with an ifc member nested
// deeper, alone or among other rows. A shorter row that repeats a name is
// read from a tree, where a later value can replace the one that took it
// past the result: its strings are all kept.
func TestCondenseLongRows(t *testing.T) {
	work := `"ifc":{"confidentiality":[` + cAtomWork + `]}`
	health := `"ifc" : {"confidentiality":[` + cAtomHealth + `]}`
	cases := []struct {
		name   string
		tool   loom.Tool
		stdout func() string // made only for the cases that run
		most   int           // bytes kept at most (all the strings cut: about 4 KB each)
	}{
		{"page labelled last", loom.PageRead, func() string { return bigRow(300, 64<<10, "", ","+work) }, 400 << 10},
		{"page labelled first", loom.PageRead, func() string { return bigRow(300, 64<<10, work, "") }, 400 << 10},
		{"page above the ceiling", loom.PageRead, func() string { return bigRow(300, 64<<10, "", ","+health) }, 400 << 10},
		{"page unreadable label", loom.PageRead, func() string { return bigRow(300, 64<<10, "", `,"ifc":7`) }, 400 << 10},
		{"page unlabelled", loom.PageRead, func() string {
			return bigRow(300, 64<<10, "", `,"x":{"ifc":"nested","s":"`+strings.Repeat("y", 5000)+`"}`)
		}, 400 << 10},
		{"page repeats a name early", loom.PageRead, func() string { return bigRow(300, 64<<10, `"d0":1`, ","+work) }, 400 << 10},
		{"page repeats a name late", loom.PageRead, func() string { return bigRow(300, 64<<10, "", `,"d1":2,`+work) }, 400 << 10},
		{"page repeats ifc", loom.PageRead, func() string { return bigRow(300, 64<<10, work, ","+health) }, 400 << 10},
		{"page just over the tree bound", loom.PageRead, func() string { return bigRow(17, 64<<10, "", ","+work) }, 100 << 10},
		{"search of long rows", loom.Search, func() string {
			return `{"query":"q","hits":[` + bigRow(40, 40<<10, `"ifc":7`, "") + "," + bigRow(200, 8<<10, "", ","+health) + "," + bigRow(200, 8<<10, "", ","+work) + `,{"id":"small",` + work + `}]}`
		}, 1300 << 10},
		{"row of many small values", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,{"b":[true,null,"s"]},`, 120000) + `2],"c":{"d":[` + strings.Repeat(`0.5,`, 1000) + `1]},"e":"` + strings.Repeat("z", 9000) + `",` + work + `}`
		}, 1100 << 10},
		{"small values, label first", loom.PageRead, func() string { return `{` + health + `,"a":[` + strings.Repeat(`[1,2],`, 300000) + `3],"x":1}` }, 1100 << 10}, // small values are kept whole
		{"small values, repeated name past the point", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`7,`, 600000) + `8],"b":[{"c":1,"c":2}],"a":1,` + work + `}`
		}, 1300 << 10},
		{"small values, ifc nested past the point", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`7,`, 600000) + `8],"b":{"ifc":{"confidentiality":[]}},` + work + `,"z":[{"ifc":7}]}`
		}, 1300 << 10},
		{"repeated name nested past the point", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 200000) + `{"c":1,"c":2}],"p":"` + strings.Repeat("p", 1<<20) + `",` + work + `}`
		}, 1300 << 10},
		{"repeated name between the room and the point", loom.PageRead, func() string { return bigRow(15, 4100, "", `,"d0":1,"p":"`+strings.Repeat("p", 1<<20)+`",`+work) }, 1300 << 10},
		{"under the tree bound, a large value replaced", loom.PageRead, func() string {
			return `{"a":1,"a":2,"big":[` + strings.Repeat(`1,`, 160000) + `2],"c":"xyz","big":1,` + work + `}`
		}, 400 << 10},
		{"under the tree bound, a nested large value replaced", loom.Search, func() string {
			return `{"hits":[{"a":{"x":[` + strings.Repeat(`1,`, 160000) + `2],"s":"xyz","x":1},` + work + `}]}`
		}, 400 << 10},
		{"label of millions of clauses", loom.PageRead, func() string {
			return `{"t":"x","ifc":{"confidentiality":[` + strings.Repeat(cAtomWork+`,`, 60000) + cAtomWork + `]}}`
		}, 1300 << 10},
		{"long label, then another", loom.PageRead, func() string {
			return `{"t":"x","ifc":{"confidentiality":[` + strings.Repeat(cAtomWork+`,`, 60000) + cAtomWork + `]},"u":1,` + work + `}`
		}, 1300 << 10},
		{"long label in a row that repeats a name", loom.PageRead, func() string {
			return `{"t":"x","t":"y","ifc":{"confidentiality":["` + strings.Repeat("w", 2<<20) + `"]}}`
		}, 1300 << 10},
		{"search of many small values", loom.Search, func() string {
			return `{"hits":[{"a":[` + strings.Repeat(`1,`, 700000) + `2],` + work + `},{"id":2,` + work + `}]}`
		}, 1100 << 10},
		{"megabytes of small values and objects", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,{"b":[true,null,"s"],"c":{"d":0.5}},`, 300000) + `2],` + work + `}`
		}, 1100 << 10},
		{"objects past the point, one repeating a name deep", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`{"x":1,"y":{"z":2,"w":3}},`, 100000) + `{"x":1,"y":{"z":2,"z":3}},{"x":1}],` + work + `}`
		}, 1100 << 10},
		{"objects past the point, none repeating", loom.Search, func() string {
			return `{"hits":[{"a":[` + strings.Repeat(`{"x":1,"y":{"z":2,"w":3}},`, 100000) + `{"x":1}],` + work + `}]}`
		}, 1100 << 10},
		{"an object open at the point repeats a name", loom.PageRead, func() string {
			return `{"o":{` + manyNames(60000, `"`+strings.Repeat("v", 24)+`"`) + `,"k5":2},` + work + `}`
		}, 4 << 20},
		{"an object of many names past the point repeats one", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 600000) + `{` + manyNames(60000, "1") + `,"k7":2}],` + work + `}`
		}, 1100 << 10},
		{"a name repeated escaped", loom.PageRead, func() string { return `{"a":[` + strings.Repeat(`1,`, 600000) + `{"c":1,"\u0063":2}],` + work + `}` }, 1100 << 10},
		{"lone surrogates, not repeated", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 600000) + `{"\ud800":1,"\udc00":2,"\ufffd":3}],` + work + `}`
		}, 1100 << 10},
		{"lone surrogates, repeated", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 600000) + `{"\ud800":1,"\uD800":2}],` + work + `}`
		}, 1100 << 10},
		{"a name repeated at the top past the over member", loom.PageRead, func() string { return `{"a":[` + strings.Repeat(`1,`, 600000) + `2],"b":1,"b":2,` + work + `}` }, 1100 << 10},
		{"a name repeated in a later member", loom.Search, func() string {
			return `{"hits":[{"a":[` + strings.Repeat(`1,`, 600000) + `2],"b":{"c":1,"c":2},` + work + `}]}`
		}, 1100 << 10},
		{"labels past the point, the last above", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 600000) + `2],` + work + `,"x":[1,2],"ifc":7,` + health + `}`
		}, 1100 << 10},
		{"labels past the point, the last within", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 600000) + `2],` + health + `,"ifc":7,"x":[1,2],` + work + `,"y":3}`
		}, 1100 << 10},
		{"labels and facts past the point", loom.PageRead, func() string {
			return `{"a":[` + strings.Repeat(`1,`, 600000) + `2],` + health + `,"ok":true,` + work + `}`
		}, 1100 << 10},
		{"calendar of long rows", loom.CalendarList, func() string { return `[` + bigRow(300, 5<<10, "", ","+work) + `,{"id":2}]` }, 900 << 10},
	}
	for i, tt := range cases {
		if loom.RaceEnabled && i%6 != 0 {
			continue // a sixth of the cases: the race detector slows Condense tenfold, and Condense has no goroutines for it to check
		}
		stdout := tt.stdout()
		c := loom.Condense(tt.tool, strings.NewReader(stdout))
		if c.Payload == nil || len(c.Payload) > tt.most {
			t.Errorf("%s: kept %d bytes of %d, want at most %d", tt.name, len(c.Payload), len(stdout), tt.most)
		}
		if !loom.RaceEnabled {
			checkCondense(t, tt.tool, []byte(stdout), []byte{255})
		}
	}
}

// manyNames writes n members "k0":v, "k1":v, ...
func manyNames(n int, v string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%s`, i, v)
	}
	return b.String()
}

// TestCondenseFactsPastThePoint: of a tool whose payload object is the
// row, the members Interpret reads are kept past the row's over point.
// PageRead stands for the tools Interpret reads alike (Context,
// PageInspect, People without a lookup), which run too without the race
// detector; under it the row goes past the point by one long string
// rather than a megabyte of small values.
func TestCondenseFactsPastThePoint(t *testing.T) {
	strs := strings.Repeat(`"s":"`+strings.Repeat("q", 4500)+`",`, 40)
	filler := `[` + strings.Repeat("1,", 600000) + `2]`
	tools := []loom.Tool{loom.PageRead, loom.Profile, loom.Context, loom.PageInspect, loom.People}
	if loom.RaceEnabled {
		filler, tools = `"`+strings.Repeat("p", 1200000)+`"`, tools[:2]
	}
	for _, tail := range []string{
		`"ok":false,"code":"not_found"`,
		`"ok":false,"code":"x` + strings.Repeat("y", 5000) + `"`,
		`"ok":true,"x":[1,2],"ok":false,"code":{"a":1}`,
		`"schemaVersion":"1"`,
		`"hasProfile":false,"ok":false`,
		`"hasProfile":[false]`,
	} {
		stdout := `{` + strs + `"p":` + filler + `,` + tail + `}`
		for _, tool := range tools {
			for _, exit := range []int{0, 1} {
				ref := referenceAnswer(tool, false, []byte(stdout), exit, condenseCeilings[0])
				got := condensedAnswer(tool, false, strings.NewReader(stdout), exit, condenseCeilings[0])
				if got != ref {
					t.Errorf("%s exit %d, tail %.40s:\n condensed %.300s\n reference %.300s", tool, exit, tail, got, ref)
				}
			}
		}
	}
}

// TestCondenseLongRowsGenerated: long rows of random make (long strings,
// runs of small values, nested objects, labels of every kind anywhere,
// repeated names before and after the over point, ifc members nested
// deeper, long labels), alone or in a list, read the same both ways.
func TestCondenseLongRowsGenerated(t *testing.T) {
	if loom.RaceEnabled || testing.Short() {
		t.Skip("megabytes of rows: run without -race and -short")
	}
	rng := rand.New(rand.NewPCG(16, 4))
	labels := []string{
		`"ifc":{"confidentiality":[` + cAtomWork + `]}`,
		`"ifc" : {"confidentiality":[` + cAtomHealth + `]}`,
		`"ifc":7`,
		`"ifc":{"confidentiality":[` + strings.Repeat(cAtomWork+",", 40000) + cAtomWork + `]}`,
		`"ifc":{"confidentiality":["` + strings.Repeat("é", 600000) + `"]}`,
	}
	// member writes the k-th member of a row; small rows stay under
	// ifc.MaxTreeRowBytes, where a row that repeats a name is read from a
	// tree, yet take a value past the result.
	member := func(b *strings.Builder, k int, small bool) {
		switch rng.IntN(8) {
		case 0:
			n := 1000 + rng.IntN(30000)
			if small {
				n = 1 + rng.IntN(2000)
			}
			fmt.Fprintf(b, `"s%d":"%s"`, k, strings.Repeat("ab\n", n))
		case 1:
			num, n := "12,", rng.IntN(200000)
			if small {
				num, n = "1,", 100000+rng.IntN(200000)
			}
			fmt.Fprintf(b, `"n%d":[%s0]`, k, strings.Repeat(num, n))
		case 2:
			fmt.Fprintf(b, `"o%d":{"ifc":%d,"x":[{"y":"%s"}],"z":null}`, k, k, strings.Repeat("q", rng.IntN(9000)))
		case 3:
			if small {
				b.WriteString(labels[rng.IntN(3)])
			} else {
				b.WriteString(labels[rng.IntN(len(labels))])
			}
		case 4:
			// A repeated name, now and then: in a row read from a tree,
			// a later value replaces an earlier one, large or not.
			fmt.Fprintf(b, `"%c%d":1`, "sno"[rng.IntN(3)], rng.IntN(k+1))
		case 5:
			// The same, nested: an object whose large member is replaced
			// after a string.
			fmt.Fprintf(b, `"p%d":{"x":[%s0],"s":"%s","x":%d}`, k, strings.Repeat("5,", 100000+rng.IntN(200000)), strings.Repeat("w", rng.IntN(5000)), k)
		case 6:
			// Many small objects, one of them now and then repeating a
			// name; a payload object's facts.
			dup := []string{"", `{"q":1,"r":[{"q":2,"q":3}]},`, `{"q":1,"\u0071":2},`}[rng.IntN(3)]
			fmt.Fprintf(b, `"m%d":[%s%s0],"ok":%v`, k, strings.Repeat(`{"x":1,"y":[2,{"z":"3"}]},`, rng.IntN(60000)), dup, rng.IntN(2) == 0)
		default:
			fmt.Fprintf(b, `"t%d":true`, k)
		}
	}
	for i := range 40 {
		var b strings.Builder
		tool := []loom.Tool{loom.PageRead, loom.Search, loom.CalendarList}[i%3]
		small := i%2 == 1
		switch tool {
		case loom.Search:
			b.WriteString(`{"query":"q","hits":[`)
		case loom.CalendarList:
			b.WriteString(`[`)
		}
		for r := range 1 + rng.IntN(3) {
			if r > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			n := 4 + rng.IntN(40)
			if small {
				n = 3 + rng.IntN(5)
			}
			for k := range n {
				if k > 0 {
					b.WriteByte(',')
				}
				member(&b, k, small)
			}
			b.WriteByte('}')
			if tool == loom.PageRead {
				break
			}
		}
		switch tool {
		case loom.Search:
			b.WriteString(`]}`)
		case loom.CalendarList:
			b.WriteString(`]`)
		}
		checkCondense(t, tool, []byte(b.String()), []byte{byte(rng.IntN(256))})
	}
}

// FuzzCondenseMatchesReference holds the two readings equal on arbitrary
// stdout, cut into arbitrary pieces.
//
// Its seeds are small (maxFuzzSeed bytes at most): the engine minimizes
// every input that finds new coverage before it fuzzes on, trying about
// n²/2 cuts of an input of n bytes, so that seeds of kilobytes, and the
// inputs mutated from them, held the fuzzing still for the whole
// -fuzzminimizetime. Long strings, long rows and many rows are the
// generated tests' (TestCondenseMatchesReference, TestCondenseLongRows).
func FuzzCondenseMatchesReference(f *testing.F) {
	const maxFuzzSeed = 256
	rng := rand.New(rand.NewPCG(16, 3))
	for i := 0; i < 60; {
		tool := condenseTools[i%len(condenseTools)]
		p := loomref.GenListPayload(rng, tool)
		if i%3 == 0 {
			p = genCondensePayload(rng, tool)
		}
		if len(p) > maxFuzzSeed {
			continue
		}
		f.Add(p, uint8(i), []byte{byte(i), 3, 17})
		i++
	}
	f.Fuzz(func(t *testing.T, stdout []byte, which uint8, cuts []byte) {
		checkCondense(t, condenseTools[int(which)%len(condenseTools)], stdout, cuts)
	})
}

// BenchmarkCondense: Condense alone on a search payload in memory, read in
// 64 KB pieces as a full pipe delivers them, and in 4 KB pieces.
//
//	go test ./internal/loom -run '^$' -bench Condense -benchmem
func BenchmarkCondense(b *testing.B) {
	for _, size := range []int{10 << 10, 1 << 20, 5 << 20} {
		rng := rand.New(rand.NewPCG(1, 2))
		var sb strings.Builder
		sb.WriteString(`{"schemaVersion":1,"query":"q","hits":[`)
		for i := 0; sb.Len() < size; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			genCondenseRowSmall(rng, &sb, i)
		}
		sb.WriteString(`]}`)
		payload := []byte(sb.String())
		b.Run(fmt.Sprintf("search-%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				c := loom.Condense(loom.Search, &chunked{data: payload, cuts: []byte{255}})
				if c.Payload == nil {
					b.Fatal("not condensed")
				}
				c.Release()
			}
		})
		// As the gateway reads it: knowing the ceiling and query label.
		b.Run(fmt.Sprintf("search-%dKB-judged", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			m := &loom.Measuring{Ceiling: condenseCeilings[0], Unlabeled: condenseUnlabeled}
			for b.Loop() {
				c := loom.CondenseFor(loom.Search, &chunked{data: payload, cuts: []byte{255}}, m)
				if c.Payload == nil {
					b.Fatal("not condensed")
				}
				c.Release()
			}
		})
		// A pipe read while loom is still writing delivers a page or a
		// few at a time.
		b.Run(fmt.Sprintf("search-%dKB-pieces-4KB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				c := loom.Condense(loom.Search, &chunked{data: payload, cuts: []byte{64}})
				if c.Payload == nil {
					b.Fatal("not condensed")
				}
				c.Release()
			}
		})
	}
}

// genCondenseRowSmall writes a hit of about 200 bytes like loom's.
func genCondenseRowSmall(rng *rand.Rand, b *strings.Builder, i int) {
	fmt.Fprintf(b, `{"id":"mail:%06d","source":"mail","title":"Re: plan","snippet":"atlas launch checklist café %d","date":"2026-03-01","people":["p:ada"],"score":0.%03d,"ifc":{"confidentiality":[%s]}}`, i, rng.IntN(1000), rng.IntN(1000), cAtomWork)
}

// genJudgedPayload writes a list payload for tool of n rows of every
// kind the measurement tells apart: admitted (in the work facet, or
// unlabeled), outside the ceiling, unreadable, a label past the label
// bound, a label repeated, names repeated, whitespace, long strings, rows
// past any room, in a random order.
func genJudgedPayload(rng *rand.Rand, tool loom.Tool, n int) []byte {
	work := `{"confidentiality":[` + cAtomWork + `]}`
	health := `{"confidentiality":[` + cAtomHealth + `]}`
	pad := `{"confidentiality":[` + cAtomWork + `],"pad":"` + strings.Repeat("p", 3000) + `"}`
	long := `{"confidentiality":[` + cAtomWork + `],"pad":"` + strings.Repeat("p", ifc.MaxLabelBytes) + `"}`
	var b strings.Builder
	head, tail := `{"query":"q","hits":[`, `],"warnings":[]}`
	switch tool {
	case loom.PageDiscover:
		head, tail = `{"pages":[`, `],"nextCursor":"c"}`
	case loom.CalendarList:
		head, tail = `[`, `]`
	}
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
			if rng.IntN(10) == 0 {
				b.WriteString("\n ")
			}
		}
		v := fmt.Sprintf(`"id":%d,"s":"%s"`, i, strings.Repeat("x", rng.IntN(300)))
		switch rng.IntN(12) {
		case 0:
			v += `,"long":"` + strings.Repeat("é", 4100+rng.IntN(10)) + `"`
		case 1:
			v += `,"big":"` + strings.Repeat("y", 20000+rng.IntN(30000)) + `"`
		case 2:
			v += `,"id":"again","s":1`
		case 3:
			v += `,"o":{"a":1,"a":2}`
		case 4:
			v += `,"n":[` + strings.Repeat(`"abcdefgh",`, 3000) + `1]`
		}
		var label string
		switch rng.IntN(9) {
		case 0:
			label = ""
		case 1:
			label = `"ifc":` + health
		case 2:
			label = `"ifc":7`
		case 3:
			label = `"ifc":` + long
		case 4:
			label = `"ifc":` + pad
		case 5:
			label = `"ifc":` + health + `,"ifc" : ` + work
		case 6:
			label = `"ifc": { "confidentiality" : [ ` + cAtomWork + ` ] }`
		default:
			label = `"ifc":` + work
		}
		members := []string{v}
		if label != "" {
			members = append(members, label)
		}
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		b.WriteString("{" + strings.Join(members, ",") + "}")
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// TestCondenseJudged: read knowing the ceiling and query label, judging
// its rows from the first, Condense gives the answer of the reference
// reading on payloads of every kind of row, and keeps less: withheld
// rows as stand-ins, labels apart, nothing past the result.
func TestCondenseJudged(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 3))
	runs := 60
	if testing.Short() || loom.RaceEnabled {
		runs = 10
	}
	sawApart, sawPast, sawStandIn := false, false, false
	for i := range runs {
		tool := []loom.Tool{loom.Search, loom.PageDiscover, loom.CalendarList}[i%3]
		stdout := genJudgedPayload(rng, tool, 1+rng.IntN(300))
		checkCondense(t, tool, stdout, []byte{3, 40})
		m := loom.MeasuringFrom(loom.Measuring{Ceiling: condenseCeilings[0], Unlabeled: condenseUnlabeled}, 0)
		c := loom.CondenseFor(tool, bytes.NewReader(stdout), m)
		for _, l := range c.Labels {
			sawApart = sawApart || l != nil
		}
		for _, r := range c.Rows {
			sawStandIn = sawStandIn || string(r) == `{"ifc":7}` || strings.Contains(string(r), ifc.ReadFailedMarker)
		}
		sawPast = sawPast || c.More > 0 && len(c.Rows) < ifc.MaxMeasuredRows
	}
	if !sawApart || !sawPast || !sawStandIn {
		t.Errorf("labels apart %v, rows past the result dropped %v, stand-ins %v: want each", sawApart, sawPast, sawStandIn)
	}
	// Past pruneFrom, judging starts with the rows kept so far.
	for _, tool := range []loom.Tool{loom.Search, loom.CalendarList} {
		stdout := genJudgedPayload(rng, tool, 800)
		for _, ceiling := range condenseCeilings {
			m := &loom.Measuring{Ceiling: ceiling, Unlabeled: condenseUnlabeled}
			got := condensedReading(tool, false, loom.CondenseFor(tool, bytes.NewReader(stdout), m), 0).answer(tool, ceiling)
			if want := referenceAnswer(tool, false, stdout, 0, ceiling); got != want {
				t.Fatalf("%s of %d bytes, ceiling %v:\ncondensed %.3000s\nreference %.3000s", tool, len(stdout), ceiling, got, want)
			}
		}
	}
}
