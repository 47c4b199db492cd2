package tests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// outcomeCase is one way loom can end a call.
type outcomeCase struct {
	name     string
	tool     string // default loom_search
	body     string // default {"query":"case=<name>"}
	beh      behaviour
	files    map[string][]byte // written to the scenario directory first
	status   int
	code     string // "" for a 200
	hostCode string
	exitCode *int // the call log's exitCode, when checked
}

func exit(n int) *int { return &n }

var outcomeCases = []outcomeCase{
	// command_failed
	{name: "exit-2-with-json", beh: behaviour{Stdout: `{"hits":[]}`, Exit: 2}, status: 502, code: "command_failed", exitCode: exit(2)},
	{name: "exit-2-silent", beh: behaviour{Exit: 2}, status: 502, code: "command_failed", exitCode: exit(2)},
	{name: "not-json", beh: behaviour{Stdout: "hello from loom"}, status: 502, code: "command_failed", exitCode: exit(0)},
	{name: "empty-stdout", beh: behaviour{}, status: 502, code: "command_failed", exitCode: exit(0)},
	{name: "ndjson", beh: behaviour{Stdout: "{\"hits\":[]}\n{\"hits\":[]}\n"}, status: 502, code: "command_failed"},
	{name: "half-json", beh: behaviour{Stdout: `{"hits":[{"id":1}`}, status: 502, code: "command_failed"},
	{name: "trailing-garbage", beh: behaviour{Stdout: `{"hits":[]} and more`}, status: 502, code: "command_failed"},
	{name: "killed-by-signal", beh: behaviour{Stdout: `{"hits":[]}`, Signal: "KILL"}, status: 502, code: "command_failed", exitCode: exit(-1)},
	{name: "segfault", beh: behaviour{Stdout: `{"hits":[]}`, Signal: "SEGV"}, status: 502, code: "command_failed"},
	{name: "stderr-flood-exit-2", beh: behaviour{StderrBytes: 4 << 20, StderrMarker: markerStderr, Stdout: `{"hits":[]}`, Exit: 2}, status: 502, code: "command_failed", exitCode: exit(2)},
	{name: "stderr-flood-not-json", beh: behaviour{StderrBytes: 1 << 20, StderrMarker: markerStderr, Stdout: markerStderr}, status: 502, code: "command_failed"},
	{name: "search-exit-1-not-json", beh: behaviour{Stdout: "no match", Exit: 1}, status: 502, code: "command_failed", exitCode: exit(1)},
	{name: "people-exit-1-json", tool: "loom_people", body: `{"query":"person:case=people-exit-1-json"}`, beh: behaviour{Stdout: `{"ok":true}`, Exit: 1}, status: 502, code: "command_failed", exitCode: exit(1)},
	{name: "people-exit-2-not-json", tool: "loom_people", body: `{"query":"person:case=people-exit-2-not-json"}`, beh: behaviour{Stdout: "boom", Exit: 2}, status: 502, code: "command_failed"},
	{name: "page-exit-1-not-json", tool: "loom_page_read", body: `{"target":"case=page-exit-1-not-json"}`, beh: behaviour{Stdout: "missing", Exit: 1}, status: 502, code: "command_failed"},
	// host_refused
	{name: "refused", beh: behaviour{Stdout: `{"ok":false,"code":"facet_denied","message":"` + markerStderr + ` /etc/loom"}`}, status: 502, code: "host_refused", hostCode: "facet_denied"},
	{name: "refused-exit-1", beh: behaviour{Stdout: `{"ok":false,"code":"rate_limited"}`, Exit: 1}, status: 502, code: "host_refused", hostCode: "rate_limited", exitCode: exit(1)},
	{name: "refused-numeric-code", beh: behaviour{Stdout: `{"ok":false,"code":7}`}, status: 502, code: "host_refused"},
	// A code that is not a short code is dropped: no host text in the
	// problem, the call log or the audit line, however long.
	{name: "refused-huge-code", beh: behaviour{StdoutFile: "huge-code.json"}, files: map[string][]byte{"huge-code.json": []byte(`{"ok":false,"code":"` + markerStderr + strings.Repeat("x", 2<<20) + `"}`)}, status: 502, code: "host_refused"},
	{name: "refused-free-text-code", beh: behaviour{Stdout: `{"ok":false,"code":"` + markerStderr + ` at /etc/loom"}`}, status: 502, code: "host_refused"},
	{name: "refused-people", tool: "loom_people", body: `{"query":"person:case=refused-people"}`, beh: behaviour{Stdout: `{"ok":false,"code":"unknown_verb"}`, Exit: 3}, status: 502, code: "host_refused", hostCode: "unknown_verb"},
	{name: "refused-context", tool: "loom_context", body: `{"read":"where","at":"case=refused-context"}`, beh: behaviour{Stdout: `{"ok":false}`}, status: 502, code: "host_refused"},
	// schema_version_mismatch
	{name: "schema-2", beh: behaviour{Stdout: `{"schemaVersion":2,"hits":[]}`}, status: 502, code: "schema_version_mismatch"},
	{name: "schema-string", beh: behaviour{Stdout: `{"schemaVersion":"1","hits":[]}`}, status: 502, code: "schema_version_mismatch"},
	{name: "schema-null", beh: behaviour{Stdout: `{"schemaVersion":null,"hits":[]}`}, status: 502, code: "schema_version_mismatch"},
	// malformed_payload
	{name: "no-hits", beh: behaviour{Stdout: `{"results":[]}`}, status: 502, code: "malformed_payload"},
	{name: "hits-object", beh: behaviour{Stdout: `{"hits":{}}`}, status: 502, code: "malformed_payload"},
	{name: "search-array", beh: behaviour{Stdout: `[]`}, status: 502, code: "malformed_payload"},
	{name: "page-array", tool: "loom_page_read", body: `{"target":"case=page-array"}`, beh: behaviour{Stdout: `[{"path":"a"}]`}, status: 502, code: "malformed_payload"},
	{name: "context-null", tool: "loom_context", body: `{"read":"activity","at":"case=context-null"}`, beh: behaviour{Stdout: `null`}, status: 502, code: "malformed_payload"},
	{name: "people-scalar", tool: "loom_people", body: `{"query":"person:case=people-scalar"}`, beh: behaviour{Stdout: `"ada"`}, status: 502, code: "malformed_payload"},
	// not_found / contested
	{name: "people-not-found", tool: "loom_people", body: `{"query":"person:case=people-not-found"}`, beh: behaviour{Stdout: "no live person", Exit: 1}, status: 404, code: "not_found", exitCode: exit(1)},
	{name: "people-contested", tool: "loom_people", body: `{"query":"person:case=people-contested"}`, beh: behaviour{Stdout: "two people", Exit: 3}, status: 409, code: "contested", exitCode: exit(3)},
	{name: "search-person-not-found", body: `{"person":"case=search-person-not-found"}`, beh: behaviour{Exit: 1}, status: 404, code: "not_found"},
	{name: "search-person-contested", body: `{"query":"x","person":"case=search-person-contested"}`, beh: behaviour{Stdout: "many", Exit: 3}, status: 409, code: "contested"},
	// successes that look like failures
	{name: "bom", beh: behaviour{Stdout: "\ufeff{\"hits\":[{\"id\":\"bom\"}]}\n"}, status: 200},
	{name: "ok-zero-is-not-a-refusal", beh: behaviour{Stdout: `{"ok":0,"hits":[]}`}, status: 200},
	{name: "ok-null-is-not-a-refusal", beh: behaviour{Stdout: `{"ok":null,"code":"x","hits":[]}`}, status: 200},
	{name: "schema-1-0", beh: behaviour{Stdout: `{"schemaVersion":1.0,"hits":[]}`}, status: 200},
	{name: "schema-1e0", beh: behaviour{Stdout: `{"schemaVersion":1e0,"hits":[]}`}, status: 200},
	{name: "whitespace-around", beh: behaviour{Stdout: "\n\t {\"hits\":[]} \r\n"}, status: 200},
	{name: "stderr-flood-ok", beh: behaviour{StderrBytes: 4 << 20, StderrMarker: markerStderr, Stdout: `{"hits":[{"id":"ok"}]}`}, status: 200},
	{name: "invalid-utf8", beh: behaviour{StdoutFile: "invalid-utf8.json"}, files: map[string][]byte{"invalid-utf8.json": []byte("{\"hits\":[{\"t\":\"a\xffb\"}]}")}, status: 200},
	{name: "people-exit-1-is-not-found-only-without-json", tool: "loom_people", body: `{"query":"person:case=people-exit-1-is-not-found-only-without-json"}`, beh: behaviour{Stdout: `{"name":"Ada"}`}, status: 200},
}

