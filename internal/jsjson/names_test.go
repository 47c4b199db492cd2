package jsjson

import (
	"fmt"
	"testing"
)

// TestNames: a name repeats in its own object only, compared in the
// writer's form (escapes and spellings of one JavaScript string are one
// name), before and past the names an object compares in turn.
func TestNames(t *testing.T) {
	many := func(n int, last string) []string {
		var ns []string
		for i := range n {
			ns = append(ns, fmt.Sprintf(`"k%d"`, i))
		}
		return append(ns, last)
	}
	tests := []struct {
		name  string
		names []string
		want  int // index of the first name that repeats, or -1
	}{
		{"distinct", []string{`"a"`, `"b"`, `"ab"`}, -1},
		{"plain", []string{`"a"`, `"b"`, `"a"`}, 2},
		{"escaped", []string{`"c"`, `"\u0063"`}, 1},
		{"escaped slash", []string{`"a/b"`, `"a\/b"`}, 1},
		{"lone surrogate, either case", []string{`"\ud800"`, `"\uD800"`}, 1},
		{"lone surrogates differ", []string{`"\ud800"`, `"\udc00"`, `"\ufffd"`}, -1},
		{"a pair and its character", []string{`"\ud83d\ude00"`, `"😀"`}, 1},
		{"empty", []string{`""`, `""`}, 1},
		{"past the linear names", many(100, `"k7"`), 100},
		{"past the linear names, escaped", many(100, `"k\u0037"`), 100},
		{"past the linear names, none", many(100, `"k100"`), -1},
	}
	for _, tt := range tests {
		var n Names
		var buf []byte
		outer := n.Open()
		lo := len(buf)
		buf = AppendName(buf, []byte(`"a"`))
		n.Add(&outer, buf, lo)
		o := n.Open()
		got := -1
		for i, name := range tt.names {
			lo := len(buf)
			buf = AppendName(buf, []byte(name))
			if !n.Add(&o, buf, lo) {
				got = i
				break
			}
		}
		if got != tt.want {
			t.Errorf("%s: repeats at %d, want %d", tt.name, got, tt.want)
		}
		// The inner object's names are its own: once it closes, the outer
		// object has "a" only.
		n.Close(&o)
		lo = len(buf)
		buf = AppendName(buf, []byte(`"b"`))
		if !n.Add(&outer, buf, lo) {
			t.Errorf(`%s: "b" repeats in the outer object`, tt.name)
		}
		lo = len(buf)
		buf = AppendName(buf, []byte(`"\u0061"`))
		if n.Add(&outer, buf, lo) {
			t.Errorf(`%s: "a" does not repeat in the outer object`, tt.name)
		}
	}
}
