package result

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Three held referents. Confidentiality: a={A,B}, b={B,C}, c={D}.
// Integrity: a={I,J}, b={J,K}, c={J}; J is on every row.
const (
	tokA = "cfh:v:abcde"
	tokB = "cfh:v:23456"
	tokC = "cfh:v:zzzzz"
	// tokU is token-shaped but not held.
	tokU = "cfh:v:xyzxy"
)

func conf(texts ...string) ifc.Confidentiality {
	c := ifc.Confidentiality{}
	for _, t := range texts {
		c = append(c, ifc.Clause(t))
	}
	return c
}

func atoms(texts ...string) []ifc.Atom {
	a := []ifc.Atom{}
	for _, t := range texts {
		a = append(a, ifc.Atom(t))
	}
	return a
}

var (
	cA = `"https://x/facet/a"`
	cB = `{"anyOf":["https://x/facet/b","https://x/facet/b2"]}`
	cC = `{"type":"https://x/facet/c","owner":"o"}`
	cD = `"https://x/facet/d"`
	iI = `"https://x/int/i"`
	iJ = `{"type":"https://x/int/j"}`
	iK = `"https://x/int/k"`

	refA = store.Referent{Token: tokA, Kind: "document", Source: "loom_search", Value: jsontext.Value(`{"title":"a","n":1.0}`),
		Label: ifc.Label{Confidentiality: conf(cA, cB), Integrity: atoms(iI, iJ)}, LabelSource: "row"}
	refB = store.Referent{Token: tokB, Kind: "document", Source: "loom_people", Value: jsontext.Value(`{"name":"b"}`),
		Label: ifc.Label{Confidentiality: conf(cB, cC), Integrity: atoms(iJ, iK)}, LabelSource: "row"}
	refC = store.Referent{Token: tokC, Kind: "document", Source: "loom_page_read", Value: jsontext.Value(`"c"`),
		Label: ifc.Label{Confidentiality: conf(cD), Integrity: atoms(iJ)}, LabelSource: "query"}
	// refN has nil label lists, as ifc produces for a public row.
	refN = store.Referent{Token: tokC, Kind: "document", Source: "loom_search", Value: jsontext.Value(`null`), LabelSource: "query"}

	heldABC = []store.Referent{refA, refB, refC}
)