// TestLoomOutcomes maps every way loom can end a call to the typed
// answer, and checks the call log records it.
func TestLoomOutcomes(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	for _, tc := range outcomeCases {
		g.setBehaviour(t, "case-"+tc.name, tc.beh)
		for name, data := range tc.files {
			writeFile(t, filepath.Join(g.Dir, name), data)
		}
	}
	for _, tc := range outcomeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, body := tc.tool, tc.body
			if tool == "" {
				tool = "loom_search"
			}
			if body == "" {
				body = `{"query":"case=` + tc.name + `"}`
			}
			r := g.workRun(t)
			start := time.Now()
			rep := r.call(t, tool, body)
			outputID := r.ID + ":" + tool + ":1"
			if tc.code == "" {
				if rep.Status != http.StatusOK || rep.Result == nil {
					t.Fatalf("status %d %s, want 200", rep.Status, rep.Body)
				}
				checkAgentResult(t, rep.Body)
				if tc.name == "invalid-utf8" {
					if v := string(*rep.Result.Entries[0].Value); v != `{"t":"a`+"\ufffd"+`b"}` {
						t.Errorf("value %s, want the invalid byte read as U+FFFD", v)
					}
				}
				return
			}
			p := wantProblem(t, rep, tc.status, tc.code)
			if deref(p.OutputId) != outputID {
				t.Errorf("outputId = %v, want %q", deref(p.OutputId), outputID)
			}
			if deref(p.HostCode) != deref(strPtr(tc.hostCode)) {
				t.Errorf("hostCode = %v, want %q", deref(p.HostCode), tc.hostCode)
			}
			if p.Title == "" || p.Detail == nil || *p.Detail == "" {
				t.Errorf("problem without its fixed title and detail: %s", rep.Body)
			}
			if rep.Header.Get("Retry-After") != "" {
				t.Errorf("Retry-After on a %s", tc.code)
			}
			if len(rep.Body) > 2048 || strings.Contains(string(rep.Body), markerStderr) {
				t.Errorf("problem of %d bytes, or with host text: %.300s", len(rep.Body), rep.Body)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("answer took %v", d)
			}
			calls := r.calls(t)
			if len(calls) != 1 {
				t.Fatalf("%d calls logged, want 1", len(calls))
			}
			c := calls[0]
			if c.OutputId != outputID || c.Status != "error" || deref(c.Code) != tc.code || deref(c.HostCode) != deref(strPtr(tc.hostCode)) {
				t.Errorf("call record %s %s code %v hostCode %v, want %s error %s %q", c.OutputId, c.Status, deref(c.Code), deref(c.HostCode), outputID, tc.code, tc.hostCode)
			}
			if c.Admitted != 0 || c.Withheld != 0 || c.Cfc.ObservedLabel != nil {
				t.Errorf("a failed call recorded rows or a label: %+v", c)
			}
			if tc.exitCode != nil && (c.ExitCode == nil || *c.ExitCode != *tc.exitCode) {
				t.Errorf("call record exitCode = %v, want %d", deref(c.ExitCode), *tc.exitCode)
			}
			if s := r.summary(t); s.Handles != 0 || len(s.ModelContextLabel.Confidentiality) != 0 {
				t.Errorf("a failed call left handles or a label: %+v", s)
			}
		})
	}

	t.Run("grandchild holding stdout", func(t *testing.T) {
		t.Parallel()
		g.setBehaviour(t, "case-grandchild", behaviour{Stdout: `{"hits":[{"id":"g"}]}`, Grandchild: "60s"})
		r := g.newRun(t, client.CreateRunInput{})
		start := time.Now()
		res := r.ok(t, "loom_search", `{"query":"case=grandchild"}`)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("a grandchild holding stdout delayed the answer by %v", d)
		}
		if res.Admitted != 1 {
			t.Errorf("admitted %d, want the row printed before the exit", res.Admitted)
		}
		if !g.processGone(t, "grandchild-grandchild.pid") {
			t.Errorf("the grandchild outlived the call")
		}
	})
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TestCommandShapes covers the outcomes of the tools that take no free
// text (so no case selector): the profile fallback and list shapes.
func TestCommandShapes(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	cases := []struct {
		name, tool, body, key string
		beh                   behaviour
		status                int
		code                  string
	}{
		{"profile fallback exit 1 hasProfile false", "loom_profile", `{}`, "profile", behaviour{Stdout: `{"hasProfile":false,"name":"fallback"}`, Exit: 1}, 200, ""},
		{"profile exit 0 hasProfile false", "loom_profile", `{"fresh":true}`, "profile", behaviour{Stdout: `{"hasProfile":false}`}, 200, ""},
		{"profile exit 1 hasProfile true", "loom_profile", `{}`, "profile", behaviour{Stdout: `{"hasProfile":true}`, Exit: 1}, 502, "command_failed"},
		{"profile exit 1 hasProfile string", "loom_profile", `{}`, "profile", behaviour{Stdout: `{"hasProfile":"false"}`, Exit: 1}, 502, "command_failed"},
		{"profile exit 1 hasProfile missing", "loom_profile", `{}`, "profile", behaviour{Stdout: `{"name":"x"}`, Exit: 1}, 502, "command_failed"},
		{"profile exit 2 hasProfile false", "loom_profile", `{}`, "profile", behaviour{Stdout: `{"hasProfile":false}`, Exit: 2}, 502, "command_failed"},
		{"profile exit 1 not json", "loom_profile", `{}`, "profile", behaviour{Stdout: `fallback`, Exit: 1}, 502, "command_failed"},
		{"profile array", "loom_profile", `{}`, "profile", behaviour{Stdout: `[{"hasProfile":true}]`}, 502, "malformed_payload"},
		{"calendar object", "loom_calendar_list", `{"all":true}`, "calendar.list", behaviour{Stdout: `{"events":[]}`}, 502, "malformed_payload"},
		{"calendar empty", "loom_calendar_list", `{"all":true}`, "calendar.list", behaviour{Stdout: `[]`}, 200, ""},
		{"discover pages null", "loom_page_discover", `{}`, "page.discover", behaviour{Stdout: `{"pages":null,"totalPages":0}`}, 502, "malformed_payload"},
		{"discover no envelope keys", "loom_page_discover", `{}`, "page.discover", behaviour{Stdout: `{"pages":[]}`}, 200, ""},
		{"discover refused", "loom_page_discover", `{}`, "page.discover", behaviour{Stdout: `{"ok":false,"code":"no_cabinet","pages":[]}`}, 502, "host_refused"},
		{"discover schemaVersion is not checked", "loom_page_discover", `{}`, "page.discover", behaviour{Stdout: `{"schemaVersion":2,"pages":[]}`}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g.setBehaviour(t, tc.key, tc.beh)
			r := g.workRun(t)
			rep := r.call(t, tc.tool, tc.body)
			if tc.code != "" {
				wantProblem(t, rep, tc.status, tc.code)
				return
			}
			if rep.Status != http.StatusOK || rep.Result == nil {
				t.Fatalf("status %d %s, want 200", rep.Status, rep.Body)
			}
			checkAgentResult(t, rep.Body)
			switch tc.name {
			case "profile fallback exit 1 hasProfile false":
				got, _ := views(t, rep.Result.Entries)
				if diff := cmp.Diff([]entryView{admittedEntry(nil, nil, "query", `{"hasProfile":false,"name":"fallback"}`)}, got, equateEmpty); diff != "" {
					t.Errorf("fallback entries (-want +got):\n%s", diff)
				}
				if c := r.calls(t)[0]; c.Status != "ok" || c.ExitCode == nil || *c.ExitCode != 1 {
					t.Errorf("fallback call record status %s exitCode %v, want ok 1", c.Status, deref(c.ExitCode))
				}
			case "discover no envelope keys":
				checkEnvelope(t, rep.Body, `{}`)
			}
		})
	}
}

