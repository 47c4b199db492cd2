package loom_test

// Measurement-throughput benchmarks: the measurement of a payload read
// whole (loomref.Split, ifc.Measure, Result.AppendJSON) against merely
// decoding the same bytes into any with encoding/json. Run them side by
// side:
//
//	go test ./internal/loom -run '^$' -bench 'MeasurePath' -benchmem -count 3
//
// BenchmarkMeasurePath/<payload>/pair interleaves the two in one loop and
// reports path-MB/s, any-MB/s and their ratio x-any; the
// path and decode-any sub-benchmarks give each alone with -benchmem, and
// path reports allocs/admitted. The interpret+path sub-benchmark adds
// loomref.Interpret, the rest of the reading of stdout whole.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
)

const (
	atomWork    = `"https://loom.example/facet/work"`
	atomPrivate = `"https://loom.example/facet/private"`
	atomHealth  = `"https://loom.example/facet/health"`
)

// benchLabels are the ifc members the generated rows carry, cycled: ""
// is an unlabeled row. With the work-only ceiling of benchCeiling they are
// labeled fitting, labeled over the ceiling, unlabeled and unreadable.
var benchLabels = []string{
	``, // unlabeled
	`,"ifc":{"confidentiality":[` + atomWork + `]}`,
	`,"ifc":{"confidentiality":[` + atomWork + `],"integrity":["https://loom.example/origin/mail"]}`,
	`,"ifc":{"confidentiality":[{"anyOf":[` + atomWork + `,` + atomPrivate + `]}]}`,
	`,"ifc":{"confidentiality":[` + atomPrivate + `]}`,                 // over the ceiling
	`,"ifc":{"confidentiality":[` + atomWork + `,` + atomHealth + `]}`, // over the ceiling
	``,
	`,"ifc":{"confidentiality":"` + strings.Trim(atomWork, `"`) + `"}`, // unreadable: not a list
	`,"ifc":{"integrity":[]}`, // labeled, public
	`,"ifc":7`,                // unreadable
}

var benchWords = []string{"atlas", "launch", "checklist", "staging", "freeze", "importer", "review", "Grüße", "café", "naïve", "plan", "notes", "ok", "ship", "the", "a", "retro", "\\n", "\\u00e9t\\u00e9", "\\\"quoted\\\"", "🙂"}

// SearchPayload returns a loom search payload of about size bytes:
// hits of about 200 bytes each (so 25k hits near 5 MB) with the labels of
// benchLabels in turn, and, when long is set, one hit in 1000 with a snippet
// over ifc.StringBound that measurement cuts.
func SearchPayload(size int, seed uint64, long bool) []byte {
	rng := rand.New(rand.NewPCG(seed, 6))
	var b strings.Builder
	b.Grow(size + 1024)
	b.WriteString(`{"schemaVersion":1,"query":"atlas launch","source_status":{"mail":"ok","notes":"ok","calendar":"stale"},"warnings":["calendar index is 2h old"],"truncated":false,"hits":[`)
	for i := 0; b.Len() < size-2; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"mail:%06d","source":"mail","title":"Re: %s","snippet":"`, i, benchWords[rng.IntN(len(benchWords))])
		n := 2 + rng.IntN(5)
		if long && i%1000 == 999 {
			n = 900
		}
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(benchWords[rng.IntN(len(benchWords))])
		}
		fmt.Fprintf(&b, `","date":"2026-03-%02d","people":["p:ada"],"score":%.3f%s}`, 1+i%28, rng.Float64(), benchLabels[i%len(benchLabels)])
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// PagePayload returns a loom page.read payload of about size bytes: one
// page object whose documents are about 64 KB strings, its label last.
func PagePayload(size int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.Grow(size + 1024)
	b.WriteString(`{"path":"Projects/Atlas","kind":"project","title":"Atlas","summary":"The customer importer relaunch.","updated":"2026-03-01","context":{"owner":"person:ada-example","status":"launch week","related":["Entities/Acme Corp"]},"documents":{`)
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"Projects/Atlas/doc-%04d.md":"# Doc %d\n\n`, i, i)
		for k := 0; k < 64<<10 && b.Len() < size-200; {
			w := benchWords[rng.IntN(len(benchWords))]
			b.WriteString(w)
			b.WriteByte(' ')
			k += len(w) + 1
		}
		b.WriteByte('"')
	}
	b.WriteString(`},"source":"# Atlas\n\nOwner: Ada Example.\n","ifc":{"confidentiality":[` + atomWork + `]}}`)
	return []byte(b.String())
}

var (
	benchCeiling   = ifc.CeilingOf(ifc.Confidentiality{ifc.Clause(atomWork)})
	benchUnlabeled = ifc.LabelForUnlabeledRow(nil, ifc.Confidentiality{ifc.Clause(atomWork)})
)

// benchHandles stands in for the tokens the store would mint.
func benchHandles(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("cfh:v:%05d", i)
	}
	return hs
}

var handles = benchHandles(4096)

// MeasurePath is the measurement of a payload read whole (one
// loomref.Interpret accepted), minus the store: split, measure, write the
// agent-visible result.
func MeasurePath(tool loom.Tool, payload, dst []byte) (ifc.Result, []byte, error) {
	rows, env, err := loomref.Split(tool, payload)
	if err != nil {
		return ifc.Result{}, dst, err
	}
	res := ifc.Measure(ifc.Input{
		OutputID:  "run_0123456789abcdef:" + string(tool) + ":1",
		Command:   tool.Command(),
		Notice:    ifc.Notice,
		Rows:      rows,
		Envelope:  env,
		Ceiling:   benchCeiling,
		Unlabeled: benchUnlabeled,
	})
	return res, res.AppendJSON(dst, handles[:res.Admitted]), nil
}

