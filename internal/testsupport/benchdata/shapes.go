package benchdata

import (
	"bytes"
	"fmt"
	"strings"
)

// Shape is a payload built to be costly to read in one way: Head, then
// Body repeated, then Tail. Refused tells whether the gateway answers it
// malformed_payload (a piece of it past a bound of what the reading holds)
// rather than a result.
type Shape struct {
	Name             string
	Tool             string // loom_search or loom_page_read
	Head, Body, Tail string
	Refused          bool
}

// Shapes are the payload shapes the memory tests and `loadgen --memory
// --shape` measure.
var Shapes = []Shape{
	{"envelope-values", "loom_search", `{"hits":[],"warnings":[`, `1,`, `1]}`, true},
	{"envelope-repeated", "loom_search", `{"hits":[],`, `"warnings":[1,2],`, `"query":"q"}`, true},
	{"envelope-names", "loom_search", `{"hits":[],"source_status":{`, `"abcdefgh":1,`, `"z":1}}`, true},
	{"long-name", "loom_page_read", `{"`, `abcdefgh`, `":1}`, true},
	{"long-name-ff", "loom_page_read", `{"`, "\xff\xff\xff\xff", `":1}`, true},
	{"long-number", "loom_page_read", `{"n":1`, `00000000`, `}`, true},
	{"long-schema-version", "loom_search", `{"hits":[],"schemaVersion":1.`, `00000000`, `}`, true},
	{"row-names", "loom_search", `{"hits":[{"a":1,"o":{`, `"abcdefgh":1,`, `"z":1}}]}`, true},
	{"small-rows", "loom_search", `{"hits":[`, `{"i":1},`, `{"i":2}]}`, false},
	{"row-small-values", "loom_page_read", `{"a":[`, `1,`, `1],"ifc":7}`, false},
	{"long-string", "loom_search", `{"hits":[{"s":"`, `abcdefgh`, `"}]}`, false},
	// Rows the gateway reads whole (each under 1 MiB), of sizes from 1 KB
	// to just under 1 MiB, of short strings nothing cuts.
	{"rows-1kb", "loom_search", `{"hits":[`, rowOf(1<<10) + `,`, `{"i":2}]}`, false},
	{"rows-60kb", "loom_search", `{"hits":[`, rowOf(60<<10) + `,`, `{"i":2}]}`, false},
	{"rows-1mib", "loom_search", `{"hits":[`, rowOf(1<<20-64) + `,`, `{"i":2}]}`, false},
	// Rows that are mostly their label: 60 KB, readable and within the
	// ceiling loadgen's runs have (the work facet); 66 KB, past the label
	// bound (unreadable, withheld).
	{"label-60kb", "loom_search", `{"hits":[`, labelRow(60<<10) + `,`, `{"i":2}]}`, false},
	{"label-66kb", "loom_search", `{"hits":[`, labelRow(66<<10) + `,`, `{"i":2}]}`, false},
	// Rows of 60 KB of arrays nested 1,000 deep.
	{"deep-rows", "loom_search", `{"hits":[`, deepRow(60<<10, 1000) + `,`, `{"i":2}]}`, false},
	// Rows of 40 KB that repeat each of their names (read as JSON.parse
	// reads them: first position, last value).
	{"duplicate-names", "loom_search", `{"hits":[`, duplicateRow(40<<10) + `,`, `{"i":2}]}`, false},
	// Rows of 60 KB whose strings are bytes that are not UTF-8 (each
	// decoded to U+FFFD, three bytes).
	{"invalid-utf8", "loom_search", `{"hits":[`, invalidRow(60<<10) + `,`, `{"i":2}]}`, false},
}

// workLabel is a label within the work facet.
const workLabel = `{"confidentiality":["https://loom.example/facet/work"]}`

// rowOf is a row of about n bytes: an id, the work label and a list of
// 8-byte strings.
func rowOf(n int) string {
	head := `{"id":1,"ifc":` + workLabel + `,"v":[`
	k := max(1, (n-len(head)-2)/11)
	return head + strings.Repeat(`"abcdefgh",`, k-1) + `"abcdefgh"]}`
}

// labelRow is a row of about n bytes that is all label: the work facet,
// then an ignored member of the label that pads it.
func labelRow(n int) string {
	head := `{"id":1,"ifc":{"confidentiality":["https://loom.example/facet/work"],"pad":"`
	return head + strings.Repeat("x", max(1, n-len(head)-3)) + `"}}`
}

// deepRow is a row of about n bytes of arrays depth deep.
func deepRow(n, depth int) string {
	one := strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
	k := max(1, n/(len(one)+1))
	return `{"id":1,"ifc":` + workLabel + `,"v":[` + strings.Repeat(one+",", k-1) + one + `]}`
}

// duplicateRow is a row of about n bytes whose names each appear twice.
func duplicateRow(n int) string {
	var b strings.Builder
	b.WriteString(`{"id":1,"ifc":` + workLabel)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `,"n%d":"abcdefgh","n%d":"ijklmnop"`, i, i)
	}
	b.WriteString(`}`)
	return b.String()
}

// invalidRow is a row of about n bytes whose strings are 100 bytes of
// 0xFF each.
func invalidRow(n int) string {
	head := `{"id":1,"ifc":` + workLabel + `,"v":[`
	s := `"` + strings.Repeat("\xff", 100) + `"`
	k := max(1, (n-len(head)-2)/(len(s)+1))
	return head + strings.Repeat(s+",", k-1) + s + `]}`
}

// ShapeNamed returns the shape of that name.
func ShapeNamed(name string) (Shape, error) {
	var names []string
	for _, s := range Shapes {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Shape{}, fmt.Errorf("no shape %q (one of %s)", name, strings.Join(names, ", "))
}

// Reps is how many times Body repeats in a payload of about size bytes.
func (s Shape) Reps(size int) int {
	return max(1, (size-len(s.Head)-len(s.Tail))/len(s.Body))
}

// Payload returns the shape's payload of about size bytes.
func (s Shape) Payload(size int) []byte {
	n := s.Reps(size)
	var b bytes.Buffer
	b.Grow(len(s.Head) + n*len(s.Body) + len(s.Tail))
	b.WriteString(s.Head)
	for range n {
		b.WriteString(s.Body)
	}
	b.WriteString(s.Tail)
	return b.Bytes()
}
