package jsjson_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/jsjson/jsjsontest"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

// checkContainer holds skipContainer to skip's own way on the value at
// b[i]: where it tells an end, skip's own way reads a valid value that
// ends there. It reports whether skipContainer told.
func checkContainer(t *testing.T, b []byte, i, depth int) bool {
	t.Helper()
	end, ok := jsjson.SkipContainer(b, i, depth)
	if !ok {
		return false
	}
	_, want, err := jsjson.SlowValue(b[i:], depth)
	if err != nil || i+want != end {
		t.Fatalf("%q at %d, depth %d: skipContainer ends at %d, skip's own way at %d (%v)", b, i, depth, end, i+want, err)
	}
	return true
}

func TestSkipContainerMatches(t *testing.T) {
	if !jsjson.FastContainers() {
		t.Skip("no AVX2: skip reads every value its own way")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	told := 0
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		var b bytes.Buffer
		// Something before the value, so that blocks start anywhere,
		// and something after it, which the walk must not read into.
		b.WriteString(strings.Repeat(" ", rng.IntN(70)))
		i := b.Len()
		b.WriteByte("[{"[rng.IntN(2)])
		if b.Bytes()[i] == '{' {
			b.WriteString(`"k":`)
		}
		jsjsontest.GenValue(rng, &b, 4)
		for range rng.IntN(3) {
			b.WriteString(",")
			if b.Bytes()[i] == '{' {
				b.WriteString(`"k2":`)
			}
			jsjsontest.GenValue(rng, &b, 3)
		}
		b.WriteByte("]}"[min(1, int(b.Bytes()[i]-'['))])
		b.WriteString([]string{"", ",", `,{"x":1}`, " ]", "\x00", `"`, "1"}[rng.IntN(7)])
		v := b.Bytes()
		depth := []int{0, 1, 2, jsjson.MaxDepth - 70, jsjson.MaxDepth - 2}[rng.IntN(5)]
		if checkContainer(t, v, i, depth) {
			told++
		}
		m := jsjsontest.Mutate(rng, v)
		if i < len(m) && (m[i] == '{' || m[i] == '[') {
			checkContainer(t, m, i, depth)
		}
		// Cut short: the value does not end in the input.
		checkContainer(t, v[:i+rng.IntN(len(v)-i)], i, depth)
	}
	if told < n/4 {
		t.Errorf("skipContainer told the end of %d of %d generated values: the fast way is not taken", told, n)
	}
}

// TestSkipContainerEdges covers the blocks' edges: values, strings and
// numbers that end on, before and after a 64-byte boundary, and the
// nesting the walk keeps.
func TestSkipContainerEdges(t *testing.T) {
	if !jsjson.FastContainers() {
		t.Skip("no AVX2")
	}
	for pre := range 130 {
		for _, v := range []string{
			`{"a":"` + strings.Repeat("x", pre) + `"}`,
			`[` + strings.Repeat("1", pre+1) + `]`,
			`[-0.5e+10,` + strings.Repeat(" ", pre) + `true,false,null]`,
			`{"a":[{},[],{"b":""}],` + strings.Repeat(" ", pre) + `"c":"\n"}`,
			`{"a":"` + strings.Repeat("é", pre) + `"}`,
			`{"a":"` + strings.Repeat("x", pre) + "\x01\"}",
			`[` + strings.Repeat("1", pre+1) + `x]`,
			`[01]`, `[1.]`, `[tru]`, `[truex]`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1}`, `{"a":1]`, `{1:2}`, `[]]`,
			strings.Repeat("[", 62) + strings.Repeat("]", 62),
			strings.Repeat("[", 63) + strings.Repeat("]", 63),
			strings.Repeat("[", 64) + strings.Repeat("]", 64),
			strings.Repeat(`{"":`, 70) + `1` + strings.Repeat("}", 70),
		} {
			b := []byte(strings.Repeat(" ", pre%64) + v + `,"tail"`)
			checkContainer(t, b, pre%64, 0)
			checkContainer(t, b[:len(b)-7], pre%64, 0)
			checkContainer(t, b, pre%64, jsjson.MaxDepth-1)
		}
	}
}

// TestSkipContainerReadsSearchRows: every row of the benchmarks' search
// payload (no escapes, no control characters) is read the fast way.
func TestSkipContainerReadsSearchRows(t *testing.T) {
	if !jsjson.FastContainers() {
		t.Skip("no AVX2")
	}
	payload := benchdata.Search(256 << 10)
	i := bytes.Index(payload, []byte(`"hits":[`)) + len(`"hits":[`)
	rows := 0
	for payload[i] == '{' {
		if !checkContainer(t, payload, i, 2) {
			t.Fatalf("row %d at %d: skipContainer could not tell its end", rows, i)
		}
		end, _ := jsjson.SkipContainer(payload, i, 2)
		rows++
		i = end + 1
	}
	if rows < 1000 {
		t.Fatalf("%d rows read", rows)
	}
}

// FuzzSkipContainerMatches holds skipContainer to skip's own way on
// arbitrary bytes.
func FuzzSkipContainerMatches(f *testing.F) {
	if !jsjson.FastContainers() {
		f.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 40 {
		var b bytes.Buffer
		b.WriteByte('[')
		jsjsontest.GenValue(rng, &b, 3)
		b.WriteByte(']')
		f.Add(b.Bytes(), uint16(0))
		f.Add(jsjsontest.Mutate(rng, b.Bytes()), uint16(1))
	}
	f.Add(benchdata.Search10K()[118:900], uint16(2))
	f.Fuzz(func(t *testing.T, v []byte, depth uint16) {
		if len(v) == 0 || v[0] != '{' && v[0] != '[' {
			return
		}
		checkContainer(t, v, 0, int(depth)%(jsjson.MaxDepth+1))
	})
}

// TestOwnWayMatchesJSONText holds skip's own way, which reads what
// skipContainer cannot (and every value where there is no AVX2), to
// jsontext on its own, the fast way out of the way.
func TestOwnWayMatchesJSONText(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for range 10000 {
		var b bytes.Buffer
		jsjsontest.GenValue(rng, &b, 4)
		for _, v := range [][]byte{b.Bytes(), jsjsontest.Mutate(rng, b.Bytes())} {
			raw, end, err := jsjson.SlowValue(v, 0)
			got := err == nil && len(bytes.TrimRight(v[end:], " \t\r\n")) == 0
			want := jsontext.Value(v).IsValid(jsjson.DecodeOptions...)
			if got != want {
				t.Fatalf("%q: skip's own way valid %v (%v), jsontext %v", v, got, err, want)
			}
			if got && !bytes.Equal(raw, bytes.Trim(v, " \t\r\n")) {
				t.Fatalf("%q: raw %q", v, raw)
			}
		}
	}
}
