package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// description is describe_handle's answer as the agent reads it.
type wireDescription struct {
	OutputID string `json:"outputId"`
	Token    string `json:"token"`
	Known    bool   `json:"known"`
	Referent *struct {
		Kind        string `json:"kind"`
		Source      string `json:"source"`
		LabelSource string `json:"labelSource"`
	} `json:"referent"`
	Label *disclosedLabel `json:"label"`
}

// searchHandles runs search "atlas" on run id and returns the admitted
// entries by the id of their row.
func searchHandles(t *testing.T, g *testGateway, id, token string) map[string]toolEntry {
	t.Helper()
	rec := g.call(id, token, "loom_search", `{"query":"atlas"}`)
	wantStatus(t, rec, http.StatusOK)
	var res toolResult
	decode(t, rec, &res)
	out := map[string]toolEntry{}
	for _, e := range res.Entries {
		if e.Status != "admitted" {
			continue
		}
		var v struct{ ID string }
		if err := json.Unmarshal(e.Value, &v); err != nil {
			t.Fatal(err)
		}
		out[v.ID] = e
	}
	return out
}

func TestDescribeHandle(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	_, tokOther := g.createRun(t, `{"runId":"other"}`)
	rows := searchHandles(t, g, "r", tok)
	otherRows := searchHandles(t, g, "other", tokOther)
	checklist := rows["mail:2026-02-27:atlas-launch-checklist"].Handle
	standup := rows["chat:2026-03-01:atlas-standup"].Handle
	retro := rows["notes:2026-02-20:atlas-retro"].Handle
	otherChecklist := otherRows["mail:2026-02-27:atlas-launch-checklist"].Handle
	if checklist == "" || standup == "" || retro == "" || otherChecklist == "" {
		t.Fatalf("search atlas did not admit the expected rows: %v", rows)
	}

	type referent = struct {
		Kind        string `json:"kind"`
		Source      string `json:"source"`
		LabelSource string `json:"labelSource"`
	}
	tests := []struct {
		name  string
		token string // as sent
		want  wireDescription
		keys  []string
	}{
		{"labeled row", checklist, wireDescription{Token: checklist, Known: true,
			Referent: &referent{"document", "loom_search", "row"},
			Label:    &disclosedLabel{Confidentiality: [][]string{{work}}, Integrity: []string{}}},
			[]string{"outputId", "token", "known", "referent", "label", "expiresAt"}},
		{"OR clause and integrity", standup, wireDescription{Token: standup, Known: true,
			Referent: &referent{"document", "loom_search", "row"},
			Label:    &disclosedLabel{Confidentiality: [][]string{{work, home}}, Integrity: []string{"https://loom.example/integrity/chat-export"}}},
			nil},
		{"unlabeled row", retro, wireDescription{Token: retro, Known: true,
			Referent: &referent{"document", "loom_search", "query"},
			Label:    &disclosedLabel{Confidentiality: [][]string{}, Integrity: []string{}}},
			nil},
		{"token trimmed", " \t" + checklist + "\n ", wireDescription{Token: checklist, Known: true,
			Referent: &referent{"document", "loom_search", "row"},
			Label:    &disclosedLabel{Confidentiality: [][]string{{work}}, Integrity: []string{}}},
			nil},
		{"unknown token", "cfh:v:zzzzz", wireDescription{Token: "cfh:v:zzzzz"}, []string{"outputId", "token", "known"}},
		{"not a token", "hello", wireDescription{Token: "hello"}, nil},
		{"longer than a token", checklist + "a", wireDescription{Token: checklist + "a"}, nil},
		{"address token", "cfh:a:22222", wireDescription{Token: "cfh:a:22222"}, nil},
	}
	if otherChecklist != checklist {
		// Tokens are salted by run: another run's token is unknown here.
		tests = append(tests, struct {
			name  string
			token string
			want  wireDescription
			keys  []string
		}{"another run's token", otherChecklist, wireDescription{Token: otherChecklist}, nil})
	} else {
		t.Errorf("two runs minted the same token %s for the same row", checklist)
	}
	n := 2 // r:loom_search:1 came first
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"token": tt.token})
			rec := g.call("r", tok, "describe_handle", string(body))
			wantStatus(t, rec, http.StatusOK)
			var got wireDescription
			decode(t, rec, &got)
			tt.want.OutputID = "r:describe_handle:" + itoa(n)
			n++
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("describe_handle(%q) mismatch (-want +got):\n%s", tt.token, diff)
			}
			if tt.keys != nil {
				if diff := cmp.Diff(tt.keys, testkit.ObjectKeys(t, rec.Body.Bytes())); diff != "" {
					t.Errorf("key order mismatch (-want +got):\n%s", diff)
				}
			}
			// Never the value.
			for _, s := range []string{"launch checklist", "staging is green", "sprint 14", "mail:2026", "snippet", "value"} {
				if strings.Contains(rec.Body.String(), s) {
					t.Errorf("describe_handle answer contains %q: %s", s, rec.Body)
				}
			}
		})
	}
	// Refused shapes: no token member, an empty one, extra members.
	for _, body := range []string{`{}`, `{"token":""}`, `{"token":"cfh:v:22222","value":1}`, `{"token":null}`} {
		wantProblem(t, g.call("r", tok, "describe_handle", body), http.StatusBadRequest, "invalid_input")
	}
}