// invalidCase is one refused input.
type invalidCase struct {
	name, tool, body string
	pointer          string
	choices          []string
	builder          bool // refused by the argument builder (has an outputId)
	// pointerOptional: Gateway decision 8 lets invalid_input name the
	// field; the contract layer names none for an unknown key today.
	pointerOptional bool
}

var long501 = strings.Repeat("a", 501-len(markerInput)) + markerInput

var invalidCases = []invalidCase{
	// The contract's layer.
	{name: "search limit 0", tool: "loom_search", body: `{"query":"q","limit":0}`, pointer: "/limit"},
	{name: "search limit 201", tool: "loom_search", body: `{"query":"q","limit":201}`, pointer: "/limit"},
	{name: "search limit string", tool: "loom_search", body: `{"query":"q","limit":"5"}`, pointer: "/limit"},
	{name: "search limit fraction", tool: "loom_search", body: `{"query":"q","limit":2.5}`, pointer: "/limit"},
	{name: "search rank", tool: "loom_search", body: `{"query":"q","rank":"` + markerInput + `"}`, pointer: "/rank", choices: []string{"recency", "score"}},
	{name: "search empty query", tool: "loom_search", body: `{"query":""}`, pointer: "/query"},
	{name: "search 501 characters", tool: "loom_search", body: `{"query":"` + long501 + `"}`, pointer: "/query"},
	{name: "search null query", tool: "loom_search", body: `{"query":null}`, pointer: "/query"},
	{name: "search null limit", tool: "loom_search", body: `{"query":"q","limit":null}`, pointer: "/limit"},
	{name: "search unknown key", tool: "loom_search", body: `{"query":"q","engine":"` + markerInput + `"}`, pointer: "/engine", pointerOptional: true},
	{name: "search array body", tool: "loom_search", body: `["` + markerInput + `"]`},
	{name: "discover kind case", tool: "loom_page_discover", body: `{"kind":"Projects"}`, pointer: "/kind", choices: []string{"all", "project", "projects", "entity", "entities"}},
	{name: "discover kind newline", tool: "loom_page_discover", body: `{"kind":"all\n"}`, pointer: "/kind", choices: []string{"all", "project", "projects", "entity", "entities"}},
	{name: "discover limit 501", tool: "loom_page_discover", body: `{"limit":501}`, pointer: "/limit"},
	{name: "read without target", tool: "loom_page_read", body: `{}`, pointer: "/target"},
	{name: "people shape", tool: "loom_people", body: `{"query":"ada@example.com","shape":"full"}`, pointer: "/shape", choices: []string{"summary", "card"}},
	{name: "calendar date pattern", tool: "loom_calendar_list", body: `{"from":"2026-1-01"}`, pointer: "/from"},
	{name: "calendar all string", tool: "loom_calendar_list", body: `{"all":"yes"}`, pointer: "/all"},
	{name: "context hosted", tool: "loom_context", body: `{"read":"hosted"}`, pointer: "/read", choices: []string{"where", "activity"}},
	{name: "context without read", tool: "loom_context", body: `{"at":"now"}`, pointer: "/read"},
	{name: "profile fresh string", tool: "loom_profile", body: `{"fresh":"true"}`, pointer: "/fresh"},
	{name: "describe empty token", tool: "describe_handle", body: `{"token":""}`, pointer: "/token"},
	{name: "describe extra key", tool: "describe_handle", body: `{"token":"cfh:v:22222","value":true}`, pointer: "/value", pointerOptional: true},
	{name: "result without value", tool: "result", body: `{"values":1}`},
	// The argument builder's layer.
	{name: "search leading dash", tool: "loom_search", body: `{"query":"-` + markerInput + `"}`, pointer: "/query", builder: true},
	{name: "search double dash", tool: "loom_search", body: `{"query":"--read-ceiling-file=/x"}`, pointer: "/query", builder: true},
	{name: "search tab", tool: "loom_search", body: `{"query":"a\t` + markerInput + `"}`, pointer: "/query", builder: true},
	{name: "search NUL", tool: "loom_search", body: `{"query":"a\u0000` + markerInput + `"}`, pointer: "/query", builder: true},
	{name: "search 501 UTF-16 units", tool: "loom_search", body: `{"query":"` + strings.Repeat("😀", 250) + `a"}`, pointer: "/query", builder: true},
	{name: "search neither query nor person", tool: "loom_search", body: `{"sources":"mail"}`, pointer: "/query", builder: true},
	{name: "search empty object", tool: "loom_search", body: `{}`, pointer: "/query", builder: true},
	{name: "search person dash", tool: "loom_search", body: `{"person":"-` + markerInput + `"}`, pointer: "/person", builder: true},
	{name: "search tz dash", tool: "loom_search", body: `{"query":"q","tz":"-` + markerInput + `"}`, pointer: "/tz", builder: true},
	{name: "people bare name", tool: "loom_people", body: `{"query":"Ada ` + markerInput + `"}`, pointer: "/query", builder: true},
	{name: "people verb", tool: "loom_people", body: `{"query":"merge"}`, pointer: "/query", builder: true},
	{name: "people short number", tool: "loom_people", body: `{"query":"+1234"}`, pointer: "/query", builder: true},
	{name: "context where with since", tool: "loom_context", body: `{"read":"where","since":"2026-01-01"}`, pointer: "/since", builder: true},
	{name: "context where with until", tool: "loom_context", body: `{"read":"where","until":"2026-01-01"}`, pointer: "/until", builder: true},
	{name: "calendar all with from", tool: "loom_calendar_list", body: `{"all":true,"from":"2026-12-01"}`, pointer: "/all", builder: true},
	{name: "read target dash", tool: "loom_page_read", body: `{"target":"-` + markerInput + `"}`, pointer: "/target", builder: true},
	{name: "inspect target flag", tool: "loom_page_inspect", body: `{"target":"--help"}`, pointer: "/target", builder: true},
}

