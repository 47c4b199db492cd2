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
