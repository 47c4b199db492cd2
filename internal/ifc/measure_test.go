package ifc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// u16 counts UTF-16 units independently of the package.
func u16(s string) int { return len(utf16.Encode([]rune(s))) }

func rows(texts ...string) []jsontext.Value {
	var out []jsontext.Value
	for _, s := range texts {
		out = append(out, jsontext.Value(s))
	}
	return out
}

// handlesFor returns n distinct 11-character tokens.
func handlesFor(n int) []string {
	var h []string
	for i := range n {
		h = append(h, fmt.Sprintf("cfh:v:%05d", i))
	}
	return h
}

func TestMeasureGolden(t *testing.T) {
	in := Input{
		OutputID: "run1:loom_search:3",
		Command:  "search",
		Notice:   "N",
		Envelope: jsontext.Value(`{ "query" : "q", "truncated" : false }`),
		Ceiling:  CeilingOf(conf(`"https://f/work"`)),
		Unlabeled: Label{
			Confidentiality: conf(`"https://f/work"`),
		},
		Rows: rows(
			`{"id":"a","ifc":{"confidentiality":[{"type":"https://f/work","owner":"o"}],"integrity":["I"]}}`,
			`{"id":"b","n":1.50}`,
			`{"id":"c","ifc":{"confidentiality":["https://f/secret"]}}`,
			`{"id":"d","ifc":{"confidentiality":"x"}}`,
			`{"id":"e","ifc":{"confidentiality":["https://f/work"]}}`,
		),
	}
	got := Measure(in)
	want := Result{
		OutputID: "run1:loom_search:3", Command: "search", Notice: "N",
		Entries: []Entry{
			{Admitted: false, ReasonCode: ReasonCeilingExceeded},
			{Admitted: true, Label: in.Unlabeled, LabelSource: SourceQuery, Value: jsontext.Value(`{"id":"b","n":1.50}`)},
			{Admitted: false, ReasonCode: ReasonCeilingExceeded},
			{Admitted: false, ReasonCode: ReasonLabelReadFailed},
			{Admitted: true, Label: Label{Confidentiality: conf(`"https://f/work"`)}, LabelSource: SourceRow, Value: jsontext.Value(`{"id":"e"}`)},
		},
		Admitted: 2, Withheld: 3,
		Envelope: jsontext.Value(`{"query":"q","truncated":false}`),
		Observed: conf(`"https://f/work"`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Measure (-want +got):\n%s", diff)
	}
	js := string(got.AppendJSON(nil, []string{"cfh:v:aaaaa", "cfh:v:bbbbb"}))
	wantJS := `{"outputId":"run1:loom_search:3","status":"ok","kind":"search","notice":"N","admitted":2,"withheld":3,"omitted":0,"truncated":false,` +
		`"envelope":{"query":"q","truncated":false},"entries":[` +
		`{"status":"withheld","reasonCode":"cfc_ceiling_exceeded"},` +
		`{"status":"admitted","label":{"confidentiality":[["https://f/work"]],"integrity":[]},"labelSource":"query","value":{"id":"b","n":1.50},"handle":"cfh:v:aaaaa"},` +
		`{"status":"withheld","reasonCode":"cfc_ceiling_exceeded"},` +
		`{"status":"withheld","reasonCode":"cfc_label_read_failed"},` +
		`{"status":"admitted","label":{"confidentiality":[["https://f/work"]],"integrity":[]},"labelSource":"row","value":{"id":"e"},"handle":"cfh:v:bbbbb"}]}`
	if diff := cmp.Diff(wantJS, js); diff != "" {
		t.Errorf("AppendJSON (-want +got):\n%s", diff)
	}
	if !json.Valid([]byte(js)) {
		t.Errorf("AppendJSON output is not valid JSON")
	}
}

func TestMeasureEmpty(t *testing.T) {
	got := Measure(Input{OutputID: "r:loom_profile:1", Command: "profile"})
	js := string(got.AppendJSON(nil, nil))
	want := `{"outputId":"r:loom_profile:1","status":"ok","kind":"profile","notice":` + string(jsjson.AppendString(nil, Notice)) +
		`,"admitted":0,"withheld":0,"omitted":0,"truncated":false,"entries":[]}`
	if js != want {
		t.Errorf("AppendJSON = %s\nwant %s", js, want)
	}
}

func TestMeasureValues(t *testing.T) {
	long := strings.Repeat("x", 4100)
	tests := []struct {
		name          string
		row           string
		wantValue     string
		wantTruncated bool
		wantSource    string
	}{
		{"key order and number text kept, ifc stripped",
			`{"z":1.0,"ifc":{"confidentiality":[]},"a":1e3,"big":12345678901234567890,"2":2,"1":1,"n":{"ifc":1}}`,
			`{"z":1.0,"a":1e3,"big":12345678901234567890,"2":2,"1":1,"n":{"ifc":1}}`, false, SourceRow},
		{"ifc only", `{"ifc":{"confidentiality":[]}}`, `{}`, false, SourceRow},
		{"whitespace and escapes", " {\n \"a\" : \"<\\u2028\\/>\" , \"b\" : [ ] } ", "{\"a\":\"<\u2028/>\",\"b\":[]}", false, SourceQuery},
		{"long string cut, truncated", `{"a":"` + long + `","b":"short"}`, `{"a":"` + long[:4000] + `","b":"short"}`, true, SourceQuery},
		{"long key kept", `{"` + long + `":1}`, `{"` + long + `":1}`, false, SourceQuery},
		{"duplicate members", `{"a":1,"ifc":{"confidentiality":["X"]},"b":2,"a":3,"ifc":{"confidentiality":[]}}`, `{"a":3,"b":2}`, false, SourceRow},
		{"duplicate members with cut", `{"a":1,"a":"` + long + `"}`, `{"a":"` + long[:4000] + `"}`, true, SourceQuery},
		{"invalid utf8", "{\"a\":\"\xff\"}", "{\"a\":\"\uFFFD\"}", false, SourceQuery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Measure(Input{Rows: rows(tt.row)})
			if r.Admitted != 1 {
				t.Fatalf("Measure: admitted %d, want 1 (%+v)", r.Admitted, r.Entries)
			}
			e := r.Entries[0]
			if string(e.Value) != tt.wantValue || e.Truncated != tt.wantTruncated || e.LabelSource != tt.wantSource {
				t.Errorf("entry = (%.80s, truncated %v, %s), want (%.80s, %v, %s)", e.Value, e.Truncated, e.LabelSource, tt.wantValue, tt.wantTruncated, tt.wantSource)
			}
			if r.Truncated != tt.wantTruncated {
				t.Errorf("result truncated = %v, want %v", r.Truncated, tt.wantTruncated)
			}
		})
	}
}

