package loom

// Equivalence of Split's one-pass reader with the plain reading it replaced
// (the jsontext-based objectMembers over the payload, then arrayElements
// over the list, of plaininterpret_test.go), on generated payloads; of
// jsjson.Scanner, which both Split and Interpret read with, with jsontext; and
// a benchmark of Split alone.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// plainSplit is the plain form of Split, its reference: two validating passes
// through plainObjectMembers and plainArrayElements.
func plainSplit(tool Tool, payload []byte) (rows []jsontext.Value, envelope jsontext.Value, err error) {
	payload = bytes.Trim(payload, " \t\r\n")
	switch tool {
	case Search:
		return plainSplitList(payload, "hits", "query", "source_status", "warnings", "truncated")
	case PageDiscover:
		return plainSplitList(payload, "pages", "totalPages", "omittedViews")
	case CalendarList:
		rows, err := plainArrayElements(payload, payloadOptions...)
		if err != nil {
			return nil, nil, ErrMalformedPayload
		}
		return rows, nil, nil
	case PageInspect, PageRead, People, Context, Profile:
		if len(payload) == 0 || payload[0] != '{' || !jsontext.Value(payload).IsValid(payloadOptions...) {
			return nil, nil, ErrMalformedPayload
		}
		return []jsontext.Value{jsontext.Value(payload)}, nil, nil
	}
	return nil, nil, ErrUnknownTool
}

func plainSplitList(payload []byte, list string, envelopeKeys ...string) ([]jsontext.Value, jsontext.Value, error) {
	ms, err := plainObjectMembers(payload, payloadOptions...)
	if err != nil {
		return nil, nil, ErrMalformedPayload
	}
	var rowsValue jsontext.Value
	var order []string
	last := map[string]jsontext.Value{}
	for _, m := range ms {
		switch {
		case m.Name == list:
			rowsValue = m.Value
		case slices.Contains(envelopeKeys, m.Name):
			if _, seen := last[m.Name]; !seen {
				order = append(order, m.Name)
			}
			last[m.Name] = m.Value
		}
	}
	rows, err := plainArrayElements(rowsValue, payloadOptions...)
	if err != nil {
		return nil, nil, ErrMalformedPayload
	}
	env := []byte{'{'}
	for i, name := range order {
		if i > 0 {
			env = append(env, ',')
		}
		env, _ = jsontext.AppendQuote(env, name)
		env = append(env, ':')
		env = append(env, last[name]...)
	}
	return rows, append(env, '}'), nil
}

// genListPayload writes a random payload for tool: mostly well formed,
// with repeated and escaped member names, odd values for the list and
// envelope keys, whitespace, and now and then a syntax error.
func genListPayload(rng *rand.Rand, tool Tool) []byte {
	var b bytes.Buffer
	ws := func() {
		if rng.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n  "}[rng.IntN(4)])
		}
	}
	values := []string{`null`, `1`, `-0.50e3`, `"s"`, `"\u00e9\ud83d\ude00"`, `"\udc00"`, "\"\xff\xfe\"", `true`, `{}`, `[]`, `{"a":[1,{"b":null}],"a":2}`, `[{"ifc":{"confidentiality":["w"]}},{"x":1}]`}
	elem := func() string {
		if rng.IntN(3) == 0 {
			return values[rng.IntN(len(values))]
		}
		return fmt.Sprintf(`{"id":"h%d","score":%d.%d,"ifc":{"confidentiality":["w"]},"t":"a\"b\\c"}`, rng.IntN(100), rng.IntN(10), rng.IntN(100))
	}
	list := func() string {
		if rng.IntN(8) == 0 {
			return values[rng.IntN(len(values))]
		}
		var l strings.Builder
		l.WriteByte('[')
		for i := range rng.IntN(6) {
			if i > 0 {
				l.WriteByte(',')
			}
			if rng.IntN(3) == 0 {
				l.WriteString(" ")
			}
			l.WriteString(elem())
		}
		l.WriteByte(']')
		return l.String()
	}
	if tool == CalendarList {
		ws()
		b.WriteString(list())
		ws()
	} else {
		names := []string{`"hits"`, `"pages"`, `"query"`, `"source_status"`, `"warnings"`, `"truncated"`, `"totalPages"`, `"omittedViews"`, `"hit\u0073"`, `"\u0071uery"`, `"other"`, `"ok"`, `"Hits"`, `"hits "`, "\"h\xffits\""}
		ws()
		b.WriteByte('{')
		for i := range rng.IntN(9) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			name := names[rng.IntN(len(names))]
			b.WriteString(name)
			ws()
			b.WriteByte(':')
			ws()
			if strings.Contains(strings.ToLower(name), "it") || strings.Contains(name, "pages") {
				b.WriteString(list())
			} else {
				b.WriteString(values[rng.IntN(len(values))])
			}
			ws()
		}
		b.WriteByte('}')
		ws()
	}
	p := b.Bytes()
	switch rng.IntN(12) {
	case 0: // cut short
		p = p[:rng.IntN(len(p)+1)]
	case 1: // trailing data
		p = append(p, " {}"...)
	case 2: // a stray byte
		if len(p) > 0 {
			p[rng.IntN(len(p))] = "{}[],:\"x"[rng.IntN(8)]
		}
	case 3: // a comma before a closing bracket, often the last
		end := len(p)
		if rng.IntN(2) == 0 {
			end = rng.IntN(len(p) + 1)
		}
		if i := bytes.LastIndexAny(p[:end], "}]"); i > 0 {
			p = append(p[:i:i], append([]byte{','}, p[i:]...)...)
		}
	}
	return p
}

func TestSplitMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	tools := []Tool{Search, PageDiscover, CalendarList, PageRead, People}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	ok := 0
	for i := range n {
		tool := tools[i%len(tools)]
		p := genListPayload(rng, tool)
		wantRows, wantEnv, wantErr := plainSplit(tool, bytes.Clone(p))
		gotRows, gotEnv, gotErr := Split(tool, p)
		if !errors.Is(gotErr, wantErr) && !(gotErr == nil && wantErr == nil) {
			t.Fatalf("%s %q: err %v, plain %v", tool, p, gotErr, wantErr)
		}
		if !slices.EqualFunc(gotRows, wantRows, func(a, b jsontext.Value) bool { return bytes.Equal(a, b) }) || (gotRows == nil) != (wantRows == nil) {
			t.Fatalf("%s %q: rows %q, plain %q", tool, p, gotRows, wantRows)
		}
		if !bytes.Equal(gotEnv, wantEnv) || (gotEnv == nil) != (wantEnv == nil) {
			t.Fatalf("%s %q: envelope %q, plain %q", tool, p, gotEnv, wantEnv)
		}
		if gotErr == nil {
			ok++
		}
	}
	if ok < n/4 || ok > n*9/10 {
		t.Errorf("%d of %d payloads split: the generator should give both outcomes", ok, n)
	}
}

