package loomref

// Equivalence of Split's one-pass reader with the plain reading (the
// jsontext-based plainObjectMembers over the payload, then
// plainArrayElements over the list, of plaininterpret_test.go), on
// generated payloads; of
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
	"github.com/loom-gateway/gateway/internal/loom"
)

// plainSplit is the plain form of Split, its reference: two validating passes
// through plainObjectMembers and plainArrayElements.
func plainSplit(tool loom.Tool, payload []byte) (rows []jsontext.Value, envelope jsontext.Value, err error) {
	payload = bytes.Trim(payload, " \t\r\n")
	switch tool {
	case loom.Search:
		return plainSplitList(payload, "hits", "query", "source_status", "warnings", "truncated")
	case loom.PageDiscover:
		return plainSplitList(payload, "pages", "totalPages", "omittedViews")
	case loom.CalendarList:
		rows, err := plainArrayElements(payload, payloadOptions...)
		if err != nil {
			return nil, nil, loom.ErrMalformedPayload
		}
		return rows, nil, nil
	case loom.PageInspect, loom.PageRead, loom.People, loom.Context, loom.Profile:
		if len(payload) == 0 || payload[0] != '{' || !jsontext.Value(payload).IsValid(payloadOptions...) {
			return nil, nil, loom.ErrMalformedPayload
		}
		return []jsontext.Value{jsontext.Value(payload)}, nil, nil
	}
	return nil, nil, loom.ErrUnknownTool
}

func plainSplitList(payload []byte, list string, envelopeKeys ...string) ([]jsontext.Value, jsontext.Value, error) {
	ms, err := plainObjectMembers(payload, payloadOptions...)
	if err != nil {
		return nil, nil, loom.ErrMalformedPayload
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
		return nil, nil, loom.ErrMalformedPayload
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

func TestSplitMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	tools := []loom.Tool{loom.Search, loom.PageDiscover, loom.CalendarList, loom.PageRead, loom.People}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	ok := 0
	for i := range n {
		tool := tools[i%len(tools)]
		p := GenListPayload(rng, tool)
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
	rows, env, err := Split(loom.Search, p)
	prows, penv, perr := plainSplit(loom.Search, p)
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
		split func(loom.Tool, []byte) ([]jsontext.Value, jsontext.Value, error)
	}{{"onepass", Split}, {"plain", plainSplit}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.split(loom.Search, p); err != nil {
					b.Fatal(err)
				}
			}
		})
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
		GenJSON(rng, &b, 4)
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
		_, _, err := Split(loom.Search, p)
		_, _, perr := plainSplit(loom.Search, p)
		if (err == nil) != (perr == nil) {
			t.Errorf("depth %d: Split %v, plain %v", d, err, perr)
		}
		p = []byte(`[` + strings.Repeat("[", d) + strings.Repeat("]", d) + `]`)
		_, _, err = Split(loom.CalendarList, p)
		_, _, perr = plainSplit(loom.CalendarList, p)
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
		f.Add(GenListPayload(rng, []loom.Tool{loom.Search, loom.PageDiscover, loom.CalendarList, loom.PageRead}[i%4]), uint8(i%4))
	}
	f.Fuzz(func(t *testing.T, p []byte, which uint8) {
		tool := []loom.Tool{loom.Search, loom.PageDiscover, loom.CalendarList, loom.PageRead}[which%4]
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