// wireResult is a run's result as the host reads it.
type wireResult struct {
	Value     json.RawMessage `json:"value"`
	Documents []struct {
		ID     string          `json:"id"`
		Source string          `json:"source"`
		Value  json.RawMessage `json:"value"`
		Label  json.RawMessage `json:"label"`
	} `json:"documents"`
	Receipt json.RawMessage `json:"receipt"`
	Label   json.RawMessage `json:"label"`
}

func TestWriteResult(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	rows := searchHandles(t, g, "r", tok)
	checklist := rows["mail:2026-02-27:atlas-launch-checklist"].Handle
	unheld := "cfh:v:zzzzz"
	if _, held, _ := g.store.Handle(context.Background(), "r", unheld); held {
		t.Fatalf("%s is held by run r; pick another unheld token", unheld)
	}

	// Unheld tokens fail the whole write, wherever they are, and store
	// nothing.
	for _, value := range []string{
		`"` + unheld + `"`,
		`{"source":"` + checklist + `","other":"` + unheld + `"}`,
		`{"note":"see ` + unheld + ` for details"}`,
		`{"` + unheld + `":"x"}`,
		`{"source":{"@link":"` + unheld + `"}}`,
		`["cfh:a:22222"]`,
		`"` + checklist + `a"`,
	} {
		rec := g.call("r", tok, "result", `{"value":`+value+`}`)
		wantProblem(t, rec, http.StatusUnprocessableEntity, "unheld_handle")
		if strings.Contains(rec.Body.String(), unheld) || strings.Contains(rec.Body.String(), "cfh:") {
			t.Errorf("unheld_handle names the token: %s", rec.Body)
		}
	}
	wantProblem(t, g.hostDo(http.MethodGet, "/host/v1/runs/r/result", ""), http.StatusNotFound, "result_not_found")
	if s := g.summary(t, "r"); s.HasResult {
		t.Errorf("a refused write left hasResult true")
	}

	// A held token as a whole value links a document; inside prose it
	// stays text.
	value := `{"summary":"Checklist final (` + checklist + `).","source":"` + checklist + `","again":{"@link":"` + checklist + `"},"n":1.50}`
	rec := g.call("r", tok, "result", `{"value":`+value+`}`)
	wantStatus(t, rec, http.StatusCreated)
	var written map[string]any
	decode(t, rec, &written)
	if diff := cmp.Diff(map[string]any{"status": "ok", "documents": 1.0, "links": 2.0}, written); diff != "" {
		t.Errorf("result answer mismatch (-want +got):\n%s", diff)
	}

	rec = g.hostDo(http.MethodGet, "/host/v1/runs/r/result", "")
	wantStatus(t, rec, http.StatusOK)
	var res wireResult
	decode(t, rec, &res)
	wantValue := `{"summary":"Checklist final (` + checklist + `).","source":{"@link":"doc-r-1"},"again":{"@link":"doc-r-1"},"n":1.50}`
	if got := compactJSON(t, res.Value); got != wantValue {
		t.Errorf("result value = %s, want %s", got, wantValue)
	}
	if len(res.Documents) != 1 {
		t.Fatalf("documents = %d, want 1", len(res.Documents))
	}
	doc := res.Documents[0]
	wantDocValue := compactJSON(t, rows["mail:2026-02-27:atlas-launch-checklist"].Value)
	if doc.ID != "doc-r-1" || doc.Source != "loom_search" || compactJSON(t, doc.Value) != wantDocValue ||
		compactJSON(t, doc.Label) != `{"confidentiality":["`+work+`"],"integrity":[]}` {
		t.Errorf("document = %s %s %s %s", doc.ID, doc.Source, doc.Value, doc.Label)
	}
	// The result's label carries every held row; the receipt the uncited.
	wantLabel := `{"confidentiality":["` + work + `",{"anyOf":["` + work + `","` + home + `"]}],"integrity":[]}`
	if got := compactJSON(t, res.Label); got != wantLabel {
		t.Errorf("result label = %s, want %s", got, wantLabel)
	}
	// Uncited: the retro row (public) and the standup row (work or home).
	wantReceipt := `{"confidentiality":[{"anyOf":["` + work + `","` + home + `"]}],"integrity":[]}`
	if got := compactJSON(t, res.Receipt); got != wantReceipt {
		t.Errorf("receipt = %s, want %s", got, wantReceipt)
	}
	if s := g.summary(t, "r"); !s.HasResult {
		t.Errorf("hasResult = false after a write")
	}

	// One result per run.
	wantProblem(t, g.call("r", tok, "result", `{"value":"again"}`), http.StatusConflict, "result_exists")
	// Refused before the body is resolved against the handle table: an
	// unheld token in a repeated write is not even looked at.
	wantProblem(t, g.call("r", tok, "result", `{"value":{"@link":"cfh:v:zzzzz"}}`), http.StatusConflict, "result_exists")
	rec = g.hostDo(http.MethodGet, "/host/v1/runs/r/result", "")
	var after wireResult
	decode(t, rec, &after)
	if compactJSON(t, after.Value) != wantValue {
		t.Errorf("the second write changed the result to %s", after.Value)
	}

	// The value must be a JSON value other than null.
	_, tok2 := g.createRun(t, `{"runId":"r2"}`)
	for _, body := range []string{`{"value":null}`, `{}`, `{"value":1,"extra":2}`} {
		wantProblem(t, g.call("r2", tok2, "result", body), http.StatusBadRequest, "invalid_input")
	}
	// A run without handles takes a plain result.
	wantStatus(t, g.call("r2", tok2, "result", `{"value":[1,"two",{"three":3}]}`), http.StatusCreated)
}

