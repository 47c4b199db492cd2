package ifc

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// searchPayload returns a loom search-like payload of n hits with mixed
// labels: unlabeled, labeled within the ceiling, labeled above it, and a
// few unreadable ones.
func searchPayload(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 99))
	var b strings.Builder
	b.WriteString(`{"schemaVersion":1,"query":"quarterly planning","source_status":{"mail":"ok","notes":"ok"},"warnings":[],"truncated":false,"hits":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"hit-%06d","source":"mail","score":%.4f,"title":"Re: planning item %d \u2014 notes","snippet":"%s","ts":"2026-03-%02dT10:00:00Z","meta":{"from":"a%d@example.com","tags":["x","y"],"size":%d}`,
			i, rng.Float64(), i, strings.Repeat("lorem ipsum dolor sit amet ", 8+rng.IntN(20)), 1+i%28, i%97, rng.IntN(1<<20))
		switch i % 10 {
		case 0, 1, 2, 3:
		case 4, 5, 6, 7:
			b.WriteString(`,"ifc":{"confidentiality":["https://loom.example/facet/work"],"integrity":["https://loom.example/origin/mail"]}`)
		case 8:
			b.WriteString(`,"ifc":{"confidentiality":[{"anyOf":["https://loom.example/facet/work","https://loom.example/facet/private"]}]}`)
		case 9:
			if i%20 == 9 {
				b.WriteString(`,"ifc":{"confidentiality":["https://loom.example/facet/private"]}`)
			} else {
				b.WriteString(`,"ifc":{"integrity":[]}`)
			}
		}
		b.WriteString("}")
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// searchInput splits searchPayload as loomref.Split would.
func searchInput(n int, seed uint64) Input {
	payload := searchPayload(n, seed)
	var p struct {
		Query string            `json:"query"`
		Hits  []json.RawMessage `json:"hits"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		panic(err)
	}
	in := Input{
		OutputID:  "run:loom_search:1",
		Command:   "search",
		Notice:    Notice,
		Envelope:  jsontext.Value(`{"query":"quarterly planning","source_status":{"mail":"ok","notes":"ok"},"warnings":[],"truncated":false}`),
		Ceiling:   CeilingOf(conf(`"https://loom.example/facet/work"`)),
		Unlabeled: Label{Confidentiality: conf(`"https://loom.example/facet/work"`)},
	}
	for _, h := range p.Hits {
		in.Rows = append(in.Rows, jsontext.Value(h))
	}
	return in
}

// BenchmarkMeasure measures a 25k-hit payload; compare with
// BenchmarkDecodeAny, which only decodes the same bytes into any.
func BenchmarkMeasure(b *testing.B) {
	in := searchInput(25000, 1)
	size := 0
	for _, r := range in.Rows {
		size += len(r)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	handles := handlesFor(len(in.Rows))
	for b.Loop() {
		r := Measure(in)
		_ = r.AppendJSON(nil, handles)
	}
}

func BenchmarkDecodeAny(b *testing.B) {
	payload := searchPayload(25000, 1)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(payload, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMeasureAllWithheld is the worst case for reading labels: every
// row is refused, so the walk reads about 800 rows before the bound.
func BenchmarkMeasureAllWithheld(b *testing.B) {
	in := searchInput(25000, 1)
	in.Ceiling = CeilingOf(nil)
	in.Unlabeled = Label{Confidentiality: conf(`"S"`)}
	b.ReportAllocs()
	for b.Loop() {
		Measure(in)
	}
}

// BenchmarkAppendJS runs the writer's token pass over the whole payload,
// the per-byte cost Measure pays for each row it reads; compare its MB/s
// with BenchmarkDecodeAny.
func BenchmarkAppendJS(b *testing.B) {
	payload := searchPayload(25000, 1)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	dst := make([]byte, 0, len(payload))
	for b.Loop() {
		dst = jsjson.AppendJS(dst[:0], payload)
	}
}

// BenchmarkMeasureBigRow measures one page-like row far over the bound with
// its label last: the row is written until it cannot fit, then only
// scanned for ifc.
func BenchmarkMeasureBigRow(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"title":"page"`)
	for i := range 20000 {
		fmt.Fprintf(&sb, `,"p%d":"%s"`, i, strings.Repeat("paragraph text ", 12))
	}
	sb.WriteString(`,"ifc":{"confidentiality":["https://loom.example/facet/work"]}}`)
	row := jsontext.Value(sb.String())
	in := Input{Rows: []jsontext.Value{row}, Ceiling: CeilingOf(conf(`"https://loom.example/facet/work"`))}
	b.SetBytes(int64(len(row)))
	b.ReportAllocs()
	for b.Loop() {
		if r := Measure(in); r.Omitted != 1 {
			b.Fatalf("omitted %d", r.Omitted)
		}
	}
}
