package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/api/client"
)

// TestModelContextGrowth: what a call admits joins the run's model-context
// label, a later unlabeled row takes that grown label (labelSource query),
// and once the label no longer fits the ceiling the same row is withheld.
func TestModelContextGrowth(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[{"id":"w1","ifc":{"confidentiality":["{W}"]}},{"id":"u1","text":"unlabeled"}]}`)})
	r := g.workRun(t)
	host := g.hostClient(t)
	const body = `{"query":"growth"}`
	public, work := [][]string{}, [][]string{{atomWork}}

	// 1: nothing observed yet, the unlabeled row is public.
	res := r.ok(t, "loom_search", body)
	got, h1 := views(t, res.Entries)
	want := []entryView{
		admittedEntry(work, nil, "row", `{"id":"w1"}`),
		admittedEntry(public, nil, "query", `{"id":"u1","text":"unlabeled"}`),
	}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Fatalf("call 1 entries (-want +got):\n%s", diff)
	}
	wantContext(t, r, `"{W}"`)

	// 2: the unlabeled row now takes the grown label, and is a new
	// referent; the labelled row is the same referent as before.
	res = r.ok(t, "loom_search", body)
	got, h2 := views(t, res.Entries)
	want[1] = admittedEntry(work, nil, "query", `{"id":"u1","text":"unlabeled"}`)
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Fatalf("call 2 entries (-want +got):\n%s", diff)
	}
	if h2[0] != h1[0] {
		t.Errorf("the same row under the same label got a new handle: %s then %s", h1[0], h2[0])
	}
	if h2[1] == h1[1] {
		t.Errorf("the unlabeled row kept its handle %s after the query label grew", h1[1])
	}

	// 3: another tool's label joins through the host; now the unlabeled
	// row's label (work and health) exceeds the work-only ceiling.
	obs, err := host.AddObservationWithResponse(ctx(t), r.ID, client.ObservationInput{Label: client.ConfidentialityLabel{Confidentiality: []client.Clause{raw(`"` + atomHealth + `"`)}}})
	if err != nil || obs.StatusCode() != http.StatusNoContent {
		t.Fatalf("observation: %v %v", err, obs)
	}
	wantContext(t, r, `"{W}"`, `"{H}"`)
	res = r.ok(t, "loom_search", body)
	got, h3 := views(t, res.Entries)
	want[1] = withheldEntry("cfc_ceiling_exceeded")
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Fatalf("call 3 entries (-want +got):\n%s", diff)
	}
	if len(h3) != 1 || h3[0] != h1[0] {
		t.Errorf("call 3 handles %v, want [%s]", h3, h1[0])
	}

	// The host sees each call's join; the handle table holds three
	// referents, the unlabeled row once per label.
	calls := r.calls(t)
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	for i, c := range calls {
		if want := fmt.Sprintf("%s:loom_search:%d", r.ID, i+1); c.OutputId != want {
			t.Errorf("call %d outputId %q, want %q", i, c.OutputId, want)
		}
		if c.Cfc.ObservedLabel == nil || cmp.Diff(canonTemplates(t, []string{`"{W}"`}), canonList(t, c.Cfc.ObservedLabel.Confidentiality)) != "" {
			t.Errorf("call %d observedLabel = %+v, want work", i, c.Cfc.ObservedLabel)
		}
	}
	if c := calls[2]; c.Admitted != 1 || c.Withheld != 1 {
		t.Errorf("call 3 counts %d/%d, want 1/1", c.Admitted, c.Withheld)
	}
	refs := r.handles(t)
	if len(refs) != 3 {
		t.Fatalf("%d referents, want 3", len(refs))
	}
	for i, wantLabel := range []string{`{"confidentiality":["{W}"],"integrity":[]}`, `{"confidentiality":[],"integrity":[]}`, `{"confidentiality":["{W}"],"integrity":[]}`} {
		label, _ := json.Marshal(refs[i].Label)
		if canon(t, label) != canon(t, []byte(fill(wantLabel))) {
			t.Errorf("referent %d label %s, want %s", i, label, fill(wantLabel))
		}
	}
	for _, tc := range []struct {
		token string
		conf  [][]string
	}{{h1[1], public}, {h2[1], work}} {
		d := r.call(t, "describe_handle", `{"token":"`+tc.token+`"}`)
		if d.Handle == nil || !d.Handle.Known || d.Handle.Referent == nil || d.Handle.Referent.LabelSource != "query" {
			t.Fatalf("describe %s: %s", tc.token, d.Body)
		}
		if diff := cmp.Diff(tc.conf, d.Handle.Label.Confidentiality, equateEmpty); diff != "" {
			t.Errorf("describe %s confidentiality (-want +got):\n%s", tc.token, diff)
		}
	}
}

// wantContext requires the run's model-context label to be clauses.
func wantContext(t testing.TB, r *run, clauses ...string) {
	t.Helper()
	if diff := cmp.Diff(canonTemplates(t, clauses), canonList(t, r.summary(t).ModelContextLabel.Confidentiality), equateEmpty); diff != "" {
		t.Errorf("modelContextLabel (-want +got):\n%s", diff)
	}
}

// TestUnlabeledRowLabel: the host config's unlabeledRowLabel is joined into
// the label unlabeled rows take (Gateway decision 12).
func TestUnlabeledRowLabel(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Config: map[string]any{"unlabeledRowLabel": []string{atomHealth}}})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[{"id":"u1","note":"{X}"}]}`)})

	got, _ := views(t, g.workRun(t).ok(t, "loom_search", `{"query":"q"}`).Entries)
	if diff := cmp.Diff([]entryView{withheldEntry("cfc_ceiling_exceeded")}, got, equateEmpty); diff != "" {
		t.Errorf("under a work-only ceiling (-want +got):\n%s", diff)
	}
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"u2"}]}`})
	open := g.newRun(t, client.CreateRunInput{})
	got, _ = views(t, open.ok(t, "loom_search", `{"query":"q"}`).Entries)
	if diff := cmp.Diff([]entryView{admittedEntry([][]string{{atomHealth}}, nil, "query", `{"id":"u2"}`)}, got, equateEmpty); diff != "" {
		t.Errorf("without a ceiling (-want +got):\n%s", diff)
	}
	wantContext(t, open, `"{H}"`)
}

// TestBounds: strings over 4,000 UTF-16 units are cut and the entry marked
// truncated; rows past the 48,000-unit budget are omitted; envelope strings
// are cut without marking the result truncated.
func TestBounds(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})

	t.Run("long string", func(t *testing.T) {
		long := strings.Repeat("a", 3999) + "😀" + strings.Repeat("b", 10)
		exact := strings.Repeat("c", 4000)
		g.setBehaviour(t, "page.read", behaviour{Stdout: `{"long":"` + long + `","exact":"` + exact + `","key` + strings.Repeat("k", 4100) + `":1}`})
		rep := r.call(t, "loom_page_read", `{"target":"Long.md"}`)
		res := rep.Result
		if res == nil || len(res.Entries) != 1 || res.Entries[0].Value == nil {
			t.Fatalf("status %d %.300s", rep.Status, rep.Body)
		}
		e := res.Entries[0]
		if e.Truncated == nil || !*e.Truncated || !res.Truncated {
			t.Errorf("entry truncated %v, result truncated %v, want both true", deref(e.Truncated), res.Truncated)
		}
		var v map[string]any
		if err := json.Unmarshal(*e.Value, &v); err != nil {
			t.Fatal(err)
		}
		// The cut at 4,000 units would split the surrogate pair: the
		// dangling high half is dropped.
		if got := v["long"].(string); got != strings.Repeat("a", 3999) {
			t.Errorf("cut string has %d UTF-16 units (%q...), want the 3,999 a's", len(utf16.Encode([]rune(got))), got[len(got)-5:])
		}
		if v["exact"] != exact {
			t.Errorf("a string of exactly 4,000 units was cut")
		}
		if _, ok := v["key"+strings.Repeat("k", 4100)]; !ok {
			t.Errorf("an object key was cut")
		}
	})

	t.Run("budget", func(t *testing.T) {
		var rows []string
		for i := range 30 {
			rows = append(rows, fmt.Sprintf(`{"i":%d,"text":"%s"}`, i, strings.Repeat("x", 3000)))
		}
		g.setBehaviour(t, "calendar.list", behaviour{Stdout: "[" + strings.Join(rows, ",") + "]"})
		rep := r.call(t, "loom_calendar_list", `{}`)
		res := rep.Result
		if res == nil {
			t.Fatalf("status %d %.300s", rep.Status, rep.Body)
		}
		if res.Omitted == 0 || res.Admitted+res.Omitted != 30 || !res.Truncated || len(res.Entries) != res.Admitted {
			t.Errorf("admitted %d omitted %d truncated %v entries %d, want some omitted out of 30", res.Admitted, res.Omitted, res.Truncated, len(res.Entries))
		}
		if n := len(utf16.Encode([]rune(string(rep.Body)))); n > 48000 {
			t.Errorf("result is %d UTF-16 units, over 48,000", n)
		}
		for i, e := range res.Entries {
			var v struct{ I int }
			_ = json.Unmarshal(*e.Value, &v)
			if v.I != i {
				t.Errorf("entry %d is row %d: rows must be taken in order", i, v.I)
			}
		}
		calls := r.calls(t)
		if c := calls[len(calls)-1]; c.Omitted != res.Omitted || !c.Truncated {
			t.Errorf("call record omitted %d truncated %v", c.Omitted, c.Truncated)
		}
	})

	t.Run("envelope", func(t *testing.T) {
		g.setBehaviour(t, "search", behaviour{Stdout: `{"query":"` + strings.Repeat("q", 5000) + `","hits":[{"id":1}]}`})
		rep := r.call(t, "loom_search", `{"query":"long"}`)
		res := rep.Result
		if res == nil || res.Envelope == nil {
			t.Fatalf("status %d %.300s", rep.Status, rep.Body)
		}
		if q := (*res.Envelope)["query"].(string); len(q) != 4000 {
			t.Errorf("envelope query has %d characters, want 4,000", len(q))
		}
		if res.Truncated {
			t.Errorf("an envelope cut marked the result truncated")
		}
	})

	// An envelope too large for the bound is cut to its longest prefix
	// that fits, members in order, and the result is marked truncated, on
	// both faces (Gateway decision in docs/DEVIATIONS.md).
	t.Run("huge envelope", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"query":"q","source_status":{`)
		for i := range 40000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"source-%d":"ok"`, i)
		}
		b.WriteString(`},"warnings":["late"],"hits":[{"id":1}]}`)
		g.setBehaviour(t, "search", behaviour{Stdout: b.String()})

		check := func(t *testing.T, body []byte) {
			t.Helper()
			if n := len(utf16.Encode([]rune(string(body)))); n > 48000 {
				t.Errorf("result is %d UTF-16 units, over 48,000", n)
			}
			var res struct {
				Truncated bool
				Omitted   int
				Envelope  struct {
					Query        string
					SourceStatus jsontext.Value `json:"source_status"`
					Warnings     []string
				}
			}
			if err := json.Unmarshal(body, &res); err != nil {
				t.Fatalf("%v: %.300s", err, body)
			}
			if !res.Truncated || res.Envelope.Query != "q" || res.Envelope.Warnings != nil {
				t.Errorf("truncated %v, query %q, warnings %v: want truncated, the query kept and the later warnings dropped", res.Truncated, res.Envelope.Query, res.Envelope.Warnings)
			}
			dec := jsontext.NewDecoder(bytes.NewReader(res.Envelope.SourceStatus))
			if _, err := dec.ReadToken(); err != nil {
				t.Fatal(err)
			}
			kept := 0
			for dec.PeekKind() == '"' {
				name, _ := dec.ReadToken()
				if want := fmt.Sprintf("source-%d", kept); name.String() != want {
					t.Fatalf("member %d is %q, want %q: members are kept in order", kept, name.String(), want)
				}
				_, _ = dec.ReadToken()
				kept++
			}
			if kept < 1000 || kept >= 40000 {
				t.Errorf("%d members of source_status kept, want a prefix filling the budget", kept)
			}
			if res.Omitted != 1 {
				t.Errorf("omitted %d, want the one hit omitted (the envelope took the room)", res.Omitted)
			}
		}
		rep := r.call(t, "loom_search", `{"query":"huge"}`)
		if rep.Status != http.StatusOK {
			t.Fatalf("status %d %.300s", rep.Status, rep.Body)
		}
		check(t, rep.Body)

		s, err := mcpSession(t, g, r.ID, r.Token)
		if err != nil {
			t.Fatal(err)
		}
		mres, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: map[string]string{"query": "huge"}})
		if err != nil || mres.IsError {
			t.Fatalf("MCP call: %v %+v", err, mres)
		}
		check(t, []byte(mres.Content[0].(*mcp.TextContent).Text))
	})
}
