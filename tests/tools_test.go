package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// subjectField is a field of an object atom: only the atom's type may
// reach the agent, never its other fields.
const subjectField = "did:ex:SUBJECT-FIELD-61"

// fill replaces the placeholders of a payload template: {W} work, {H}
// health, {U} the user atom type, {S} signed, {X} the withheld marker,
// {SUBJ} the subject field.
func fill(s string) string {
	return strings.NewReplacer("{W}", atomWork, "{H}", atomHealth, "{U}", atomUser, "{S}", atomSigned, "{X}", markerWithheld, "{SUBJ}", subjectField).Replace(s)
}

var handlePattern = regexp.MustCompile(`^cfh:v:[23456789abcdefghjkmnpqrstvwxyz]{5}$`)

// entryView is an entry without its handle, for comparison.
type entryView struct {
	Status      string
	ReasonCode  string
	Conf        [][]string
	Integ       []string
	LabelSource string
	Value       string // the value's JSON text exactly as sent
	Truncated   bool
}

func admittedEntry(conf [][]string, integ []string, source, value string) entryView {
	return entryView{Status: "admitted", Conf: conf, Integ: integ, LabelSource: source, Value: fill(value)}
}

func withheldEntry(reason string) entryView {
	return entryView{Status: "withheld", ReasonCode: reason}
}

// views returns the entries' views and the handles of the admitted ones,
// checking each handle's shape and that withheld entries carry nothing.
func views(t testing.TB, es []client.Entry) ([]entryView, []string) {
	t.Helper()
	var out []entryView
	var handles []string
	for i, e := range es {
		v := entryView{Status: string(e.Status)}
		switch e.Status {
		case "admitted":
			if e.Label == nil || e.LabelSource == nil || e.Value == nil || e.Handle == nil {
				t.Fatalf("entry %d: admitted without label, labelSource, value or handle", i)
			}
			if e.ReasonCode != nil {
				t.Errorf("entry %d: admitted with a reasonCode", i)
			}
			v.Conf, v.Integ, v.LabelSource, v.Value = e.Label.Confidentiality, e.Label.Integrity, string(*e.LabelSource), string(*e.Value)
			v.Truncated = e.Truncated != nil && *e.Truncated
			if !handlePattern.MatchString(*e.Handle) {
				t.Errorf("entry %d: handle %q is not cfh:v: and five alphabet characters", i, *e.Handle)
			}
			handles = append(handles, *e.Handle)
		case "withheld":
			if e.ReasonCode == nil {
				t.Fatalf("entry %d: withheld without reasonCode", i)
			}
			if e.Label != nil || e.Value != nil || e.Handle != nil || e.LabelSource != nil {
				t.Errorf("entry %d: withheld entry carries more than its reason", i)
			}
			v.ReasonCode = string(*e.ReasonCode)
		default:
			t.Errorf("entry %d: status %q", i, e.Status)
		}
		out = append(out, v)
	}
	return out, handles
}

var equateEmpty = cmpopts.EquateEmpty()

// toolCase is one tool end to end: what loom prints, what the agent must
// get, and what the host's call log must record.
type toolCase struct {
	tool, kind, body, payload string
	entries                   []entryView
	envelope                  string // JSON text; "" when the result has none
	observed                  []string
	fullLabels                []string // per admitted entry: {"confidentiality","integrity"} as JSON
}

var w, h = [][]string{{atomWork}}, [][]string{{atomHealth}}