// searchBenchPayload is a search payload of n hits about 200 bytes each.
func searchBenchPayload(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"schemaVersion":1,"query":"atlas","source_status":{"mail":"ok"},"warnings":[],"truncated":false,"hits":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"mail:%06d","source":"mail","title":"Re: atlas","snippet":"the launch checklist is final, caf\u00e9 \"freeze\" on Thursday","score":0.%03d,"ifc":{"confidentiality":["https://loom.example/facet/work"]}}`, i, i%1000)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func TestSplitMatchesPlainLarge(t *testing.T) {
	p := searchBenchPayload(25000)
	rows, env, err := Split(Search, p)
	prows, penv, perr := plainSplit(Search, p)
	if err != nil || perr != nil || !bytes.Equal(env, penv) || len(rows) != len(prows) {
		t.Fatalf("Split: %d rows %s %v; plain: %d rows %s %v", len(rows), env, err, len(prows), penv, perr)
	}
	for i := range rows {
		if !bytes.Equal(rows[i], prows[i]) {
			t.Fatalf("row %d: %s, plain %s", i, rows[i], prows[i])
		}
	}
}

// BenchmarkSplit compares Split with the plain two-pass reading of the
// same 25k-hit payload.
func BenchmarkSplit(b *testing.B) {
	p := searchBenchPayload(25000)
	for _, c := range []struct {
		name  string
		split func(Tool, []byte) ([]jsontext.Value, jsontext.Value, error)
	}{{"onepass", Split}, {"plain", plainSplit}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.split(Search, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// genJSON writes a random JSON value of at most depth levels, with the
// string, number and literal forms the grammar has to get right.
func genJSON(rng *rand.Rand, b *bytes.Buffer, depth int) {
	if rng.IntN(5) == 0 {
		b.WriteString([]string{" ", "\n", "\t", "\r\n "}[rng.IntN(4)])
	}
	k := rng.IntN(9)
	if depth <= 0 {
		k = rng.IntN(6)
	}
	switch k {
	case 0, 1:
		b.WriteByte('"')
		for range rng.IntN(6) {
			b.WriteString([]string{"a", " ", "é", "😀", "\\n", "\\\"", "\\\\", "\\/", "\\b", "\\u00e9", "\\uD83D\\uDE00", "\\ud800", "\\udc00", "\xff", "\xe2\x82", "\x7f"}[rng.IntN(16)])
		}
		b.WriteByte('"')
	case 2, 3:
		b.WriteString([]string{"0", "-0", "1", "-12", "1.50", "0.0e0", "1E+9", "2e-3", "1e400", "-0.0", "123456789012345678901234567890"}[rng.IntN(11)])
	case 4, 5:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case 6, 7:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString([]string{`"a"`, `"hits"`, `"\u0061"`, `""`}[rng.IntN(4)])
			b.WriteByte(':')
			genJSON(rng, b, depth-1)
		}
		b.WriteByte('}')
	case 8:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			genJSON(rng, b, depth-1)
		}
		b.WriteByte(']')
	}
	if rng.IntN(5) == 0 {
		b.WriteByte(' ')
	}
}

// maxDepth is jsontext's nesting limit, which jsjson.Scanner enforces.
const maxDepth = 10000

// TestScannerMatchesJSONText holds jsjson.Scanner, read as this package reads
// it, to jsontext under payloadOptions.
func TestScannerMatchesJSONText(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 6))
	check := func(v []byte) {
		t.Helper()
		var s jsjson.Scanner
		s.Reset(v)
		raw, err := s.Value(0)
		got := err == nil && s.AtEnd()
		want := jsontext.Value(v).IsValid(payloadOptions...)
		if got != want || jsjson.Valid(v) != want {
			t.Fatalf("%q: scanner valid %v (%v), validPayload %v, jsontext %v", v, got, err, jsjson.Valid(v), want)
		}
		if got && !bytes.Equal(raw, bytes.Trim(v, " \t\r\n")) {
			t.Fatalf("%q: raw %q", v, raw)
		}
	}
	n := 40000
	if testing.Short() {
		n = 4000
	}
	for range n {
		var b bytes.Buffer
		genJSON(rng, &b, 4)
		v := b.Bytes()
		check(v)
		for range rng.IntN(3) { // damage it
			if len(v) == 0 {
				break
			}
			i := rng.IntN(len(v))
			switch rng.IntN(4) {
			case 0:
				v = v[:i]
			case 1:
				v = append(v[:i:i], v[i+1:]...)
			case 2:
				v[i] = `{}[],:"\ 0-.eE+tfnux`[rng.IntN(20)]
			case 3:
				v = append(v, []string{" ", "}", "1", " {}", "\x00", ","}[rng.IntN(6)]...)
			}
		}
		check(v)
	}
	for _, v := range []string{
		"", " ", "x", "nul", "truex", "[1 2]", "[1,]", `{"a" 1}`, `{"a":1,}`, `{,}`, "01", "1.", ".5", "-", "1e", "1e+",
		"\"\x00\"", "\"\\u00zz\"", "\"\\u00e\"", "\"\\ud800\"", "\"\xff\"", "[]]", "{}}", "\x00", "\ufeff{}", `"\`, `"\u`,
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		strings.Repeat(`{"":`, maxDepth) + `1` + strings.Repeat("}", maxDepth),
		strings.Repeat(`{"":`, maxDepth+1) + `1` + strings.Repeat("}", maxDepth+1),
	} {
		check([]byte(v))
	}
	// The nesting limit through Split's own walk of the list.
	for _, d := range []int{maxDepth - 2, maxDepth - 1, maxDepth} {
		p := []byte(`{"hits":[` + strings.Repeat("[", d) + strings.Repeat("]", d) + `]}`)
		_, _, err := Split(Search, p)
		_, _, perr := plainSplit(Search, p)
		if (err == nil) != (perr == nil) {
			t.Errorf("depth %d: Split %v, plain %v", d, err, perr)
		}
		p = []byte(`[` + strings.Repeat("[", d) + strings.Repeat("]", d) + `]`)
		_, _, err = Split(CalendarList, p)
		_, _, perr = plainSplit(CalendarList, p)
		if (err == nil) != (perr == nil) {
			t.Errorf("calendar depth %d: Split %v, plain %v", d, err, perr)
		}
	}
}

// FuzzSplitMatchesPlain holds Split to the plain two-pass reading on
// arbitrary payloads.
func FuzzSplitMatchesPlain(f *testing.F) {
	rng := rand.New(rand.NewPCG(19, 20))
	for i := range 100 {
		f.Add(genListPayload(rng, []Tool{Search, PageDiscover, CalendarList, PageRead}[i%4]), uint8(i%4))
	}
	f.Fuzz(func(t *testing.T, p []byte, which uint8) {
		tool := []Tool{Search, PageDiscover, CalendarList, PageRead}[which%4]
		rows, env, err := Split(tool, p)
		prows, penv, perr := plainSplit(tool, bytes.Clone(p))
		if (err == nil) != (perr == nil) || !bytes.Equal(env, penv) || len(rows) != len(prows) {
			t.Fatalf("%s %q: %d rows %q %v; plain %d rows %q %v", tool, p, len(rows), env, err, len(prows), penv, perr)
		}
		for i := range rows {
			if !bytes.Equal(rows[i], prows[i]) {
				t.Fatalf("%s %q: row %d %q, plain %q", tool, p, i, rows[i], prows[i])
			}
		}
	})
}