// TestInvalidInput: every refused input answers invalid_input naming the
// field, never the value, and no loom process starts.
func TestInvalidInput(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	for _, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := g.workRun(t)
			rep := r.call(t, tc.tool, tc.body)
			p := wantProblem(t, rep, http.StatusBadRequest, "invalid_input")
			if tc.pointer != "" && deref(p.Pointer) != tc.pointer && !(tc.pointerOptional && p.Pointer == nil) {
				t.Errorf("pointer = %v, want %q", deref(p.Pointer), tc.pointer)
			}
			if tc.choices != nil {
				if p.Choices == nil {
					t.Errorf("no choices, want %v", tc.choices)
				} else if diff := cmp.Diff(tc.choices, *p.Choices); diff != "" {
					t.Errorf("choices (-want +got):\n%s", diff)
				}
			}
			if strings.Contains(string(rep.Body), markerInput) {
				t.Errorf("the problem echoes the rejected value: %s", rep.Body)
			}
			if tc.builder {
				if want := r.ID + ":" + tc.tool + ":1"; deref(p.OutputId) != want {
					t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
				}
				calls := r.calls(t)
				if len(calls) != 1 || deref(calls[0].Code) != "invalid_input" || calls[0].ExitCode != nil {
					t.Errorf("call log %+v, want one invalid_input without exit code", calls)
				}
			}
		})
	}
	t.Cleanup(func() {
		if calls := g.loomCalls(t); len(calls) != 0 {
			t.Errorf("refused input started loom %d times, e.g. %q", len(calls), calls[0].Argv)
		}
	})
}