// StreamPath is what the core does with a condensed Output (RunTool's),
// minus the store: Decide over what Condense kept, its shape, Measure of
// its rows, then the agent-visible result.
func StreamPath(tool loom.Tool, out loom.Output) ([]byte, error) {
	kept := out.Condensed
	if kept.Refused {
		return nil, loom.ErrMalformedPayload
	}
	if err := loom.Decide(tool, false, kept.Payload != nil, out.ExitCode, kept.Facts); err != nil {
		return nil, err
	}
	if !kept.Shaped {
		return nil, loom.ErrMalformedPayload
	}
	res := ifc.Measure(ifc.Input{
		OutputID:  "run_0123456789abcdef:" + string(tool) + ":1",
		Command:   tool.Command(),
		Notice:    ifc.Notice,
		Rows:      kept.Rows,
		Labels:    kept.Labels,
		More:      kept.More,
		RowBytes:  kept.RowBytes,
		Envelope:  kept.Envelope,
		Ceiling:   benchCeiling,
		Unlabeled: benchUnlabeled,
		// Where Condense found the labels, as the core gives them.
		LabelSpans: kept.LabelSpans,
	})
	return res.AppendJSON(nil, handles[:res.Admitted]), nil
}

type benchCase struct {
	name    string
	tool    loom.Tool
	payload func() []byte
}

var benchCases = []benchCase{
	{"search-10KB", loom.Search, func() []byte { return SearchPayload(10<<10, 1, false) }},
	{"search-1MB", loom.Search, func() []byte { return SearchPayload(1<<20, 1, true) }},
	{"search-5MB", loom.Search, func() []byte { return SearchPayload(5<<20, 1, true) }},
	{"page-50MB", loom.PageRead, func() []byte { return PagePayload(50<<20, 1) }},
}

func BenchmarkMeasurePath(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			payload := c.payload()
			b.Run("pair", func(b *testing.B) { benchPair(b, c.tool, payload) })
			b.Run("path", func(b *testing.B) { benchPath(b, c.tool, payload, false) })
			b.Run("interpret+path", func(b *testing.B) { benchPath(b, c.tool, payload, true) })
			b.Run("decode-any", func(b *testing.B) { benchDecodeAny(b, payload) })
		})
	}
}

// benchPair times the measurement path and decode-into-any alternately in
// one loop, so that both see the same machine load, and reports their
// throughputs and ratio.
func benchPair(b *testing.B, tool loom.Tool, payload []byte) {
	dst := make([]byte, 0, 64<<10)
	var path, dec time.Duration
	for b.Loop() {
		t0 := time.Now()
		_, out, err := MeasurePath(tool, payload, dst[:0])
		t1 := time.Now()
		var v any
		derr := json.Unmarshal(payload, &v)
		t2 := time.Now()
		if err != nil || derr != nil {
			b.Fatal(err, derr)
		}
		dst = out
		path += t1.Sub(t0)
		dec += t2.Sub(t1)
	}
	mb := float64(len(payload)) * float64(b.N) / 1e6
	b.ReportMetric(mb/path.Seconds(), "path-MB/s")
	b.ReportMetric(mb/dec.Seconds(), "any-MB/s")
	b.ReportMetric(dec.Seconds()/path.Seconds(), "x-any")
}

func benchPath(b *testing.B, tool loom.Tool, payload []byte, interpret bool) {
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	dst := make([]byte, 0, 64<<10)
	admitted := 0
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		p := payload
		if interpret {
			var err error
			if p, err = loomref.Interpret(tool, false, loomref.Output{Stdout: payload}); err != nil {
				b.Fatal(err)
			}
		}
		res, out, err := MeasurePath(tool, p, dst[:0])
		if err != nil {
			b.Fatal(err)
		}
		dst = out
		admitted = res.Admitted
	}
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(admitted), "admitted/op")
	if admitted > 0 {
		b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N)/float64(admitted), "allocs/admitted")
	}
}

func benchDecodeAny(b *testing.B, payload []byte) {
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(payload, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchPayloads checks that the generated payloads have the sizes the
// benchmarks name and exercise every outcome.
func TestBenchPayloads(t *testing.T) {
	for _, c := range benchCases {
		var p []byte
		switch {
		case c.tool == loom.PageRead: // the same shape, smaller
			p = PagePayload(2<<20, 1)
		case loom.RaceEnabled && c.name == "search-5MB": // the same shape as 1MB
			continue
		default:
			p = c.payload()
		}
		if !json.Valid(p) {
			t.Fatalf("%s: generated payload is not JSON", c.name)
		}
		res, out, err := MeasurePath(c.tool, p, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !json.Valid(out) {
			t.Fatalf("%s: result is not JSON", c.name)
		}
		rows, _, _ := loomref.Split(c.tool, p)
		t.Logf("%s: %d bytes, %d rows: admitted %d withheld %d omitted %d truncated %v, result %d bytes",
			c.name, len(p), len(rows), res.Admitted, res.Withheld, res.Omitted, res.Truncated, len(out))
		if c.tool == loom.Search && (res.Admitted == 0 || res.Withheld == 0) {
			t.Errorf("%s: want admitted and withheld entries", c.name)
		}
	}
}