func TestMeasureLabels(t *testing.T) {
	work, secret := `"https://f/work"`, `"https://f/secret"`
	tests := []struct {
		name      string
		ceiling   Ceiling
		unlabeled Label
		rows      []string
		want      []string // "admitted:<source>" or the reason code
		observed  Confidentiality
	}{
		{"no ceiling admits readable, withholds unreadable", NoCeiling, Label{},
			[]string{`{"ifc":{"confidentiality":[` + secret + `]}}`, `{"ifc":null}`, `{"a":1}`, `[1]`, `"s"`, `null`, `{"ifc":{"confidentiality":[` + marker + `]}}`},
			[]string{"admitted:row", ReasonLabelReadFailed, "admitted:query", ReasonLabelReadFailed, ReasonLabelReadFailed, ReasonLabelReadFailed, "admitted:row"},
			conf(secret, marker)},
		{"defined ceiling", CeilingOf(conf(work)), Label{},
			[]string{`{"ifc":{"confidentiality":[` + secret + `]}}`, `{"ifc":{"confidentiality":[` + work + `]}}`, `{"a":1}`, `{"ifc":{"confidentiality":[` + marker + `]}}`},
			[]string{ReasonCeilingExceeded, "admitted:row", "admitted:query", ReasonCeilingExceeded},
			conf(work)},
		{"empty ceiling admits public only", CeilingOf(nil), Label{},
			[]string{`{"ifc":{"confidentiality":[]}}`, `{"ifc":{"confidentiality":[` + work + `]}}`, `{"a":1}`},
			[]string{"admitted:row", ReasonCeilingExceeded, "admitted:query"},
			nil},
		{"unlabeled rows measured with the query label", CeilingOf(conf(work)), Label{Confidentiality: conf(secret)},
			[]string{`{"a":1}`, `{"ifc":{"confidentiality":[` + work + `]}}`},
			[]string{ReasonCeilingExceeded, "admitted:row"},
			conf(work)},
		{"unlabeled with query label observed", NoCeiling, Label{Confidentiality: conf(work)},
			[]string{`{"a":1}`, `{"b":1}`},
			[]string{"admitted:query", "admitted:query"},
			conf(work)},
		{"invalid row withheld", NoCeiling, Label{},
			[]string{`{"a":`, `{"a":1} x`},
			[]string{ReasonLabelReadFailed, ReasonLabelReadFailed},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Measure(Input{Rows: rows(tt.rows...), Ceiling: tt.ceiling, Unlabeled: tt.unlabeled})
			var got []string
			for _, e := range r.Entries {
				if e.Admitted {
					got = append(got, "admitted:"+e.LabelSource)
				} else {
					got = append(got, e.ReasonCode)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.observed, r.Observed); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMeasureEnvelope(t *testing.T) {
	long := strings.Repeat("é", 4100)
	r := Measure(Input{
		Envelope: jsontext.Value(`{"query":"` + long + `","warnings":["` + long + `"],"n":1.0}`),
		Rows:     rows(`{"a":1}`),
	})
	want := `{"query":"` + long[:8000] + `","warnings":["` + long[:8000] + `"],"n":1.0}`
	if string(r.Envelope) != want {
		t.Errorf("envelope = %.60s…, want %.60s…", r.Envelope, want)
	}
	if r.Truncated {
		t.Error("envelope cut set truncated")
	}
	if r := Measure(Input{Envelope: jsontext.Value(`{"a":`)}); string(r.Envelope) != `{}` {
		t.Errorf("invalid envelope = %s, want {}", r.Envelope)
	}
	if r := Measure(Input{}); r.Envelope != nil {
		t.Errorf("no envelope = %s, want nil", r.Envelope)
	}
}

// skeletonLen computes the reservation independently of the package.
func skeletonLen(in Input, envelope string) int {
	n := len(in.Rows)
	s := fmt.Sprintf(`{"outputId":"%s","status":"ok","kind":"%s","notice":"%s","admitted":%d,"withheld":%d,"omitted":%d,"truncated":true`,
		in.OutputID, in.Command, in.Notice, n, n, n)
	if envelope != "" {
		s += `,"envelope":` + envelope
	}
	return u16(s+"}") + 2000
}

func publicEntryLen(value string) int {
	return u16(`{"status":"admitted","label":{"confidentiality":[],"integrity":[]},"labelSource":"query","value":` + value + `,"handle":"cfh:v:22222"}`)
}

// padRow returns a row whose public admitted entry is exactly target units.
func padRow(t *testing.T, target int) string {
	t.Helper()
	var fields []string
	for {
		row := "{" + strings.Join(append(slices.Clone(fields), `"p":""`), ",") + "}"
		need := target - publicEntryLen(row)
		if need < 0 {
			t.Fatalf("padRow(%d): overshoot by %d", target, -need)
		}
		if need <= StringBound {
			return strings.Replace(row, `"p":""`, `"p":"`+strings.Repeat("p", need)+`"`, 1)
		}
		fields = append(fields, fmt.Sprintf(`"f%03d":"%s"`, len(fields), strings.Repeat("x", 3990)))
	}
}

// TestMeasureBudgetBoundary fills the budget to exactly 48,000 units, then
// one unit more; the handle stand-in is part of every admitted entry.
func TestMeasureBudgetBoundary(t *testing.T) {
	in := Input{OutputID: "o", Command: "search", Notice: "N", Envelope: jsontext.Value(`{}`)}
	first := `{"t":"` + strings.Repeat("a", 3000) + `"}`
	small := `{"s":1}`
	in.Rows = rows(first, "", small)
	reserved := skeletonLen(in, `{}`)
	room := OutputBound - reserved - publicEntryLen(first)

	tests := []struct {
		name         string
		second       string
		wantAdmitted int
		wantOmitted  int
	}{
		{"exactly the bound fits", padRow(t, room), 2, 1},
		{"one unit over is omitted with all later rows", padRow(t, room+1), 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in.Rows = rows(first, tt.second, small)
			r := Measure(in)
			if r.Admitted != tt.wantAdmitted || r.Omitted != tt.wantOmitted || !r.Truncated {
				t.Errorf("Measure: admitted %d omitted %d truncated %v, want %d %d true", r.Admitted, r.Omitted, r.Truncated, tt.wantAdmitted, tt.wantOmitted)
			}
			js := string(r.AppendJSON(nil, handlesFor(r.Admitted)))
			entries := 0
			for _, e := range r.Entries {
				entries += u16(string(appendAdmitted(nil, e, HandleStandIn, true)))
			}
			if got := reserved + entries; got > OutputBound {
				t.Errorf("reserved+entries = %d, over the bound", got)
			}
			if tt.wantAdmitted == 2 && reserved+entries != OutputBound {
				t.Errorf("reserved+entries = %d, want exactly %d", reserved+entries, OutputBound)
			}
			if u16(js) > OutputBound {
				t.Errorf("AppendJSON is %d units, over %d", u16(js), OutputBound)
			}
		})
	}
}

// TestMeasureHandleCounted shows that a row fitting only without the
// handle stand-in is omitted.
func TestMeasureHandleCounted(t *testing.T) {
	in := Input{OutputID: "o", Command: "k", Notice: "N", Rows: rows("")}
	room := OutputBound - skeletonLen(in, "")
	handleMember := u16(`,"handle":"cfh:v:22222"`)
	row := padRow(t, room+handleMember) // without the handle it would fill the room exactly
	in.Rows = rows(row)
	if r := Measure(in); r.Admitted != 0 || r.Omitted != 1 || !r.Truncated {
		t.Errorf("Measure: admitted %d omitted %d truncated %v, want 0 1 true", r.Admitted, r.Omitted, r.Truncated)
	}
	in.Rows = rows(padRow(t, room))
	if r := Measure(in); r.Admitted != 1 || r.Omitted != 0 {
		t.Errorf("Measure (exact fit): admitted %d omitted %d, want 1 0", r.Admitted, r.Omitted)
	}
}

func TestMeasureWithheldConsumeBudget(t *testing.T) {
	const n = 2000
	var rs []string
	for range n {
		rs = append(rs, `{"ifc":{}}`)
	}
	in := Input{OutputID: "o", Command: "k", Notice: "N", Rows: rows(rs...)}
	reserved := skeletonLen(in, "")
	each := u16(`{"status":"withheld","reasonCode":"cfc_label_read_failed"}`)
	want := (OutputBound - reserved) / each
	r := Measure(in)
	if r.Withheld != want || r.Omitted != n-want || r.Admitted != 0 || !r.Truncated {
		t.Errorf("Measure: withheld %d omitted %d admitted %d truncated %v, want %d %d 0 true", r.Withheld, r.Omitted, r.Admitted, r.Truncated, want, n-want)
	}
	if got := u16(string(r.AppendJSON(nil, nil))); got > OutputBound {
		t.Errorf("AppendJSON is %d units, over %d", got, OutputBound)
	}
}

func TestMeasureOversizedFirstRow(t *testing.T) {
	bigRow := func(keys int, label string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range keys {
			fmt.Fprintf(&b, `"k%d":"%s",`, i, strings.Repeat("z", 4500))
		}
		b.WriteString(`"ifc":` + label + `}`)
		return b.String()
	}
	public := `{"confidentiality":[]}`
	small := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}
	tests := []struct {
		name         string
		first        string
		ceiling      Ceiling
		wantEntries  []string
		wantOmitted  int
		wantTruncate bool
	}{
		{"just over the bound", bigRow(12, public), NoCeiling, nil, 4, true},
		{"far over the bound (not kept)", bigRow(200, public), NoCeiling, nil, 4, true},
		{"far over but withheld by a late label", bigRow(200, `{"confidentiality":["S"]}`), CeilingOf(nil),
			[]string{ReasonCeilingExceeded, "admitted", "admitted", "admitted"}, 0, false},
		{"far over but unreadable late label", bigRow(200, `{"confidentiality":{}}`), NoCeiling,
			[]string{ReasonLabelReadFailed, "admitted", "admitted", "admitted"}, 0, false},
		{"fits after cuts", bigRow(8, public), NoCeiling,
			[]string{"admitted", "admitted", "admitted", "admitted"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Measure(Input{Rows: rows(append([]string{tt.first}, small...)...), Ceiling: tt.ceiling})
			var got []string
			for _, e := range r.Entries {
				if e.Admitted {
					got = append(got, "admitted")
				} else {
					got = append(got, e.ReasonCode)
				}
			}
			if diff := cmp.Diff(tt.wantEntries, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if r.Omitted != tt.wantOmitted || r.Truncated != tt.wantTruncate {
				t.Errorf("omitted %d truncated %v, want %d %v", r.Omitted, r.Truncated, tt.wantOmitted, tt.wantTruncate)
			}
		})
	}
}

// TestEntrySizes checks that the size Measure charges for each entry is the
// length AppendJSON writes for it with an 11-character handle.
func TestEntrySizes(t *testing.T) {
	long := strings.Repeat("😀", 2500)
	rowsIn := []string{
		`{"a":1}`,
		`{"a":"` + long + `","ifc":{"confidentiality":[{"anyOf":["x\u2028",{"type":"T<>&\"","k":1}]}],"integrity":["I",{"type":"J"}]}}`,
		`{"ifc":{"confidentiality":[]},"a":"\u0001\ud800"}`,
		"{\"a\":\"\xff\xe2\x82\"}",
		`{"a":1,"a":"` + long + `"}`,
		`{"ifc":null}`,
		`{"ifc":{"confidentiality":["S"]}}`,
	}
	m := measurer{
		defined: true,
		ceiling: compileClauses(conf(`"x\u2028"`)),
	}
	m.em.SetLimit(StringBound)
	m.unlabeled = m.infoOf(newLabelRead(Label{Confidentiality: conf(`"x\u2028"`)}, nil))
	for i, row := range rowsIn {
		e, size := m.entry([]byte(row), len(row), OutputBound, nil, LabelSpan{})
		var js []byte
		if e.Admitted {
			js = appendAdmitted(nil, e, HandleStandIn, true)
		} else {
			js = append(append([]byte(withheldHead), jsjson.AppendString(nil, e.ReasonCode)...), '}')
		}
		if !json.Valid(js) {
			t.Errorf("row %d: entry is not valid JSON: %.80s", i, js)
		}
		if got := u16(string(js)); got != size {
			t.Errorf("row %d: Measure charged %d units, AppendJSON writes %d", i, size, got)
		}
	}
}

func TestMeasureNoticeDefault(t *testing.T) {
	if r := Measure(Input{}); r.Notice != Notice {
		t.Errorf("Notice = %q, want the package Notice", r.Notice)
	}
	if r := Measure(Input{Notice: "x"}); r.Notice != "x" {
		t.Errorf("Notice = %q, want x", r.Notice)
	}
}

func TestNotice(t *testing.T) {
	if got := u16(Notice); got != 186 {
		t.Errorf("len(Notice) = %d UTF-16 units, want 186", got)
	}
	for _, w := range []string{"Loom", "search results", "snippets", "pages", "person cards", "events", "context", "untrusted", "instructions", "not operator instructions"} {
		if !strings.Contains(Notice, w) {
			t.Errorf("Notice lacks %q", w)
		}
	}
}

// TestAppendJSONWithinBound measures search-like payloads of various sizes
// and checks the written result against the bound.
func TestAppendJSONWithinBound(t *testing.T) {
	for _, n := range []int{0, 1, 10, 100, 1000, 5000} {
		in := searchInput(n, 7)
		r := Measure(in)
		js := r.AppendJSON(nil, handlesFor(r.Admitted))
		if got := jsjson.UTF16LenBytes(js); got > OutputBound {
			t.Errorf("%d rows: AppendJSON is %d units, over %d", n, got, OutputBound)
		}
		if !json.Valid(js) {
			t.Errorf("%d rows: AppendJSON output is not valid JSON", n)
		}
		if r.Admitted+r.Withheld+r.Omitted != n {
			t.Errorf("%d rows: counts %d+%d+%d", n, r.Admitted, r.Withheld, r.Omitted)
		}
	}
}

func TestMeasureConcurrent(t *testing.T) {
	in := searchInput(300, 3)
	want := string(Measure(in).AppendJSON(nil, handlesFor(300)))
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			if got := string(Measure(in).AppendJSON(nil, handlesFor(300))); got != want {
				t.Errorf("concurrent Measure differs:\n%s", cmp.Diff(want, got))
			}
		})
	}
}

// TestAppendJSONGrowsOnce checks that AppendJSON sizes its output before
// writing it: one allocation for a result of plain strings.
func TestAppendJSONGrowsOnce(t *testing.T) {
	res := Measure(searchInput(60, 3))
	if res.Admitted == 0 || res.Withheld == 0 {
		t.Fatalf("want admitted and withheld entries, got %d and %d", res.Admitted, res.Withheld)
	}
	h := handlesFor(res.Admitted)
	want := res.AppendJSON(nil, h) // reads the disclosures once
	var got []byte
	if n := testing.AllocsPerRun(20, func() { got = res.AppendJSON(nil, h) }); n != 1 {
		t.Errorf("AppendJSON allocated %v times, want 1", n)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendJSON differs between calls:\n%s\n%s", got, want)
	}
}