// TestNotConfigured: a gateway without the host config, a run whose tools
// exclude the tool, and --allow-tool all answer not_configured without a
// process.
func TestNotConfigured(t *testing.T) {
	t.Parallel()

	t.Run("no config", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gwOptions{NoConfig: true})
		r := g.newRun(t, client.CreateRunInput{})
		for i, tool := range tools {
			p := r.fails(t, tool, validBody[tool], http.StatusNotFound, "not_configured")
			if want := fmt.Sprintf("%s:%s:%d", r.ID, tool, i+1); deref(p.OutputId) != want {
				t.Errorf("%s outputId = %v, want %q", tool, deref(p.OutputId), want)
			}
		}
		d := r.call(t, "describe_handle", `{"token":"cfh:v:22222"}`)
		if d.Status != http.StatusOK || d.Handle == nil || d.Handle.Known {
			t.Errorf("describe_handle without config: %d %s, want 200 known false", d.Status, d.Body)
		}
		if s := r.summary(t); len(s.Tools) != 0 {
			t.Errorf("summary tools %v, want none", s.Tools)
		}
		resp, err := g.hostClient(t).CreateRunWithResponse(ctx(t), client.CreateRunInput{Tools: &[]client.ToolId{"loom_search"}})
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusBadRequest, "invalid_input", "/tools/0")
		for _, c := range r.calls(t)[:len(tools)] {
			if deref(c.Code) != "not_configured" || c.Status != "error" {
				t.Errorf("call record %s: %s %v", c.OutputId, c.Status, deref(c.Code))
			}
		}
	})

	t.Run("run tools", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gwOptions{})
		g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[]}`})
		r := g.newRun(t, client.CreateRunInput{Tools: &[]client.ToolId{"loom_search"}})
		r.ok(t, "loom_search", `{"query":"q"}`)
		for _, tool := range tools[1:] {
			p := r.fails(t, tool, validBody[tool], http.StatusNotFound, "not_configured")
			if p.OutputId == nil {
				t.Errorf("%s: no outputId", tool)
			}
		}
		if n := len(g.loomCalls(t)); n != 1 {
			t.Errorf("loom ran %d times, want once", n)
		}
	})

	t.Run("allow-tool", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gwOptions{Flags: []string{"--allow-tool", "loom_search", "--allow-tool", "loom_profile"}})
		g.setBehaviour(t, "profile", behaviour{Stdout: `{"name":"Ada"}`})
		r := g.newRun(t, client.CreateRunInput{})
		if diff := cmp.Diff([]client.ToolId{"loom_search", "loom_profile"}, r.summary(t).Tools); diff != "" {
			t.Errorf("summary tools (-want +got):\n%s", diff)
		}
		r.ok(t, "loom_profile", `{}`)
		r.fails(t, "loom_people", validBody["loom_people"], http.StatusNotFound, "not_configured")
		resp, err := g.hostClient(t).CreateRunWithResponse(ctx(t), client.CreateRunInput{Tools: &[]client.ToolId{"loom_search", "loom_people"}})
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusBadRequest, "invalid_input", "/tools/1")
	})
}

// TestCeilingUnavailable: a configured read-ceiling record is read on every
// call; whenever it cannot be used the call answers ceiling_unavailable
// (before the input is even looked at) and no process starts.
func TestCeilingUnavailable(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(rootDir, "ceilings-"+testkit.RandomHex(4))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "read-ceiling.json")
	g := startGateway(t, gwOptions{Config: map[string]any{"readCeilingFile": record, "facets": []string{"work"}}})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[{"id":"w","ifc":{"confidentiality":["{W}"]}},{"id":"h","note":"{X}","ifc":{"confidentiality":["{H}"]}}]}`)})
	r := g.newRun(t, client.CreateRunInput{})
	n := 0
	unavailable := func(t *testing.T, body string) {
		t.Helper()
		n++
		p := r.fails(t, "loom_search", body, http.StatusServiceUnavailable, "ceiling_unavailable")
		if want := fmt.Sprintf("%s:loom_search:%d", r.ID, n); deref(p.OutputId) != want {
			t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
		}
	}
	steps := []struct {
		name   string
		record string // "" removes the file; "dir" makes it a directory
	}{
		{"missing", ""},
		{"a directory", "dir"},
		{"not JSON", `{"loomReadCeiling":`},
		{"not an object", `["` + atomWork + `"]`},
		{"other facets", `{"loomReadCeiling":["` + atomWork + `"],"facets":["health"],"facetSource":"run-ceiling"}`},
		{"duplicate facets", `{"loomReadCeiling":["` + atomWork + `"],"facets":["work","work"],"facetSource":"run-ceiling"}`},
		{"empty ceiling", `{"loomReadCeiling":[],"facets":["work"],"facetSource":"run-ceiling"}`},
		{"no facetSource", `{"loomReadCeiling":["` + atomWork + `"],"facets":["work"]}`},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			_ = os.RemoveAll(record)
			switch st.record {
			case "":
			case "dir":
				if err := os.Mkdir(record, 0o700); err != nil {
					t.Fatal(err)
				}
			default:
				writeFile(t, record, []byte(st.record))
			}
			unavailable(t, `{"query":"q"}`)
			unavailable(t, `{"query":"-`+markerInput+`"}`) // the record is read before the input
		})
	}
	if calls := g.loomCalls(t); len(calls) != 0 {
		t.Fatalf("loom ran %d times without a usable ceiling", len(calls))
	}
	for _, c := range r.calls(t) {
		if deref(c.Code) != "ceiling_unavailable" {
			t.Errorf("call record %s code %v", c.OutputId, deref(c.Code))
		}
	}

	t.Run("usable record", func(t *testing.T) {
		_ = os.RemoveAll(record)
		writeFile(t, record, []byte(`{"loomReadCeiling":["`+atomWork+`"],"facets":["work"],"facetSource":"run-ceiling","extra":1}`))
		got, _ := views(t, r.ok(t, "loom_search", `{"query":"q"}`).Entries)
		want := []entryView{admittedEntry(w, nil, "row", `{"id":"w"}`), withheldEntry("cfc_ceiling_exceeded")}
		if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
			t.Errorf("entries under the record's ceiling (-want +got):\n%s", diff)
		}
		// A run ceiling of health met with the record's work ceiling
		// admits neither.
		hr := g.newRun(t, client.CreateRunInput{MaxConfidentiality: &[]client.Clause{raw(`"` + atomHealth + `"`)}})
		got, _ = views(t, hr.ok(t, "loom_search", `{"query":"q"}`).Entries)
		want = []entryView{withheldEntry("cfc_ceiling_exceeded"), withheldEntry("cfc_ceiling_exceeded")}
		if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
			t.Errorf("entries under the met ceiling (-want +got):\n%s", diff)
		}
		if s := hr.summary(t); s.Ceiling == nil || len(*s.Ceiling) != 1 || canon(t, (*s.Ceiling)[0]) != canon(t, raw(`"`+atomHealth+`"`)) {
			t.Errorf("summary ceiling %v, want the manifest's (before the record)", s.Ceiling)
		}
	})
}

