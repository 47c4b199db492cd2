package ifc

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// labelOfSize returns a readable label text of exactly n bytes: one string
// clause padded to fit.
func labelOfSize(n int) string {
	const head, tail = `{"confidentiality":["`, `"]}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// manyClauses returns a label of n one-letter string clauses.
func manyClauses(n int) string {
	return `{"confidentiality":[` + strings.Repeat(`"a",`, n-1) + `"a"]}`
}

func TestLabelSizeBound(t *testing.T) {
	ceiling := CeilingOf(conf(`"https://f/work"`))
	tests := []struct {
		name  string
		label string
		want  string // the reason code of the row
	}{
		{"at the bound", labelOfSize(MaxLabelBytes), ReasonCeilingExceeded},
		{"one byte over", labelOfSize(MaxLabelBytes + 1), ReasonLabelReadFailed},
		{"two million clauses", manyClauses(2_000_000), ReasonLabelReadFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := `{"id":"r","ifc":` + tt.label + `}`
			_, present, err := ReadRowLabel(jsontext.Value(row))
			if !present || (err == nil) != (tt.want == ReasonCeilingExceeded) {
				t.Errorf("ReadRowLabel = present %v, error %v", present, err)
			}
			res := Measure(Input{Command: "search", Rows: rows(row), Ceiling: ceiling})
			if len(res.Entries) != 1 || res.Entries[0].ReasonCode != tt.want {
				t.Errorf("Measure entries = %+v, want one withheld %s", res.Entries, tt.want)
			}
		})
	}
}

// TestLabelSizeBoundMemory: a label over the bound is not parsed, so
// measuring a row with two million label clauses (8 MB of text) allocates
// next to nothing; parsing it took hundreds of megabytes.
func TestLabelSizeBoundMemory(t *testing.T) {
	row := jsontext.Value(`{"id":"r","ifc":` + manyClauses(2_000_000) + `}`)
	in := Input{Command: "search", Rows: []jsontext.Value{row}, Ceiling: CeilingOf(conf(`"https://f/work"`))}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := Measure(in)
	runtime.ReadMemStats(&after)
	if res.Withheld != 1 {
		t.Fatalf("Measure = %+v, want one withheld row", res)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("Measure allocated %d bytes for one oversized label, want < 4 MiB", n)
	}
}

// TestDuplicateNameRowBound: a row that repeats a member name is parsed
// whole only up to MaxTreeRowBytes; a longer one is withheld unread.
func TestDuplicateNameRowBound(t *testing.T) {
	small := `{"id":"a","id":"b"}`
	res := Measure(Input{Command: "search", Rows: rows(small)})
	if len(res.Entries) != 1 || !res.Entries[0].Admitted || string(res.Entries[0].Value) != `{"id":"b"}` {
		t.Errorf("small duplicate row: %+v, want admitted {\"id\":\"b\"}", res.Entries)
	}
	big := `{"id":"a","id":"b","n":[` + strings.Repeat("1,", MaxTreeRowBytes/2) + `1]}`
	res = Measure(Input{Command: "search", Rows: rows(big)})
	if len(res.Entries) != 1 || res.Entries[0].ReasonCode != ReasonLabelReadFailed {
		t.Errorf("big duplicate row: %+v, want withheld %s", res.Entries, ReasonLabelReadFailed)
	}
}

func TestMeasureContext(t *testing.T) {
	t.Parallel()
	var rs []string
	for range 3 * checkRows {
		rs = append(rs, `{"id":"x","ifc":{"confidentiality":["https://f/work"]}}`)
	}
	in := Input{Command: "search", Rows: rows(rs...), Ceiling: CeilingOf(conf(`"https://f/secret"`))}

	got, err := MeasureContext(context.Background(), in)
	if err != nil {
		t.Fatalf("MeasureContext(live) = %v", err)
	}
	if diff := cmp.Diff(Measure(in), got); diff != "" {
		t.Errorf("MeasureContext(live) differs from Measure (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := MeasureContext(ctx, in); !errors.Is(err, context.Canceled) || res.Entries != nil {
		t.Errorf("MeasureContext(done) = %d entries, %v; want none, context.Canceled", len(res.Entries), err)
	}
	// A label not read before is not parsed once the context is done.
	m := measurers.Get().(*measurer)
	m.ctx = ctx
	if li := m.labelFor([]byte(`{"confidentiality":["https://f/new"]}`)); !li.unreadable || !m.expired {
		t.Errorf("labelFor after the deadline = %+v, expired %v; want unreadable, expired", li, m.expired)
	}
	m.put()
}

// TestMaxMeasuredRows: Measure never reaches row MaxMeasuredRows, even
// with the smallest entries and the shortest head, so rows past it can be
// counted in More instead of kept, with the same result.
func TestMaxMeasuredRows(t *testing.T) {
	t.Parallel()
	for _, row := range []string{`1`, `{"ifc":{"confidentiality":["https://f/secret"]}}`} {
		all := make([]string, 3*MaxMeasuredRows)
		for i := range all {
			all[i] = row
		}
		in := Input{Notice: "N", Rows: rows(all...), Ceiling: CeilingOf(conf(`"https://f/work"`))}
		want := Measure(in)
		if len(want.Entries) >= MaxMeasuredRows {
			t.Fatalf("row %s: %d entries, want < %d", row, len(want.Entries), MaxMeasuredRows)
		}
		in.Rows, in.More = in.Rows[:MaxMeasuredRows], len(in.Rows)-MaxMeasuredRows
		if diff := cmp.Diff(want, Measure(in)); diff != "" {
			t.Errorf("row %s: rows counted in More (-all kept +more):\n%s", row, diff)
		}
	}
}
