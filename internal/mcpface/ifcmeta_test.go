package mcpface

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
)

// TestIFCProjectionShapes: the projection of each shape of result.
func TestIFCProjectionShapes(t *testing.T) {
	const work = "https://loom.example/facet/work"
	trustedTypes := IFCLabels{On: true, TrustedIntegrity: []string{"https://loom.example/integrity/signed"}}
	plain := IFCLabels{On: true}
	entry := func(conf, integ string) string {
		return `{"status":"admitted","label":{"confidentiality":` + conf + `,"integrity":` + integ + `},"labelSource":"row","value":{},"handle":"cfh:v:22222"}`
	}
	withheld := `{"status":"withheld","reasonCode":"cfc_ceiling_exceeded"}`
	loom := func(withheldN, omitted int, envelope string, entries ...string) string {
		admitted := 0
		for _, e := range entries {
			if strings.Contains(e, `"admitted"`) {
				admitted++
			}
		}
		env := ""
		if envelope != "" {
			env = `,"envelope":` + envelope
		}
		return fmt.Sprintf(`{"outputId":"r:loom_search:1","status":"ok","kind":"search","notice":"n","admitted":%d,"withheld":%d,"omitted":%d,"truncated":false%s,"entries":[%s]}`,
			admitted, withheldN, omitted, env, strings.Join(entries, ","))
	}
	signed := `["https://loom.example/integrity/signed"]`
	for _, c := range []struct {
		name    string
		labels  IFCLabels
		tool    string
		body    string
		isError bool
		want    ifcLabel
	}{
		{"no rows", plain, "loom_search", loom(0, 0, ""), false, ifcLabel{ifcUntrusted, ifcPublic}},
		{"no rows, trusted types", trustedTypes, "loom_profile", loom(0, 0, ""), false, ifcLabel{ifcTrusted, ifcPublic}},
		{"public rows", plain, "loom_search", loom(0, 0, "", entry(`[]`, `[]`), entry(`[]`, signed)), false, ifcLabel{ifcUntrusted, ifcPublic}},
		{"public rows, all signed", trustedTypes, "loom_search", loom(0, 0, "", entry(`[]`, signed), entry(`[]`, `["x",`+signed[1:])), false, ifcLabel{ifcTrusted, ifcPublic}},
		{"one row unsigned", trustedTypes, "loom_search", loom(0, 0, "", entry(`[]`, signed), entry(`[]`, `["x"]`)), false, ifcLabel{ifcUntrusted, ifcPublic}},
		{"rows of several labels", trustedTypes, "loom_search", loom(0, 0, "", entry(`[]`, signed), entry(`[["`+work+`"]]`, signed)), false, ifcLabel{ifcTrusted, ifcPrivate}},
		{"an unlabeled row", plain, "loom_search", loom(0, 0, "", strings.Replace(entry(`[]`, `[]`), `"labelSource":"row"`, `"labelSource":"query"`, 1)), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an OR clause", plain, "loom_page_read", loom(0, 0, "", entry(`[["`+work+`","https://loom.example/facet/home"]]`, `[]`)), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"all withheld", trustedTypes, "loom_search", loom(2, 0, "", withheld, withheld), false, ifcLabel{ifcTrusted, ifcPrivate}},
		{"public and withheld", plain, "loom_search", loom(1, 0, "", entry(`[]`, `[]`), withheld), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"omitted rows", plain, "loom_search", loom(0, 3, "", entry(`[]`, `[]`)), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an envelope", trustedTypes, "loom_search", loom(0, 0, `{"query":"atlas"}`, entry(`[]`, signed)), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an empty envelope", trustedTypes, "loom_page_discover", loom(0, 0, `{}`, entry(`[]`, signed)), false, ifcLabel{ifcTrusted, ifcPublic}},
		{"a label without confidentiality", plain, "loom_search", loom(0, 0, "", `{"status":"admitted","label":{"integrity":[]}}`), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an entry without label", trustedTypes, "loom_search", loom(0, 0, "", `{"status":"admitted"}`), false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an error", trustedTypes, "loom_search", `{"type":"about:blank","title":"t","status":400,"detail":"d","code":"invalid_input"}`, true, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an error of the result tool", trustedTypes, "result", `{"code":"result_exists"}`, true, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"not JSON", trustedTypes, "loom_search", `{`, false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"an error status", trustedTypes, "loom_search", `{"status":"error","entries":[],"withheld":0,"omitted":0}`, false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"describe, unknown", plain, "describe_handle", `{"outputId":"r:describe_handle:2","token":"cfh:v:22222","known":false}`, false, ifcLabel{ifcTrusted, ifcPublic}},
		{"describe, public", trustedTypes, "describe_handle", `{"outputId":"r:describe_handle:2","token":"cfh:v:22222","known":true,"referent":{"kind":"document","source":"loom_search","labelSource":"row"},"label":{"confidentiality":[],"integrity":` + signed + `}}`, false, ifcLabel{ifcUntrusted, ifcPublic}},
		{"describe, labelled", plain, "describe_handle", `{"outputId":"r:describe_handle:2","token":"cfh:v:22222","known":true,"referent":{"kind":"document","source":"loom_search","labelSource":"row"},"label":{"confidentiality":[["` + work + `"]],"integrity":[]}}`, false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"describe, no label", plain, "describe_handle", `{"known":true}`, false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"describe, no known", plain, "describe_handle", `{}`, false, ifcLabel{ifcUntrusted, ifcPrivate}},
		{"result written", plain, "result", `{"documents":1,"links":1,"status":"ok"}`, false, ifcLabel{ifcTrusted, ifcPublic}},
		{"result, not ok", plain, "result", `{"documents":1}`, false, ifcLabel{ifcUntrusted, ifcPrivate}},
	} {
		if got := c.labels.project(c.tool, []byte(c.body), c.isError); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestIFCProjectionOff: off, no call result has a _meta, on either path.
func TestIFCProjectionOff(t *testing.T) {
	body := []byte(`{"documents":1,"links":1,"status":"ok"}`)
	var off IFCLabels
	if m := off.meta("result", body, false); m != nil {
		t.Errorf("off: meta %s", m)
	}
	if res := off.labelled(result(body, false), "result", body, false); res.Meta != nil {
		t.Errorf("off: the SDK's result has _meta %v", res.Meta)
	}
	on := IFCLabels{On: true}
	res := on.labelled(result(body, false), "result", body, false)
	got, _ := json.Marshal(res.Meta)
	if string(got) != `{"ifc":{"integrity":"trusted","confidentiality":"public"}}` {
		t.Errorf("on: the SDK's result has _meta %s", got)
	}
	direct := toolResult([]byte("1"), body, false, withMember(nil, on.meta("result", body, false)))
	if !bytes.Contains(direct, []byte(`"_meta":{"ifc":{"integrity":"trusted","confidentiality":"public"}}`)) {
		t.Errorf("on: the direct result is %s", direct)
	}
	for _, c := range []struct{ obj, want string }{
		{"", `{"m":1}`}, {"{}", `{"m":1}`}, {`{"a":2}`, `{"m":1,"a":2}`}, {`{"a":2,"b":3}`, `{"m":1,"a":2,"b":3}`},
	} {
		var obj []byte
		if c.obj != "" {
			obj = []byte(c.obj)
		}
		if got := withMember(obj, []byte(`"m":1`)); string(got) != c.want {
			t.Errorf("withMember(%s): %s, want %s", c.obj, got, c.want)
		}
	}
}

// TestIFCProjectionNeverLooser measures random payloads as the core does
// (ifc.Measure, then the agent's bytes) and holds the projection of what
// the agent is shown to the truth of the measurement: "public" only when
// the join of the admitted rows' full confidentiality is empty and nothing
// withheld, omitted or from the envelope is shown; "trusted" only when
// every admitted row's full integrity holds an atom of a listed type.
func TestIFCProjectionNeverLooser(t *testing.T) {
	atoms := []string{
		`"https://loom.example/facet/work"`, `"https://loom.example/facet/home"`,
		`{"type":"https://loom.example/facet/health","who":"x"}`, `"https://loom.example/cfc/atom/Public"`,
	}
	integrity := []string{`"https://loom.example/integrity/signed"`, `{"type":"https://loom.example/integrity/signed","by":"k"}`, `"https://loom.example/integrity/other"`}
	labels := IFCLabels{On: true, TrustedIntegrity: []string{"https://loom.example/integrity/signed"}}
	rng := rand.New(rand.NewPCG(41, 5))
	pick := func(pool []string, n int) []string {
		var out []string
		for range n {
			out = append(out, pool[rng.IntN(len(pool))])
		}
		return out
	}
	var seen [2][2]int
	for i := range 4000 {
		var in ifc.Input
		in.OutputID, in.Command = "r:loom_search:1", "search"
		rows := rng.IntN(5)
		for range rows {
			switch rng.IntN(6) {
			case 0: // unlabeled
				in.Rows = append(in.Rows, jsontext.Value(`{"title":"t"}`))
			case 1: // unreadable
				in.Rows = append(in.Rows, jsontext.Value(`{"title":"t","ifc":{"confidentiality":7}}`))
			default:
				var conf []string
				for _, a := range pick(atoms, rng.IntN(3)) {
					if rng.IntN(3) == 0 {
						a = `{"anyOf":[` + a + `,` + atoms[rng.IntN(len(atoms))] + `]}`
					}
					conf = append(conf, a)
				}
				in.Rows = append(in.Rows, jsontext.Value(`{"title":"t","ifc":{"confidentiality":[`+strings.Join(conf, ",")+
					`],"integrity":[`+strings.Join(pick(integrity, rng.IntN(3)), ",")+`]}}`))
			}
		}
		switch rng.IntN(3) {
		case 0:
			in.Ceiling = ifc.NoCeiling
		case 1:
			in.Ceiling = ifc.CeilingOf(nil)
		default:
			in.Ceiling = ifc.CeilingOf(ifc.Confidentiality{ifc.Clause(atoms[0]), ifc.Clause(atoms[2])})
		}
		if rng.IntN(3) == 0 {
			in.Unlabeled = ifc.Label{Confidentiality: ifc.Confidentiality{ifc.Clause(atoms[rng.IntN(len(atoms))])}}
		}
		if rng.IntN(2) == 0 {
			in.Envelope = jsontext.Value(`{"query":"atlas"}`)
		}
		if rng.IntN(8) == 0 {
			in.Envelope = jsontext.Value(`{}`)
		}
		res := ifc.Measure(in)
		handles := make([]string, res.Admitted)
		for j := range handles {
			handles[j] = "cfh:v:22222"
		}
		body := res.AppendJSON(nil, handles)
		got := labels.project("loom_search", body, false)
		if got.Confidentiality == ifcPublic {
			if len(res.Observed) > 0 || res.Withheld > 0 || res.Omitted > 0 || len(res.Envelope) > 2 {
				t.Fatalf("%d: public, but observed %v, withheld %d, omitted %d, envelope %s: %s", i, res.Observed, res.Withheld, res.Omitted, res.Envelope, body)
			}
			for _, e := range res.Entries {
				if e.Admitted && e.LabelSource != ifc.SourceRow {
					t.Fatalf("%d: public with an unlabeled row: %s", i, body)
				}
			}
		}
		if got.Integrity == ifcTrusted {
			for _, e := range res.Entries {
				if !e.Admitted {
					continue
				}
				if !slices.ContainsFunc(e.Label.Integrity, func(a ifc.Atom) bool {
					return strings.Contains(string(a), `"https://loom.example/integrity/signed"`)
				}) {
					t.Fatalf("%d: trusted, but an admitted row's integrity is %s: %s", i, e.Label.Integrity, body)
				}
			}
			if len(res.Envelope) > 2 {
				t.Fatalf("%d: trusted with an envelope: %s", i, body)
			}
		}
		ci, cc := 0, 0
		if got.Integrity == ifcTrusted {
			ci = 1
		}
		if got.Confidentiality == ifcPublic {
			cc = 1
		}
		seen[ci][cc]++
	}
	// Each of the four labels came out: the test holds a projection that
	// says something, not only the most restrictive.
	for ci := range 2 {
		for cc := range 2 {
			if seen[ci][cc] == 0 {
				t.Errorf("no result projected to trusted=%v public=%v: %v", ci == 1, cc == 1, seen)
			}
		}
	}
}