func doc(id string, r store.Referent) store.Document {
	return store.Document{ID: id, Source: r.Source, Value: r.Value, Label: r.Label}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		value     string
		held      []store.Referent
		want      string
		wantDocs  []store.Document
		wantLinks int
	}{
		{
			name:      "exact token becomes link and document",
			value:     `{"best":"` + tokA + `"}`,
			held:      heldABC,
			want:      `{"best":{"@link":"doc-run1-1"}}`,
			wantDocs:  []store.Document{doc("doc-run1-1", refA)},
			wantLinks: 1,
		},
		{
			name:      "link object becomes link",
			value:     `[{"@link":"` + tokB + `"}]`,
			held:      heldABC,
			want:      `[{"@link":"doc-run1-1"}]`,
			wantDocs:  []store.Document{doc("doc-run1-1", refB)},
			wantLinks: 1,
		},
		{
			name:      "same token twice gives one document and two links",
			value:     `["` + tokB + `",{"@link":"` + tokB + `"}]`,
			held:      heldABC,
			want:      `[{"@link":"doc-run1-1"},{"@link":"doc-run1-1"}]`,
			wantDocs:  []store.Document{doc("doc-run1-1", refB)},
			wantLinks: 2,
		},
		{
			name:  "documents numbered in first-citation order",
			value: `["` + tokC + `","` + tokA + `","` + tokC + `"]`,
			held:  heldABC,
			want:  `[{"@link":"doc-run1-1"},{"@link":"doc-run1-2"},{"@link":"doc-run1-1"}]`,
			wantDocs: []store.Document{
				doc("doc-run1-1", refC), doc("doc-run1-2", refA),
			},
			wantLinks: 3,
		},
		{
			name:     "held token in prose stays text",
			value:    `{"note":"see ` + tokA + ` and ` + tokB + `."}`,
			held:     heldABC,
			want:     `{"note":"see ` + tokA + ` and ` + tokB + `."}`,
			wantDocs: []store.Document{},
		},
		{
			name:     "held token padded with a space stays text",
			value:    `" ` + tokA + `"`,
			held:     heldABC,
			want:     `" ` + tokA + `"`,
			wantDocs: []store.Document{},
		},
		{
			name:     "held token as property name stays name",
			value:    `{"` + tokA + `":1,"x ` + tokB + `":2}`,
			held:     heldABC,
			want:     `{"` + tokA + `":1,"x ` + tokB + `":2}`,
			wantDocs: []store.Document{},
		},
		{
			name:     "held token followed by a character outside the alphabet",
			value:    `"` + tokA + `I"`,
			held:     heldABC,
			want:     `"` + tokA + `I"`,
			wantDocs: []store.Document{},
		},
		{
			name:      "escaped token is the same token",
			value:     `"\u0063fh:v:abcde"`,
			held:      heldABC,
			want:      `{"@link":"doc-run1-1"}`,
			wantDocs:  []store.Document{doc("doc-run1-1", refA)},
			wantLinks: 1,
		},
		{
			name:     "link object with the agent's own text stays",
			value:    `{"@link":"https://example.com/x"}`,
			held:     heldABC,
			want:     `{"@link":"https://example.com/x"}`,
			wantDocs: []store.Document{},
		},
		{
			name:     "link object with held token in prose stays",
			value:    `{"@link":"see ` + tokA + `"}`,
			held:     heldABC,
			want:     `{"@link":"see ` + tokA + `"}`,
			wantDocs: []store.Document{},
		},
		{
			name:      "link member beside others is an ordinary member",
			value:     `{"@link":"` + tokA + `","b":1}`,
			held:      heldABC,
			want:      `{"@link":{"@link":"doc-run1-1"},"b":1}`,
			wantDocs:  []store.Document{doc("doc-run1-1", refA)},
			wantLinks: 1,
		},
		{
			name:     "link member with a non-string value",
			value:    `{"@link":["x"]}`,
			held:     heldABC,
			want:     `{"@link":["x"]}`,
			wantDocs: []store.Document{},
		},
		{
			name:      "token as top-level value",
			value:     `"` + tokC + `"`,
			held:      heldABC,
			want:      `{"@link":"doc-run1-1"}`,
			wantDocs:  []store.Document{doc("doc-run1-1", refC)},
			wantLinks: 1,
		},
		{
			name:      "key order number text and escapes",
			value:     " {\"z\": 1.50e+10, \"a\": [-0, 1E2, true, null], \"m\": \"\\u00e9\\t<&>\u2028\", \"k\": {}, \"e\": []} ",
			held:      heldABC,
			want:      "{\"z\":1.50e+10,\"a\":[-0,1E2,true,null],\"m\":\"é\\t<&>\u2028\",\"k\":{},\"e\":[]}",
			wantDocs:  []store.Document{},
			wantLinks: 0,
		},
		{
			name:     "invalid UTF-8 is read as U+FFFD",
			value:    "\"a\xffb\"",
			held:     heldABC,
			want:     "\"a\uFFFDb\"",
			wantDocs: []store.Document{},
		},
		{
			name:     "lone surrogate escape is read as U+FFFD",
			value:    `"\ud800x"`,
			held:     heldABC,
			want:     "\"\uFFFDx\"",
			wantDocs: []store.Document{},
		},
		{name: "null", value: `null`, held: heldABC, want: `null`, wantDocs: []store.Document{}},
		{name: "number", value: `0.10`, held: heldABC, want: `0.10`, wantDocs: []store.Document{}},
		{name: "boolean", value: `false`, held: heldABC, want: `false`, wantDocs: []store.Document{}},
		{name: "plain string", value: `"cfh:v:abcd"`, held: heldABC, want: `"cfh:v:abcd"`, wantDocs: []store.Document{}},
		{name: "nothing held", value: `{"a":"b"}`, held: nil, want: `{"a":"b"}`, wantDocs: []store.Document{}},
		{
			name:      "nil label lists become empty",
			value:     `"` + tokC + `"`,
			held:      []store.Referent{refN},
			want:      `{"@link":"doc-run1-1"}`,
			wantDocs:  []store.Document{{ID: "doc-run1-1", Source: refN.Source, Value: refN.Value, Label: ifc.Label{Confidentiality: conf(), Integrity: atoms()}}},
			wantLinks: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, links, err := Write([]byte(tt.value), "run1", tt.held)
			if err != nil {
				t.Fatalf("Write(%s) error: %v", tt.value, err)
			}
			if got := string(res.Value); got != tt.want {
				t.Errorf("Write(%s) value = %s, want %s", tt.value, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantDocs, res.Documents); diff != "" {
				t.Errorf("Write(%s) documents (-want +got):\n%s", tt.value, diff)
			}
			if links != tt.wantLinks {
				t.Errorf("Write(%s) links = %d, want %d", tt.value, links, tt.wantLinks)
			}
		})
	}
}