var toolCases = []toolCase{
	{
		tool: "loom_search", kind: "search", body: `{"query":"atlas"}`,
		payload: `{"schemaVersion":1,"query":"atlas","hits":[` +
			`{"id":"s1","title":"Atlas kickoff","score":0.50,"ifc":{"confidentiality":["{W}"]}},` +
			`{"id":"s2","body":"{X}","ifc":{"confidentiality":["{H}"]}},` +
			`{"id":"s3","title":"no label","n":1e2},` +
			`{"id":"s4","ifc":{"confidentiality":"{W}"},"secret":"{X}"},` +
			`{"ifc":{"confidentiality":[{"anyOf":["{W}",{"type":"{U}","subject":"{SUBJ}"}]}],"integrity":["{S}"]},"id":"s5","nested":{"ifc":"kept"},"text":"<a&b> \u2028"},` +
			`"{X} as a bare row"` +
			`],"source_status":{"mail":"ok"},"warnings":[],"filters":{"x":1},"truncated":false}`,
		entries: []entryView{
			admittedEntry(w, nil, "row", `{"id":"s1","title":"Atlas kickoff","score":0.50}`),
			withheldEntry("cfc_ceiling_exceeded"),
			admittedEntry(nil, nil, "query", `{"id":"s3","title":"no label","n":1e2}`),
			withheldEntry("cfc_label_read_failed"),
			admittedEntry([][]string{{atomWork, atomUser}}, []string{atomSigned}, "row", `{"id":"s5","nested":{"ifc":"kept"},"text":"<a&b> `+"\u2028"+`"}`),
			withheldEntry("cfc_label_read_failed"),
		},
		envelope: `{"query":"atlas","source_status":{"mail":"ok"},"warnings":[],"truncated":false}`,
		observed: []string{`"{W}"`, `{"anyOf":["{W}",{"type":"{U}","subject":"{SUBJ}"}]}`},
		fullLabels: []string{
			`{"confidentiality":["{W}"],"integrity":[]}`,
			`{"confidentiality":[],"integrity":[]}`,
			`{"confidentiality":[{"anyOf":["{W}",{"type":"{U}","subject":"{SUBJ}"}]}],"integrity":["{S}"]}`,
		},
	},
	{
		tool: "loom_page_discover", kind: "page.discover", body: `{"kind":"projects"}`,
		payload: `{"concise":true,"pages":[{"path":"Projects/Atlas/about.md","kind":"project","ifc":{"confidentiality":["{W}"]}},` +
			`{"path":"Entities/Clinic/about.md","note":"{X}","ifc":{"confidentiality":["{H}"]}}],"omittedViews":["board"],"totalPages":2}`,
		entries: []entryView{
			admittedEntry(w, nil, "row", `{"path":"Projects/Atlas/about.md","kind":"project"}`),
			withheldEntry("cfc_ceiling_exceeded"),
		},
		envelope:   `{"omittedViews":["board"],"totalPages":2}`,
		observed:   []string{`"{W}"`},
		fullLabels: []string{`{"confidentiality":["{W}"],"integrity":[]}`},
	},
	{
		tool: "loom_page_inspect", kind: "page.inspect", body: `{"target":"Projects/Atlas/about.md"}`,
		payload: `{"path":"Projects/Atlas/about.md","ifc":{"confidentiality":["{W}"]},"context":{"summary":"Atlas"},"ok":true}`,
		entries: []entryView{
			admittedEntry(w, nil, "row", `{"path":"Projects/Atlas/about.md","context":{"summary":"Atlas"},"ok":true}`),
		},
		observed:   []string{`"{W}"`},
		fullLabels: []string{`{"confidentiality":["{W}"],"integrity":[]}`},
	},
	{
		tool: "loom_page_read", kind: "page.read", body: `{"target":"Health/notes.md"}`,
		payload: `{"path":"Health/notes.md","source":"{X}","ifc":{"confidentiality":["{H}"]}}`,
		entries: []entryView{withheldEntry("cfc_ceiling_exceeded")},
	},
	{
		tool: "loom_people", kind: "people", body: `{"query":"ada@example.com","shape":"card"}`,
		payload: `{"name":"Ada","email":"ada@example.com"}`,
		entries: []entryView{
			admittedEntry(nil, nil, "query", `{"name":"Ada","email":"ada@example.com"}`),
		},
		fullLabels: []string{`{"confidentiality":[],"integrity":[]}`},
	},
	{
		tool: "loom_calendar_list", kind: "calendar.list", body: `{"from":"2026-12-01","to":"2026-12-31"}`,
		payload: `[{"title":"Standup","start":"2026-12-01T09:00:00Z","ifc":{"confidentiality":["{W}"]}},` +
			`{"title":"{X}","ifc":{"confidentiality":["{W}","{H}"]}},` +
			`{"title":"Either","ifc":{"confidentiality":[{"anyOf":["{H}","{W}"]}]}},7]`,
		entries: []entryView{
			admittedEntry(w, nil, "row", `{"title":"Standup","start":"2026-12-01T09:00:00Z"}`),
			withheldEntry("cfc_ceiling_exceeded"),
			admittedEntry([][]string{{atomHealth, atomWork}}, nil, "row", `{"title":"Either"}`),
			withheldEntry("cfc_label_read_failed"),
		},
		observed: []string{`"{W}"`, `{"anyOf":["{H}","{W}"]}`},
		fullLabels: []string{
			`{"confidentiality":["{W}"],"integrity":[]}`,
			`{"confidentiality":[{"anyOf":["{H}","{W}"]}],"integrity":[]}`,
		},
	},
	{
		tool: "loom_context", kind: "context", body: `{"read":"where"}`,
		payload: `{"read":"where","place":"office","ifc":{"confidentiality":[]}}`,
		entries: []entryView{
			admittedEntry(nil, nil, "row", `{"read":"where","place":"office"}`),
		},
		fullLabels: []string{`{"confidentiality":[],"integrity":[]}`},
	},
	{
		tool: "loom_profile", kind: "profile", body: `{}`,
		payload: `{"hasProfile":true,"name":"Ada","ifc":{"confidentiality":["{W}"],"integrity":[{"type":"{S}","by":"{SUBJ}"}]}}`,
		entries: []entryView{
			admittedEntry(w, []string{atomSigned}, "row", `{"hasProfile":true,"name":"Ada"}`),
		},
		observed:   []string{`"{W}"`},
		fullLabels: []string{`{"confidentiality":["{W}"],"integrity":[{"type":"{S}","by":"{SUBJ}"}]}`},
	},
}