// TestProcessLimits: the per-call timeout and the stdout cap kill the
// command's whole process group and answer command_failed.
func TestProcessLimits(t *testing.T) {
	t.Parallel()
	const limit = 65536
	g := startGateway(t, gwOptions{Flags: []string{"--command-timeout", "1s", "--max-stdout-bytes", strconv.Itoa(limit)}})
	sized := func(name string, n int) string {
		head := `{"query":"case=` + name + `","hits":[],"pad":"`
		return head + strings.Repeat("p", n-len(head)-2) + `"}`
	}
	cases := []struct {
		name   string
		beh    behaviour
		status int
		pidOf  string // a grandchild that must be gone afterwards
		min    time.Duration
	}{
		{"hang", behaviour{Sleep: "60s", Grandchild: "60s"}, 502, "grandchild-hang.pid", 900 * time.Millisecond},
		{"hang-after-output", behaviour{Stdout: `{"hits":[]}`, Sleep: "60s"}, 502, "", 900 * time.Millisecond},
		{"flood", behaviour{StdoutBytes: 8 << 20}, 502, "", 0},
		{"flood-then-hang", behaviour{StdoutBytes: 1 << 20, Sleep: "60s", Grandchild: "60s"}, 502, "", 0},
		{"exactly-the-cap", behaviour{Stdout: sized("exactly-the-cap", limit)}, 200, "", 0},
		{"one-over-the-cap", behaviour{Stdout: sized("one-over-the-cap", limit+1)}, 502, "", 0},
	}
	for _, tc := range cases {
		g.setBehaviour(t, "case-"+tc.name, tc.beh)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := g.newRun(t, client.CreateRunInput{})
			start := time.Now()
			rep := r.call(t, "loom_search", `{"query":"case=`+tc.name+`"}`)
			took := time.Since(start)
			if tc.status == 200 {
				if rep.Status != 200 {
					t.Fatalf("status %d %s, want 200", rep.Status, rep.Body)
				}
				return
			}
			wantProblem(t, rep, tc.status, "command_failed")
			if took < tc.min || took > 8*time.Second {
				t.Errorf("answered after %v, want between %v and 8s", took, tc.min)
			}
			if tc.pidOf != "" && !g.processGone(t, tc.pidOf) {
				t.Errorf("the command's grandchild survived the kill")
			}
			if c := r.calls(t); len(c) != 1 || deref(c[0].Code) != "command_failed" {
				t.Errorf("call log %+v", c)
			}
		})
	}
}