func TestWriteLabels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		value       string
		held        []store.Referent
		wantReceipt ifc.Label
		wantLabel   ifc.Label
	}{
		{
			name:        "nothing cited: receipt is every row",
			value:       `null`,
			held:        heldABC,
			wantReceipt: ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
		},
		{
			name:  "one cited: receipt is the others, label is all",
			value: `["` + tokA + `"]`,
			held:  heldABC,
			// b={B,C}, c={D}; integrity b={J,K} meet c={J}.
			wantReceipt: ifc.Label{Confidentiality: conf(cB, cC, cD), Integrity: atoms(iJ)},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
		},
		{
			name:        "two cited: receipt is the third only",
			value:       `["` + tokC + `",{"@link":"` + tokA + `"}]`,
			held:        heldABC,
			wantReceipt: ifc.Label{Confidentiality: conf(cB, cC), Integrity: atoms(iJ, iK)},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
		},
		{
			name:        "prose mention is not a citation",
			value:       `"about ` + tokA + `"`,
			held:        heldABC,
			wantReceipt: ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
		},
		{
			name:        "all cited: receipt is empty",
			value:       `["` + tokA + `","` + tokB + `","` + tokC + `"]`,
			held:        heldABC,
			wantReceipt: ifc.Label{Confidentiality: conf(), Integrity: atoms()},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cC, cD), Integrity: atoms(iJ)},
		},
		{
			name:        "integrity meet is empty when a row has none",
			value:       `1`,
			held:        []store.Referent{refA, {Token: "cfh:v:55555", Label: ifc.Label{Confidentiality: conf(cD)}}},
			wantReceipt: ifc.Label{Confidentiality: conf(cA, cB, cD), Integrity: atoms()},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cD), Integrity: atoms()},
		},
		{
			name:        "label follows table order, not citation order",
			value:       `["` + tokB + `","` + tokA + `"]`,
			held:        []store.Referent{refA, refB},
			wantReceipt: ifc.Label{Confidentiality: conf(), Integrity: atoms()},
			wantLabel:   ifc.Label{Confidentiality: conf(cA, cB, cC), Integrity: atoms(iJ)},
		},
		{
			name:        "nothing held",
			value:       `{}`,
			held:        nil,
			wantReceipt: ifc.Label{Confidentiality: conf(), Integrity: atoms()},
			wantLabel:   ifc.Label{Confidentiality: conf(), Integrity: atoms()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, _, err := Write([]byte(tt.value), "run1", tt.held)
			if err != nil {
				t.Fatalf("Write(%s) error: %v", tt.value, err)
			}
			if diff := cmp.Diff(tt.wantReceipt, res.Receipt); diff != "" {
				t.Errorf("Write(%s) receipt (-want +got):\n%s", tt.value, diff)
			}
			if diff := cmp.Diff(tt.wantLabel, res.Label); diff != "" {
				t.Errorf("Write(%s) label (-want +got):\n%s", tt.value, diff)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	deep := func(n int, inner string) string {
		return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
	}
	// A table listing a token longer than minted (no store does) cannot
	// make it citable: a longer run resolves to nothing.
	long := store.Referent{Token: tokA + "f", Label: refA.Label}
	held := append([]store.Referent{long}, heldABC...)
	tests := []struct {
		name  string
		value string
		want  error
	}{
		{"unheld value token", `{"a":"` + tokU + `"}`, ErrUnheldHandle},
		{"unheld token inside a string", `["see ` + tokU + ` here"]`, ErrUnheldHandle},
		{"unheld token as property name", `{"` + tokU + `":1}`, ErrUnheldHandle},
		{"unheld token inside a property name", `{"k-` + tokU + `":1}`, ErrUnheldHandle},
		{"unheld token in a later property name", `{"a":1,"` + tokU + `":2}`, ErrUnheldHandle},
		{"unheld token in a nested property name", `[{"@link":"x","b":{"c":0,"k ` + tokU + `":1}}]`, ErrUnheldHandle},
		{"unheld token in link object", `{"@link":"` + tokU + `"}`, ErrUnheldHandle},
		{"unheld token in link prose", `{"@link":"see ` + tokU + `"}`, ErrUnheldHandle},
		{"unheld token in link member beside others", `{"@link":"` + tokU + `","b":1}`, ErrUnheldHandle},
		{"address token as value", `"cfh:a:abcde"`, ErrUnheldHandle},
		{"address token in link object", `{"@link":"cfh:a:abcde"}`, ErrUnheldHandle},
		{"address token inside a string", `"x cfh:a:23456 y"`, ErrUnheldHandle},
		{"address token as property name", `{"cfh:a:23456":true}`, ErrUnheldHandle},
		{"address token with held suffix", `"cfh:a:abcde"`, ErrUnheldHandle},
		{"six characters extending a held token", `"` + tokA + `f"`, ErrUnheldHandle},
		{"six characters extending a held token in prose", `"see ` + tokA + `f."`, ErrUnheldHandle},
		{"six characters extending a held token in link", `{"@link":"` + tokA + `f"}`, ErrUnheldHandle},
		{"six characters extending a held token in a name", `{"` + tokA + `f":0}`, ErrUnheldHandle},
		{"escaped unheld token", `"\u0063fh:v:xyzxy"`, ErrUnheldHandle},
		{"one unheld among held", `["` + tokA + `",{"@link":"` + tokB + `"},"` + tokU + `","` + tokC + `"]`, ErrUnheldHandle},
		{"unheld after a link", `{"a":"` + tokA + `","z":{"y":"` + tokU + `"}}`, ErrUnheldHandle},
		{"over-long table token", `"` + long.Token + `"`, ErrUnheldHandle},
		{"over-long table token in link", `{"@link":"` + long.Token + `"}`, ErrUnheldHandle},
		{"empty", ``, ErrInvalidValue},
		{"blank", ` `, ErrInvalidValue},
		{"truncated", `{"a":`, ErrInvalidValue},
		{"trailing value", `1 2`, ErrInvalidValue},
		{"trailing garbage", `{}x`, ErrInvalidValue},
		{"duplicate name", `{"a":1,"a":2}`, ErrInvalidValue},
		{"bad link object", `{"@link":"x",}`, ErrInvalidValue},
		{"too deep", deep(maxDepth+1, ``), ErrTooDeep},
		{"link too deep", deep(maxDepth, `"`+tokA+`"`), ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, links, err := Write([]byte(tt.value), "run1", held)
			if !errors.Is(err, tt.want) {
				t.Errorf("Write(%.40s) error = %v, want %v", tt.value, err, tt.want)
			}
			if diff := cmp.Diff(store.Result{}, res); diff != "" || links != 0 {
				t.Errorf("Write(%.40s) = %d links, result (-want +got):\n%s", tt.value, links, diff)
			}
		})
	}
}

func TestWriteDepth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		depth int
		inner string
		want  string
	}{
		{"deepest container", maxDepth, ``, ``},
		{"deepest link", maxDepth - 1, `"` + tokA + `"`, `{"@link":"doc-run1-1"}`},
		{"deepest link object", maxDepth - 1, `{"@link":"` + tokA + `"}`, `{"@link":"doc-run1-1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			open, closing := strings.Repeat("[", tt.depth), strings.Repeat("]", tt.depth)
			res, _, err := Write([]byte(open+tt.inner+closing), "run1", heldABC)
			if err != nil {
				t.Fatalf("Write(depth %d) error: %v", tt.depth, err)
			}
			if want := open + tt.want + closing; string(res.Value) != want {
				t.Errorf("Write(depth %d) value differs from input", tt.depth)
			}
		})
	}
}
