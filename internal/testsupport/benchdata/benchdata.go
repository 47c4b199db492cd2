// Package benchdata holds the fixed loom payloads the benchmarks and the
// load program share, so that the in-process benchmarks measure exactly
// what cmd/loadgen's fake loom prints.
package benchdata

import (
	"fmt"
	"strings"
)

// Search10K's hits cycle through these labels: within a work-only ceiling,
// above it, unlabeled and unreadable.
var labels = []string{
	``,
	`,"ifc":{"confidentiality":["https://loom.example/facet/work"]}`,
	`,"ifc":{"confidentiality":["https://loom.example/facet/work"],"integrity":["https://loom.example/origin/mail"]}`,
	`,"ifc":{"confidentiality":[{"anyOf":["https://loom.example/facet/work","https://loom.example/facet/private"]}]}`,
	`,"ifc":{"confidentiality":["https://loom.example/facet/private"]}`,
	`,"ifc":{"confidentiality":["https://loom.example/facet/work","https://loom.example/facet/health"]}`,
	``,
	`,"ifc":{"confidentiality":"https://loom.example/facet/work"}`,
	`,"ifc":{"integrity":[]}`,
	`,"ifc":7`,
}

var words = strings.Fields("atlas launch checklist staging freeze importer review Grüße café plan notes ship retro the a")

// Search10K returns the payload: 10,195 bytes, the same on every call.
func Search10K() []byte { return Search(10 << 10) }

// Search returns a search payload like Search10K's of about size bytes
// (at least one hit), the same for the same size.
func Search(size int) []byte {
	var b strings.Builder
	b.Grow(size + 512)
	b.WriteString(`{"schemaVersion":1,"query":"atlas launch","source_status":{"mail":"ok","notes":"ok"},"warnings":[],"truncated":false,"hits":[`)
	for i := 0; i == 0 || b.Len() < size-220; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"mail:%06d","source":"mail","title":"Re: %s","snippet":"`, i, words[i%len(words)])
		for j := range 3 + i%5 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[(i*7+j*3)%len(words)])
		}
		fmt.Fprintf(&b, `","date":"2026-03-%02d","people":["p:ada"],"score":0.%03d%s}`, 1+i%28, (i*37)%1000, labels[i%len(labels)])
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

// Page returns a page.read payload of about size bytes: one page whose
// documents are strings of about 64 KB each, its label last (within a
// work-only ceiling), the same for the same size.
func Page(size int) []byte {
	var b strings.Builder
	b.Grow(size + 512)
	b.WriteString(`{"path":"Projects/Atlas","kind":"project","title":"Atlas","summary":"The customer importer relaunch.","updated":"2026-03-01","documents":{`)
	for i := 0; i == 0 || b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"Projects/Atlas/doc-%04d.md":"# Doc %d\n\n`, i, i)
		for k := 0; k < 64<<10 && b.Len() < size-200; k++ {
			b.WriteString(words[(i*7+k*3)%len(words)])
			b.WriteByte(' ')
		}
		b.WriteByte('"')
	}
	b.WriteString(`},"ifc":{"confidentiality":["https://loom.example/facet/work"]}}` + "\n")
	return []byte(b.String())
}

// PageOfNumbers returns a page.read payload of about size bytes built to
// be costly to keep: one page whose cells member is an array of small
// arrays of numbers and small objects, its label last (within a
// work-only ceiling). Its value is past the result after a few kilobytes.
func PageOfNumbers(size int) []byte {
	var b strings.Builder
	b.Grow(size + 512)
	b.WriteString(`{"path":"Projects/Atlas","kind":"project","title":"Atlas","cells":[`)
	for i := 0; i == 0 || b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `[%d,%d.5,{"n":%d,"ok":true}]`, i, i%97, i%13)
	}
	b.WriteString(`],"ifc":{"confidentiality":["https://loom.example/facet/work"]}}` + "\n")
	return []byte(b.String())
}