// TestToolResults runs every tool end to end under a work-only ceiling:
// the agent's result, the host's call log and handle table, and
// describe_handle on what was admitted.
func TestToolResults(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	for _, tc := range toolCases {
		g.setBehaviour(t, commandOf(tc.tool), behaviour{Stdout: fill(tc.payload)})
	}
	for _, tc := range toolCases {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			r := g.workRun(t)
			rep := r.call(t, tc.tool, tc.body)
			if rep.Status != http.StatusOK || rep.Result == nil {
				t.Fatalf("status %d %s, want 200", rep.Status, rep.Body)
			}
			checkAgentResult(t, rep.Body)
			res := rep.Result
			if want := r.ID + ":" + tc.tool + ":1"; res.OutputId != want {
				t.Errorf("outputId = %q, want %q", res.OutputId, want)
			}
			if string(res.Kind) != tc.kind || res.Status != "ok" {
				t.Errorf("kind, status = %q, %q, want %q, ok", res.Kind, res.Status, tc.kind)
			}
			got, handles := views(t, res.Entries)
			if diff := cmp.Diff(tc.entries, got, equateEmpty); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			nAdm, nWith := 0, 0
			for _, e := range tc.entries {
				if e.Status == "admitted" {
					nAdm++
				} else {
					nWith++
				}
			}
			if res.Admitted != nAdm || res.Withheld != nWith || res.Omitted != 0 || res.Truncated {
				t.Errorf("counts admitted %d withheld %d omitted %d truncated %v, want %d %d 0 false", res.Admitted, res.Withheld, res.Omitted, res.Truncated, nAdm, nWith)
			}
			checkEnvelope(t, rep.Body, tc.envelope)
			if strings.Contains(string(rep.Body), subjectField) {
				t.Errorf("an object atom's field reached the agent")
			}
			if len(slices.Compact(slices.Sorted(slices.Values(handles)))) != len(handles) {
				t.Errorf("distinct rows share a handle: %v", handles)
			}

			// The host's call log has the cfc join the agent never sees.
			calls := r.calls(t)
			if len(calls) != 1 {
				t.Fatalf("%d calls logged, want 1", len(calls))
			}
			c := calls[0]
			if c.OutputId != res.OutputId || c.Tool != tc.tool || c.Status != "ok" || c.Code != nil || c.Cfc.Version != 1 {
				t.Errorf("call record %+v does not match the call", c)
			}
			if c.Admitted != nAdm || c.Withheld != nWith || c.Omitted != 0 || c.Truncated {
				t.Errorf("call record counts %d/%d/%d/%v", c.Admitted, c.Withheld, c.Omitted, c.Truncated)
			}
			if c.ExitCode == nil || *c.ExitCode != 0 {
				t.Errorf("call record exitCode = %v, want 0", deref(c.ExitCode))
			}
			var observed []string
			if c.Cfc.ObservedLabel != nil {
				observed = canonList(t, c.Cfc.ObservedLabel.Confidentiality)
			}
			if diff := cmp.Diff(canonTemplates(t, tc.observed), observed, equateEmpty); diff != "" {
				t.Errorf("cfc.observedLabel (-want +got):\n%s", diff)
			}
			if c.Entries == nil || len(*c.Entries) != len(tc.entries) {
				t.Fatalf("call record entries = %v, want %d", c.Entries, len(tc.entries))
			}
			k := 0
			for i, e := range *c.Entries {
				want := tc.entries[i]
				switch {
				case string(e.Status) != want.Status:
					t.Errorf("logged entry %d status %q, want %q", i, e.Status, want.Status)
				case want.Status == "withheld" && deref(e.ReasonCode) != want.ReasonCode:
					t.Errorf("logged entry %d reason %v, want %q", i, deref(e.ReasonCode), want.ReasonCode)
				case want.Status == "admitted":
					if deref(e.Handle) != handles[k] || deref(e.LabelSource) != want.LabelSource {
						t.Errorf("logged entry %d handle %v labelSource %v, want %q %q", i, deref(e.Handle), deref(e.LabelSource), handles[k], want.LabelSource)
					}
					k++
				}
			}

			// The handle table holds exactly what was admitted, as the
			// agent saw it, with the full label.
			refs := r.handles(t)
			if len(refs) != len(handles) {
				t.Fatalf("%d handles held, want %d", len(refs), len(handles))
			}
			adm := 0
			for _, e := range tc.entries {
				if e.Status != "admitted" {
					continue
				}
				ref := refs[adm]
				if ref.Token != handles[adm] || string(ref.Source) != tc.tool || string(ref.Kind) != "document" || string(ref.LabelSource) != e.LabelSource {
					t.Errorf("handle %d = %s %s %s %s", adm, ref.Token, ref.Source, ref.Kind, ref.LabelSource)
				}
				if canon(t, ref.Value) != canon(t, []byte(e.Value)) {
					t.Errorf("handle %d value %s, want %s", adm, ref.Value, e.Value)
				}
				label, _ := json.Marshal(ref.Label)
				if got, want := canon(t, label), canon(t, []byte(fill(tc.fullLabels[adm]))); got != want {
					t.Errorf("handle %d label %s, want %s", adm, got, want)
				}
				adm++
			}

			// describe_handle tells kind, source, labelSource and types,
			// and when the handle ends (the run's expiry), never the value.
			expires := r.summary(t).ExpiresAt
			for i, hd := range handles {
				d := r.call(t, "describe_handle", `{"token":"  `+hd+` "}`)
				if d.Status != http.StatusOK || d.Handle == nil {
					t.Fatalf("describe_handle: %d %s", d.Status, d.Body)
				}
				a := findAdmitted(got, i)
				want := client.HandleDescription{
					OutputId:  fmt.Sprintf("%s:describe_handle:%d", r.ID, i+2),
					Token:     hd,
					Known:     true,
					Label:     &client.DisclosedLabel{Confidentiality: a.Conf, Integrity: a.Integ},
					ExpiresAt: &expires,
				}
				want.Referent = d.Handle.Referent
				if diff := cmp.Diff(want, *d.Handle, equateEmpty); diff != "" {
					t.Errorf("describe_handle (-want +got):\n%s", diff)
				}
				if ref := d.Handle.Referent; ref == nil || ref.Kind != "document" || string(ref.Source) != tc.tool || string(ref.LabelSource) != a.LabelSource {
					t.Errorf("describe_handle referent = %+v", ref)
				}
				if keys := testkit.ObjectKeys(t, d.Body); contains(keys, "value") || strings.Contains(string(d.Body), a.Value) {
					t.Errorf("describe_handle shows the value: %s", d.Body)
				}
			}

			s := r.summary(t)
			if s.Calls != 1+len(handles) || s.Handles != len(handles) {
				t.Errorf("summary calls %d handles %d, want %d %d", s.Calls, s.Handles, 1+len(handles), len(handles))
			}
			if diff := cmp.Diff(canonTemplates(t, tc.observed), canonList(t, s.ModelContextLabel.Confidentiality), equateEmpty); diff != "" {
				t.Errorf("modelContextLabel after the call (-want +got):\n%s", diff)
			}
		})
	}
}

