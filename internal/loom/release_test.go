package loom_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/loom"
)

// searchOf is a search payload of n hits, each naming tag.
func searchOf(n int, tag string) []byte {
	var b strings.Builder
	b.WriteString(`{"query":"q","hits":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%s-%d","ifc":{"confidentiality":["https://loom.example/facet/work"]}}`, tag, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestCondensedRelease: a released Condensed is cleared, its memory goes
// to the next reading, and releasing a stale copy of it again never hands
// out memory another reading holds.
func TestCondensedRelease(t *testing.T) {
	first := loom.Condense(loom.Search, bytes.NewReader(searchOf(50, "first")))
	stale := first // a copy, released after first was
	first.Release()
	if diff := cmp.Diff(loom.Condensed{}, first, cmp.AllowUnexported(loom.Condensed{})); diff != "" {
		t.Fatalf("released Condensed not cleared (-want +got):\n%s", diff)
	}
	second := loom.Condense(loom.Search, bytes.NewReader(searchOf(50, "second")))
	want := make([]string, len(second.Rows))
	for i, r := range second.Rows {
		want[i] = string(r)
	}
	stale.Release() // must not give second's memory back
	first.Release() // nor must releasing twice
	for range 4 {
		third := loom.Condense(loom.Search, bytes.NewReader(searchOf(50, "third")))
		defer third.Release()
	}
	for i, r := range second.Rows {
		if string(r) != want[i] {
			t.Fatalf("row %d of a held Condensed changed to %s, was %s", i, r, want[i])
		}
	}
	second.Release()
	var none loom.Condensed
	none.Release() // holds nothing: nothing happens
}

// TestCondenseDecodesAcrossPieces: stdout read straight into the window
// decodes as the reference does wherever a read ends: in a BOM, in a
// character, in an invalid sequence, at a row's end.
func TestCondenseDecodesAcrossPieces(t *testing.T) {
	row := func(i int, s string) string {
		return fmt.Sprintf(`{"id":"%d","t":"%s","ifc":{"confidentiality":["https://loom.example/facet/work"]}}`, i, s)
	}
	texts := []string{"é", "🙂", "\xff", "\xe2\x82", "a\xf0\x9f", "\xc3\xa9\xc3", "\u2028", "plain"}
	var b strings.Builder
	b.WriteString("\xef\xbb\xbf{\"query\":\"q\xff\",\"hits\":[")
	for i := range 60 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row(i, strings.Repeat(texts[i%len(texts)], 1+i%5)))
	}
	b.WriteString("]}\n\xff")
	bad := []byte(b.String())
	good := bytes.TrimSuffix(bad, []byte("\xff"))
	for _, stdout := range [][]byte{good, bad} {
		for _, cuts := range [][]byte{{0}, {1}, {2}, {1, 0, 2}, {3, 1}, {9}} {
			checkCondense(t, loom.Search, stdout, cuts)
		}
	}
}