// TestStartFailure: a cliPath that cannot be executed answers
// command_failed without the path, and /readyz reports it.
func TestStartFailure(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Config: map[string]any{"cliPath": filepath.Join(rootDir, "no-such-loom")}})
	r := g.newRun(t, client.CreateRunInput{})
	rep := r.call(t, "loom_search", `{"query":"q"}`)
	wantProblem(t, rep, http.StatusBadGateway, "command_failed")
	if c := r.calls(t)[0]; c.ExitCode != nil {
		t.Errorf("a process that never started has exit code %d", *c.ExitCode)
	}
	resp, err := g.hostClient(t).ReadyzWithResponse(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusServiceUnavailable || resp.JSON503 == nil || resp.JSON503.Checks == nil || (*resp.JSON503.Checks)["loom"] != "missing" {
		t.Errorf("readyz: %d %s, want 503 with loom missing", resp.StatusCode(), resp.Body)
	}
}

// TestStoreLimits: --max-runs and --max-handles-per-run refuse past the
// limit, and a refused mint stores nothing.
func TestStoreLimits(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--max-runs", "2", "--max-handles-per-run", "2"}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":1},{"id":2},{"id":3}]}`})
	g.setBehaviour(t, "page.read", behaviour{Stdout: `{"id":"page"}`})
	r := g.newRun(t, client.CreateRunInput{})
	g.newRun(t, client.CreateRunInput{})
	resp, err := g.hostClient(t).CreateRunWithResponse(ctx(t), client.CreateRunInput{})
	if err != nil {
		t.Fatal(err)
	}
	wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusTooManyRequests, "run_limit_reached", "")

	p := r.fails(t, "loom_search", `{"query":"q"}`, http.StatusConflict, "handle_limit_reached")
	if want := r.ID + ":loom_search:1"; deref(p.OutputId) != want {
		t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
	}
	if n := len(r.handles(t)); n != 0 {
		t.Errorf("%d handles held after a refused mint, want 0", n)
	}
	if s := r.summary(t); len(s.ModelContextLabel.Confidentiality) != 0 || s.Handles != 0 {
		t.Errorf("summary after a refused mint: %+v", s)
	}
	r.ok(t, "loom_page_read", `{"target":"a.md"}`)
}