// findAdmitted returns the i-th admitted view.
func findAdmitted(vs []entryView, i int) entryView {
	for _, v := range vs {
		if v.Status == "admitted" {
			if i == 0 {
				return v
			}
			i--
		}
	}
	return entryView{}
}

// checkEnvelope compares the result's envelope, key order included, with
// want ("" = no envelope).
func checkEnvelope(t testing.TB, body []byte, want string) {
	t.Helper()
	var res struct {
		Envelope json.RawMessage `json:"envelope"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if want == "" {
		if res.Envelope != nil {
			t.Errorf("envelope %s, want none", res.Envelope)
		}
		return
	}
	if res.Envelope == nil {
		t.Fatalf("no envelope, want %s", want)
	}
	if diff := cmp.Diff(testkit.ObjectKeys(t, []byte(want)), testkit.ObjectKeys(t, res.Envelope)); diff != "" {
		t.Errorf("envelope key order (-want +got):\n%s", diff)
	}
	if got, w := canon(t, res.Envelope), canon(t, []byte(want)); got != w {
		t.Errorf("envelope = %s, want %s", got, w)
	}
}

// canonTemplates fills and canonicalises clause templates.
func canonTemplates(t testing.TB, list []string) []string {
	t.Helper()
	out := []string{}
	for _, c := range list {
		out = append(out, canon(t, []byte(fill(c))))
	}
	return out
}

// commandOf is the loom command (fake loom behaviour key) of a tool.
func commandOf(tool string) string {
	return map[string]string{
		"loom_search": "search", "loom_page_discover": "page.discover", "loom_page_inspect": "page.inspect",
		"loom_page_read": "page.read", "loom_people": "people", "loom_calendar_list": "calendar.list",
		"loom_context": "context", "loom_profile": "profile",
	}[tool]
}

// TestToolArgvAndEnv pins the exact argv and environment the gateway gives
// loom for each tool and each way of filling its input, and that every call
// of a run takes the next output number.
func TestToolArgvAndEnv(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	for cmdName, out := range map[string]string{
		"search": `{"hits":[]}`, "page.discover": `{"pages":[]}`, "page.inspect": `{}`, "page.read": `{}`,
		"people": `{}`, "calendar.list": `[]`, "context": `{}`, "profile": `{}`,
	} {
		g.setBehaviour(t, cmdName, behaviour{Stdout: out})
	}
	cases := []struct {
		name, tool, body string
		argv             []string
	}{
		{"search all fields", "loom_search", `{"query":"atlas plans","sources":"mail,notes","since":"2026-01-01","until":"2026-02-01","tz":"Europe/Zurich","person":"ada@example.com","limit":5,"rank":"score"}`,
			[]string{"search", "atlas plans", "--json", "--sources", "mail,notes", "--since", "2026-01-01", "--until", "2026-02-01", "--tz", "Europe/Zurich", "--person", "ada@example.com", "--limit", "5", "--rank", "score"}},
		{"search fields in another order", "loom_search", `{"rank":"recency","limit":200,"query":"q","tz":"UTC"}`,
			[]string{"search", "q", "--json", "--tz", "UTC", "--limit", "200", "--rank", "recency"}},
		{"search query only", "loom_search", `{"query":"atlas"}`, []string{"search", "atlas", "--json"}},
		{"search person only", "loom_search", `{"person":"ada@example.com"}`, []string{"search", "--json", "--person", "ada@example.com"}},
		{"search limit as 5.0", "loom_search", `{"query":"q","limit":5.0}`, []string{"search", "q", "--json", "--limit", "5"}},
		{"search unicode and a handle as text", "loom_search", `{"query":"Zürich 😀 \"quoted\" cfh:v:abcde $(id) ; rm"}`,
			[]string{"search", "Zürich 😀 \"quoted\" cfh:v:abcde $(id) ; rm", "--json"}},
		{"search flag after a space", "loom_search", `{"query":" --instance /tmp"}`, []string{"search", " --instance /tmp", "--json"}},
		{"search other dashes", "loom_search", `{"query":"—help"}`, []string{"search", "—help", "--json"}},
		{"search 500 units", "loom_search", `{"query":"` + strings.Repeat("é", 500) + `"}`, []string{"search", strings.Repeat("é", 500), "--json"}},
		{"discover bare", "loom_page_discover", `{}`, []string{"page", "discover", "--json", "--concise"}},
		{"discover kind and limit", "loom_page_discover", `{"limit":20,"kind":"projects"}`, []string{"page", "discover", "--json", "--concise", "--kind", "projects", "--limit", "20"}},
		{"discover limit 500", "loom_page_discover", `{"limit":500}`, []string{"page", "discover", "--json", "--concise", "--limit", "500"}},
		{"inspect", "loom_page_inspect", `{"target":"Projects/Atlas/about.md"}`, []string{"page", "inspect", "Projects/Atlas/about.md", "--json", "--concise"}},
		{"read", "loom_page_read", `{"target":"Projects/Atlas/about.md"}`, []string{"page", "read", "Projects/Atlas/about.md", "--json"}},
		{"people email card", "loom_people", `{"query":"ada@example.com","shape":"card"}`, []string{"people", "ada@example.com", "--json", "--shape", "card"}},
		{"people phone", "loom_people", `{"query":"+1 (555) 010-0000"}`, []string{"people", "+1 (555) 010-0000", "--json"}},
		{"people path summary", "loom_people", `{"shape":"summary","query":"People/Ada Lovelace/about.md"}`, []string{"people", "People/Ada Lovelace/about.md", "--json", "--shape", "summary"}},
		{"people handle", "loom_people", `{"query":"handle:ada"}`, []string{"people", "handle:ada", "--json"}},
		{"calendar all", "loom_calendar_list", `{"all":true}`, []string{"calendar", "list", "--json", "--all"}},
		{"calendar from and to", "loom_calendar_list", `{"to":"2026-12-31","from":"2026-12-01"}`, []string{"calendar", "list", "--json", "--from", "2026-12-01", "--to", "2026-12-31"}},
		{"calendar all false with a date", "loom_calendar_list", `{"all":false,"to":"2026-13-45"}`, []string{"calendar", "list", "--json", "--to", "2026-13-45"}},
		{"calendar bare", "loom_calendar_list", `{}`, []string{"calendar", "list", "--json"}},
		{"context where at", "loom_context", `{"read":"where","at":"2026-12-01T08:00:00Z"}`, []string{"context", "where", "--json", "--at", "2026-12-01T08:00:00Z"}},
		{"context activity", "loom_context", `{"until":"2026-12-02","since":"2026-12-01","at":"now","read":"activity"}`, []string{"context", "activity", "--json", "--at", "now", "--since", "2026-12-01", "--until", "2026-12-02"}},
		{"profile bare", "loom_profile", `{}`, []string{"profile", "--json"}},
		{"profile fresh", "loom_profile", `{"fresh":true}`, []string{"profile", "--json", "--fresh"}},
		{"profile fresh false", "loom_profile", `{"fresh":false}`, []string{"profile", "--json"}},
	}
	r := g.newRun(t, client.CreateRunInput{})
	wantEnv := g.wantEnv()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(g.loomCalls(t))
			res := r.ok(t, tc.tool, tc.body)
			if want := fmt.Sprintf("%s:%s:%d", r.ID, tc.tool, i+1); res.OutputId != want {
				t.Errorf("outputId = %q, want %q", res.OutputId, want)
			}
			calls := g.loomCalls(t)
			if len(calls) != before+1 {
				t.Fatalf("loom ran %d times, want once", len(calls)-before)
			}
			c := calls[before]
			if c.Argv[0] != fakeloomBin {
				t.Errorf("argv[0] = %q, want the configured cliPath %q", c.Argv[0], fakeloomBin)
			}
			if diff := cmp.Diff(tc.argv, c.Argv[1:]); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			env := slices.Sorted(slices.Values(c.Env))
			if diff := cmp.Diff(wantEnv, env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutputSequence: every tool output of a run, errors and
// describe_handle included, takes the next number of one run-wide
// sequence.
func TestOutputSequence(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":1}]}`})
	g.setBehaviour(t, "people", behaviour{Stdout: "nobody", Exit: 1})
	r := g.newRun(t, client.CreateRunInput{Tools: &[]client.ToolId{"loom_search", "loom_people"}})
	other := g.newRun(t, client.CreateRunInput{})
	steps := []struct {
		route, body string
		status      int
	}{
		{"loom_search", `{"query":"q"}`, 200},
		{"loom_search", `{"query":"-q"}`, 400},
		{"describe_handle", `{"token":"cfh:v:22222"}`, 200},
		{"loom_page_read", `{"target":"a.md"}`, 404},
		{"loom_people", `{"query":"ada@example.com"}`, 404},
		{"loom_search", `{"query":"q"}`, 200},
	}
	for i, st := range steps {
		rep := r.call(t, st.route, st.body)
		if rep.Status != st.status {
			t.Fatalf("step %d %s: status %d %s, want %d", i+1, st.route, rep.Status, rep.Body, st.status)
		}
		var got string
		switch {
		case rep.Result != nil:
			got = rep.Result.OutputId
		case rep.Handle != nil:
			got = rep.Handle.OutputId
		case rep.Problem != nil && rep.Problem.OutputId != nil:
			got = *rep.Problem.OutputId
		}
		if want := fmt.Sprintf("%s:%s:%d", r.ID, st.route, i+1); got != want {
			t.Errorf("step %d outputId = %q, want %q", i+1, got, want)
		}
		// Another run's sequence is its own.
		if i == 0 {
			if id := other.ok(t, "loom_search", `{"query":"q"}`).OutputId; id != other.ID+":loom_search:1" {
				t.Errorf("the other run's first outputId = %q", id)
			}
		}
	}
	// A media type with parameters is still JSON.
	resp, body := rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+r.ID+"/loom_search", r.Token, "application/json; charset=utf-8", strings.NewReader(`{"query":"q"}`))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"outputId":"`+r.ID+`:loom_search:7"`) {
		t.Errorf("charset request: %d %s, want 200 with output 7", resp.StatusCode, body)
	}
	if calls := r.calls(t); len(calls) != len(steps)+1 {
		t.Errorf("%d calls logged, want %d", len(calls), len(steps)+1)
	}
}
