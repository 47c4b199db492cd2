package loom

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	first := Condense(Search, bytes.NewReader(searchOf(50, "first")))
	stale := first // a copy, released after first was
	first.Release()
	if diff := cmp.Diff(Condensed{}, first, cmp.AllowUnexported(Condensed{})); diff != "" {
		t.Fatalf("released Condensed not cleared (-want +got):\n%s", diff)
	}
	second := Condense(Search, bytes.NewReader(searchOf(50, "second")))
	want := make([]string, len(second.Rows))
	for i, r := range second.Rows {
		want[i] = string(r)
	}
	stale.Release() // must not give second's memory back
	first.Release() // nor must releasing twice
	for range 4 {
		third := Condense(Search, bytes.NewReader(searchOf(50, "third")))
		defer third.Release()
	}
	for i, r := range second.Rows {
		if string(r) != want[i] {
			t.Fatalf("row %d of a held Condensed changed to %s, was %s", i, r, want[i])
		}
	}
	second.Release()
	var none Condensed
	none.Release() // holds nothing: nothing happens
}