func TestHandleTable(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	first := searchHandles(t, g, "r", tok)
	// The labeled rows again keep their tokens; the unlabeled row now takes
	// the grown query label, so it is another referent (SEMANTICS (i)).
	rows := searchHandles(t, g, "r", tok)
	for id, e := range rows {
		if same := first[id].Handle == e.Handle; same != (e.LabelSource == "row") {
			t.Errorf("row %s (%s): first token %s, second %s", id, e.LabelSource, first[id].Handle, e.Handle)
		}
	}
	retroBefore := first["notes:2026-02-20:atlas-retro"]

	rec := g.hostDo(http.MethodGet, "/host/v1/runs/r/handles", "")
	wantStatus(t, rec, http.StatusOK)
	var table struct {
		Handles []struct {
			Token       string          `json:"token"`
			Kind        string          `json:"kind"`
			Source      string          `json:"source"`
			Value       json.RawMessage `json:"value"`
			Label       json.RawMessage `json:"label"`
			LabelSource string          `json:"labelSource"`
		} `json:"handles"`
	}
	decode(t, rec, &table)
	if len(table.Handles) != len(rows)+1 {
		t.Fatalf("handle table has %d referents, want %d", len(table.Handles), len(rows)+1)
	}
	if s := g.summary(t, "r"); s.Handles != len(rows)+1 {
		t.Errorf("summary handles = %d, want %d", s.Handles, len(rows)+1)
	}
	// Minting order: the first search's three rows, then the new one.
	if table.Handles[1].Token != retroBefore.Handle ||
		compactJSON(t, table.Handles[1].Label) != `{"confidentiality":[],"integrity":[]}` {
		t.Errorf("referent 2 = %s %s, want the first retro %s with the public label", table.Handles[1].Token, table.Handles[1].Label, retroBefore.Handle)
	}
	table.Handles = append(table.Handles[:1], table.Handles[2:]...)
	wantLabels := map[string]string{
		"mail:2026-02-27:atlas-launch-checklist": `{"confidentiality":["` + work + `"],"integrity":[]}`,
		"notes:2026-02-20:atlas-retro":           `{"confidentiality":["` + work + `",{"anyOf":["` + work + `","` + home + `"]}],"integrity":[]}`,
		"chat:2026-03-01:atlas-standup":          `{"confidentiality":[{"anyOf":["` + work + `","` + home + `"]}],"integrity":["https://loom.example/integrity/chat-export"]}`,
	}
	for _, h := range table.Handles {
		var v struct{ ID string }
		_ = json.Unmarshal(h.Value, &v)
		e, ok := rows[v.ID]
		if !ok || e.Handle != h.Token || h.Kind != "document" || h.Source != "loom_search" || h.LabelSource != e.LabelSource ||
			compactJSON(t, h.Value) != compactJSON(t, e.Value) || compactJSON(t, h.Label) != wantLabels[v.ID] {
			t.Errorf("referent %s %s %s %s %s does not match the admitted entry %+v", h.Token, h.Kind, h.Source, h.LabelSource, h.Label, e)
		}
		if strings.Contains(string(h.Value), `"ifc"`) {
			t.Errorf("referent value keeps the row's ifc: %s", h.Value)
		}
	}
}

func TestHandleLimit(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{MaxHandlesPerRun: 2})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	// One handle fits.
	wantStatus(t, g.call("r", tok, "loom_profile", `{}`), http.StatusOK)
	// Three more do not: nothing of the call is kept.
	p := wantProblem(t, g.call("r", tok, "loom_search", `{"query":"atlas"}`), http.StatusConflict, "handle_limit_reached")
	if p.OutputID != "r:loom_search:2" {
		t.Errorf("outputId = %q, want r:loom_search:2", p.OutputID)
	}
	s := g.summary(t, "r")
	if s.Handles != 1 {
		t.Errorf("handles = %d after a refused mint, want 1", s.Handles)
	}
	// The refused rows were not observed: the label is the profile's.
	if got := compactJSON(t, s.ModelContextLabel); got != `{"confidentiality":["`+work+`"]}` {
		t.Errorf("modelContextLabel = %s after a refused mint, want the profile's work", got)
	}
	calls := g.calls(t, "r")
	if len(calls) != 2 || calls[1].Code == nil || *calls[1].Code != "handle_limit_reached" {
		t.Errorf("call log = %+v, want the refused call last", calls)
	}
}
