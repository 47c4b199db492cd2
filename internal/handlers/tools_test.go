package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

var handlePattern = regexp.MustCompile(`^cfh:v:[23456789abcdefghjkmnpqrstvwxyz]{5}$`)

// resultKeys is the key order of a result object (SEMANTICS (h) without
// cfc); envelope only for the list commands.
func resultKeys(envelope bool) []string {
	if envelope {
		return []string{"outputId", "status", "kind", "notice", "admitted", "withheld", "omitted", "truncated", "envelope", "entries"}
	}
	return []string{"outputId", "status", "kind", "notice", "admitted", "withheld", "omitted", "truncated", "entries"}
}

// checkResult checks the shape every successful tool answer has and
// returns it decoded.
func checkResult(t *testing.T, body []byte, wantOutputID, wantKind string, envelope bool) toolResult {
	t.Helper()
	if diff := cmp.Diff(resultKeys(envelope), testkit.ObjectKeys(t, body)); diff != "" {
		t.Errorf("result key order mismatch (-want +got):\n%s", diff)
	}
	for _, n := range allNames(t, body) {
		if n == "cfc" {
			t.Errorf("the agent's result carries a cfc member: %s", body)
		}
	}
	var res toolResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("result %s: %v", body, err)
	}
	if res.OutputID != wantOutputID || res.Status != "ok" || res.Kind != wantKind || res.Notice != ifc.Notice {
		t.Errorf("result head = %q %q %q %q, want %q ok %q and the notice", res.OutputID, res.Status, res.Kind, res.Notice, wantOutputID, wantKind)
	}
	admitted, withheld := 0, 0
	for i, e := range res.Entries {
		raw := entryJSON(t, body, i)
		switch e.Status {
		case "admitted":
			admitted++
			want := []string{"status", "label", "labelSource", "value", "handle"}
			if e.Truncated {
				want = []string{"status", "label", "labelSource", "value", "truncated", "handle"}
			}
			if diff := cmp.Diff(want, testkit.ObjectKeys(t, raw)); diff != "" {
				t.Errorf("entry %d key order mismatch (-want +got):\n%s", i, diff)
			}
			if !handlePattern.MatchString(e.Handle) {
				t.Errorf("entry %d handle %q does not match %s", i, e.Handle, handlePattern)
			}
			if e.LabelSource != ifc.SourceRow && e.LabelSource != ifc.SourceQuery {
				t.Errorf("entry %d labelSource = %q", i, e.LabelSource)
			}
		case "withheld":
			withheld++
			if diff := cmp.Diff([]string{"status", "reasonCode"}, testkit.ObjectKeys(t, raw)); diff != "" {
				t.Errorf("withheld entry %d key order mismatch (-want +got):\n%s", i, diff)
			}
			if e.ReasonCode != ifc.ReasonCeilingExceeded && e.ReasonCode != ifc.ReasonLabelReadFailed {
				t.Errorf("entry %d reasonCode = %q", i, e.ReasonCode)
			}
		default:
			t.Errorf("entry %d status = %q", i, e.Status)
		}
	}
	if res.Admitted != admitted || res.Withheld != withheld {
		t.Errorf("counts admitted %d withheld %d, entries say %d and %d", res.Admitted, res.Withheld, admitted, withheld)
	}
	return res
}

// entryJSON returns the raw JSON of entries[i] of a result.
func entryJSON(t *testing.T, body []byte, i int) []byte {
	t.Helper()
	var res struct{ Entries []json.RawMessage }
	if err := json.Unmarshal(body, &res); err != nil || i >= len(res.Entries) {
		t.Fatalf("entries of %s: %v", body, err)
	}
	return res.Entries[i]
}

func TestToolsSample(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool               loom.Tool
		body               string
		envelope           bool
		admitted, withheld int
	}{
		{loom.Search, `{"query":"atlas"}`, true, 3, 1},
		{loom.PageDiscover, `{}`, true, 4, 1},
		{loom.PageInspect, `{"target":"Projects/Atlas"}`, false, 1, 0},
		{loom.PageRead, `{"target":"Projects/Atlas/brief.md"}`, false, 1, 0},
		{loom.People, `{"query":"ada@example.com","shape":"summary"}`, false, 1, 0},
		{loom.CalendarList, `{"all":true}`, false, 6, 1},
		{loom.Context, `{"read":"where"}`, false, 1, 0},
		{loom.Profile, `{}`, false, 1, 0},
		{loom.Profile, `{"fresh":true}`, false, 1, 0}, // exit 1 with hasProfile:false is success
	}
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	for i, tt := range tests {
		t.Run(string(tt.tool), func(t *testing.T) {
			rec := g.call("r", tok, string(tt.tool), tt.body)
			wantStatus(t, rec, http.StatusOK)
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			res := checkResult(t, rec.Body.Bytes(), "r:"+string(tt.tool)+":"+itoa(i+1), tt.tool.Command(), tt.envelope)
			if res.Admitted != tt.admitted || res.Withheld != tt.withheld || res.Omitted != 0 || res.Truncated {
				t.Errorf("counts = %d/%d/%d truncated %v, want %d/%d/0 false", res.Admitted, res.Withheld, res.Omitted, res.Truncated, tt.admitted, tt.withheld)
			}

			// The runner got exactly BuildArgv's argv and the configured env.
			calls := g.fake.Calls()
			if len(calls) != i+1 {
				t.Fatalf("runner calls = %d, want %d", len(calls), i+1)
			}
			inv, err := loom.BuildArgv(g.deps.Loom, tt.tool, []byte(tt.body))
			if err != nil {
				t.Fatalf("BuildArgv(%s): %v", tt.body, err)
			}
			if diff := cmp.Diff(inv.Argv, calls[i].Argv); diff != "" {
				t.Errorf("argv mismatch (-BuildArgv +runner):\n%s", diff)
			}
			if diff := cmp.Diff(g.deps.Env, calls[i].Env); diff != "" {
				t.Errorf("env mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestToolArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool loom.Tool
		body string
		want []string // after the CLI path
	}{
		{"limit 5.0 is 5", loom.Search, `{"query":"a","limit":5.0}`, []string{"search", "a", "--json", "--limit", "5"}},
		{"limit 5e0 is 5", loom.Search, `{"query":"a","limit":5e0}`, []string{"search", "a", "--json", "--limit", "5"}},
		{"every search option", loom.Search,
			`{"rank":"recency","limit":7,"person":"handle:ada","tz":"Europe/London","until":"2026-03-01","since":"2026-02-01","sources":"mail,notes","query":"launch"}`,
			[]string{"search", "launch", "--json", "--sources", "mail,notes", "--since", "2026-02-01", "--until", "2026-03-01", "--tz", "Europe/London", "--person", "handle:ada", "--limit", "7", "--rank", "recency"}},
		{"person only", loom.Search, `{"person":"ada@example.com"}`, []string{"search", "--json", "--person", "ada@example.com"}},
		{"a handle in a query is literal text", loom.Search, `{"query":"cfh:v:22222"}`, []string{"search", "cfh:v:22222", "--json"}},
		{"discover plural kind", loom.PageDiscover, `{"kind":"projects","limit":2}`, []string{"page", "discover", "--json", "--concise", "--kind", "projects", "--limit", "2"}},
		{"discover default kind", loom.PageDiscover, `{}`, []string{"page", "discover", "--json", "--concise"}},
		{"inspect", loom.PageInspect, `{"target":"Projects/Atlas"}`, []string{"page", "inspect", "Projects/Atlas", "--json", "--concise"}},
		{"read", loom.PageRead, `{"target":"Projects/Atlas"}`, []string{"page", "read", "Projects/Atlas", "--json"}},
		{"people card", loom.People, `{"query":"+1 555 010 4477","shape":"card"}`, []string{"people", "+1 555 010 4477", "--json", "--shape", "card"}},
		{"calendar range", loom.CalendarList, `{"to":"2026-03-31","from":"2026-03-01"}`, []string{"calendar", "list", "--json", "--from", "2026-03-01", "--to", "2026-03-31"}},
		{"calendar all false", loom.CalendarList, `{"all":false}`, []string{"calendar", "list", "--json"}},
		{"context activity", loom.Context, `{"read":"activity","until":"b","since":"a","at":"c"}`, []string{"context", "activity", "--json", "--at", "c", "--since", "a", "--until", "b"}},
		{"profile fresh", loom.Profile, `{"fresh":true}`, []string{"profile", "--json", "--fresh"}},
		{"profile not fresh", loom.Profile, `{"fresh":false}`, []string{"profile", "--json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{RunFunc: loomtest.Reply(`{"hits":[],"pages":[]}`, 0)})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			g.call("r", tok, string(tt.tool), tt.body)
			calls := g.fake.Calls()
			if len(calls) != 1 {
				t.Fatalf("runner calls = %d, want 1", len(calls))
			}
			want := append([]string{g.deps.Loom.CLIPath}, tt.want...)
			if diff := cmp.Diff(want, calls[0].Argv); diff != "" {
				t.Errorf("argv mismatch (-want +got):\n%s", diff)
			}
			built, err := loom.BuildArgv(g.deps.Loom, tt.tool, []byte(tt.body))
			if err != nil || !cmp.Equal(built.Argv, calls[0].Argv) {
				t.Errorf("BuildArgv(%s) = %q, %v; the runner got %q", tt.body, built.Argv, err, calls[0].Argv)
			}
		})
	}
}

// TestOutputIDSequence: the outputId of each answer on the wire, a
// problem's included; a request the contract refuses takes no output
// number, nor does the result writer. (The sequence itself is the core's:
// TestOutputSequence in package gateway.)
func TestOutputIDSequence(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)

	steps := []struct {
		op, body string
		status   int
		outputID string // "" for no output
	}{
		{"loom_search", `{"query":"atlas"}`, 200, "r:loom_search:1"},
		{"loom_search", `{"query":"-x"}`, 400, "r:loom_search:2"},                  // builder refusal
		{"describe_handle", `{"token":"cfh:v:22222"}`, 200, "r:describe_handle:3"}, // describe counts
		{"loom_search", `{"query":"x","limit":0}`, 400, ""},                        // contract violation: no output
		{"loom_people", `{"query":"nobody@example.com"}`, 404, "r:loom_people:4"},  // loom error
		{"result", `{"value":"done"}`, 201, ""},                                    // the result writer is not an output
		{"loom_profile", `{}`, 200, "r:loom_profile:5"},
	}
	for _, s := range steps {
		rec := g.call("r", tok, s.op, s.body)
		if rec.Code != s.status {
			t.Fatalf("%s %s = %d %s, want %d", s.op, s.body, rec.Code, rec.Body, s.status)
		}
		var got struct {
			OutputID string `json:"outputId"`
		}
		decode(t, rec, &got)
		if got.OutputID != s.outputID {
			t.Errorf("%s %s: outputId = %q, want %q", s.op, s.body, got.OutputID, s.outputID)
		}
	}
	if s := g.summary(t, "r"); s.Calls != 5 {
		t.Errorf("summary calls = %d, want 5", s.Calls)
	}
}

// wireCall is a call as the host reads it.
type wireCall struct {
	OutputID  string  `json:"outputId"`
	Tool      string  `json:"tool"`
	Status    string  `json:"status"`
	Code      *string `json:"code"`
	HostCode  *string `json:"hostCode"`
	Admitted  int     `json:"admitted"`
	Withheld  int     `json:"withheld"`
	Omitted   int     `json:"omitted"`
	Truncated bool    `json:"truncated"`
	Cfc       struct {
		Version       int             `json:"version"`
		ObservedLabel json.RawMessage `json:"observedLabel"`
	} `json:"cfc"`
	ExitCode   *int      `json:"exitCode"`
	DurationMs int64     `json:"durationMs"`
	StartedAt  time.Time `json:"startedAt"`
	Failure    *struct {
		Reason     string   `json:"reason"`
		Detail     *string  `json:"detail"`
		StderrTail *string  `json:"stderrTail"`
		Argv       []string `json:"argv"`
	} `json:"failure"`
	Entries []struct {
		Status      string          `json:"status"`
		ReasonCode  string          `json:"reasonCode"`
		LabelSource string          `json:"labelSource"`
		Label       *disclosedLabel `json:"label"`
		Handle      string          `json:"handle"`
	} `json:"entries"`
}

func (g *testGateway) calls(t *testing.T, id string) []wireCall {
	t.Helper()
	rec := g.hostDo(http.MethodGet, "/host/v1/runs/"+id+"/calls", "")
	wantStatus(t, rec, http.StatusOK)
	var out struct{ Calls []wireCall }
	decode(t, rec, &out)
	return out.Calls
}

func TestLoomErrors(t *testing.T) {
	t.Parallel()
	type runFunc = func(context.Context, []string, []string) (loomref.Output, error)
	tests := []struct {
		name       string
		run        runFunc // nil: the sample loom
		tool       loom.Tool
		body       string
		status     int
		code       string
		hostCode   string
		retryAfter string
		exitCode   *int // recorded in the call log
	}{
		{"busy", loomtest.Fail(loom.ErrBusy), loom.Search, `{"query":"a"}`, 429, "busy", "", "1", nil},
		{"timeout", loomtest.Fail(loom.ErrTimeout), loom.Search, `{"query":"a"}`, 502, "command_failed", "", "", nil},
		{"stdout limit", loomtest.Fail(loom.ErrStdoutLimit), loom.PageRead, `{"target":"x"}`, 502, "command_failed", "", "", nil},
		{"start failure", loomtest.Fail(&loom.StartError{Err: errors.New("exec: not found")}), loom.Profile, `{}`, 502, "command_failed", "", "", nil},
		{"start sentinel", loomtest.Fail(loom.ErrStart), loom.Profile, `{}`, 502, "command_failed", "", "", nil},
		{"cancelled", loomtest.Fail(loom.ErrCancelled), loom.Search, `{"query":"a"}`, 499, "cancelled", "", "", nil},
		{"exit 2 without stdout", loomtest.Reply("", 2), loom.Search, `{"query":"a"}`, 502, "command_failed", "", "", ptr(2)},
		{"exit 2 with a payload", loomtest.Reply(`{"hits":[]}`, 2), loom.Search, `{"query":"a"}`, 502, "command_failed", "", "", ptr(2)},
		{"exit 2 from the sample", nil, loom.Context, `{"read":"activity","since":"2026-01-01"}`, 200, "", "", "", nil},
		{"not JSON, exit 0", loomtest.Reply("Loom (sample).", 0), loom.Search, `{"query":"a"}`, 502, "command_failed", "", "", ptr(0)},
		{"trailing data", loomtest.Reply(`{"hits":[]} {}`, 0), loom.Search, `{"query":"a"}`, 502, "command_failed", "", "", ptr(0)},
		{"host refused with code", loomtest.Reply(`{"ok":false,"code":"rate_limited","message":"slow down"}`, 0), loom.Search, `{"query":"a"}`, 502, "host_refused", "rate_limited", "", ptr(0)},
		{"host refused, exit 1", loomtest.Reply(`{"ok":false,"code":"rate_limited"}`, 1), loom.People, `{"query":"a@b"}`, 502, "host_refused", "rate_limited", "", ptr(1)},
		{"host refused without code", loomtest.Reply(`{"ok":false}`, 0), loom.Profile, `{}`, 502, "host_refused", "", "", ptr(0)},
		{"host refused, code not a string", loomtest.Reply(`{"ok":false,"code":7}`, 0), loom.Profile, `{}`, 502, "host_refused", "", "", ptr(0)},
		{"sample refuses a source", nil, loom.Search, `{"query":"a","sources":"restricted"}`, 502, "host_refused", "source_not_permitted", "", ptr(2)},
		{"people exit 1, not JSON", loomtest.Reply("No person matches that lookup.", 1), loom.People, `{"query":"a@b"}`, 404, "not_found", "", "", ptr(1)},
		{"people no match (sample)", nil, loom.People, `{"query":"nobody@example.com"}`, 404, "not_found", "", "", ptr(1)},
		{"people exit 3, not JSON", loomtest.Reply("2 people match", 3), loom.People, `{"query":"a@b"}`, 409, "contested", "", "", ptr(3)},
		{"people contested (sample)", nil, loom.People, `{"query":"team@example.com"}`, 409, "contested", "", "", ptr(3)},
		{"people exit 1 with JSON", loomtest.Reply(`{"id":"x"}`, 1), loom.People, `{"query":"a@b"}`, 502, "command_failed", "", "", ptr(1)},
		{"search by person, no match", nil, loom.Search, `{"person":"nobody@example.com"}`, 404, "not_found", "", "", ptr(1)},
		{"search by person, contested", nil, loom.Search, `{"query":"a","person":"team@example.com"}`, 409, "contested", "", "", ptr(3)},
		{"search without person, exit 1 not JSON", loomtest.Reply("nothing", 1), loom.Search, `{"query":"a"}`, 502, "command_failed", "", "", ptr(1)},
		{"search schema version 2", loomtest.Reply(`{"schemaVersion":2,"hits":[]}`, 0), loom.Search, `{"query":"a"}`, 502, "schema_version_mismatch", "", "", ptr(0)},
		{"search schema version 2 (sample)", nil, loom.Search, `{"query":"schema-v2"}`, 502, "schema_version_mismatch", "", "", ptr(0)},
		{"search schema version \"1\"", loomtest.Reply(`{"schemaVersion":"1","hits":[]}`, 0), loom.Search, `{"query":"a"}`, 502, "schema_version_mismatch", "", "", ptr(0)},
		{"search schema version 1.0", loomtest.Reply(`{"schemaVersion":1.0,"hits":[]}`, 0), loom.Search, `{"query":"a"}`, 200, "", "", "", nil},
		{"discover without pages", loomtest.Reply(`{"ok":true,"totalPages":0}`, 0), loom.PageDiscover, `{}`, 502, "malformed_payload", "", "", ptr(0)},
		{"search hits not an array", loomtest.Reply(`{"hits":{}}`, 0), loom.Search, `{"query":"a"}`, 502, "malformed_payload", "", "", ptr(0)},
		{"calendar not an array", loomtest.Reply(`{"events":[]}`, 0), loom.CalendarList, `{}`, 502, "malformed_payload", "", "", ptr(0)},
		{"inspect not an object", loomtest.Reply(`[]`, 0), loom.PageInspect, `{"target":"x"}`, 502, "malformed_payload", "", "", ptr(0)},
		{"profile fallback", loomtest.Reply(`{"hasProfile":false}`, 1), loom.Profile, `{}`, 200, "", "", "", nil},
		{"profile exit 1 otherwise", loomtest.Reply(`{"hasProfile":true}`, 1), loom.Profile, `{}`, 502, "command_failed", "", "", ptr(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{RunFunc: tt.run})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			rec := g.call("r", tok, string(tt.tool), tt.body)
			outputID := "r:" + string(tt.tool) + ":1"
			if tt.status == 200 {
				wantStatus(t, rec, 200)
				return
			}
			p := wantProblem(t, rec, tt.status, tt.code)
			if p.OutputID != outputID || p.HostCode != tt.hostCode {
				t.Errorf("problem outputId %q hostCode %q, want %q %q", p.OutputID, p.HostCode, outputID, tt.hostCode)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if strings.Contains(rec.Body.String(), "message") || strings.Contains(rec.Body.String(), "slow down") {
				t.Errorf("problem carries host text: %s", rec.Body)
			}

			calls := g.calls(t, "r")
			if len(calls) != 1 {
				t.Fatalf("call log has %d records, want 1", len(calls))
			}
			c := calls[0]
			var hostCode *string
			if tt.hostCode != "" {
				hostCode = &tt.hostCode
			}
			if c.OutputID != outputID || c.Tool != string(tt.tool) || c.Status != "error" ||
				c.Code == nil || *c.Code != tt.code || !cmp.Equal(c.HostCode, hostCode) || !cmp.Equal(c.ExitCode, tt.exitCode) ||
				c.Cfc.Version != 1 || c.Cfc.ObservedLabel != nil || c.Admitted+c.Withheld+c.Omitted != 0 {
				t.Errorf("call record = %+v, want an error record of %s with code %s hostCode %q exitCode %v", c, outputID, tt.code, tt.hostCode, tt.exitCode)
			}
		})
	}
}

func TestToolNotConfigured(t *testing.T) {
	t.Parallel()
	t.Run("run limited to loom_search", func(t *testing.T) {
		t.Parallel()
		g := newTestGateway(t, gatewayOptions{})
		_, tok := g.createRun(t, `{"runId":"r","tools":["loom_search"]}`)
		n := 0
		for _, r := range agentRoutes[:8] {
			n++
			rec := g.call("r", tok, r.op, r.body)
			if r.op == "loom_search" {
				wantStatus(t, rec, http.StatusOK)
				continue
			}
			p := wantProblem(t, rec, http.StatusNotFound, "not_configured")
			if want := "r:" + r.op + ":" + itoa(n); p.OutputID != want {
				t.Errorf("%s: outputId = %q, want %q", r.op, p.OutputID, want)
			}
		}
		if got := len(g.fake.Calls()); got != 1 {
			t.Errorf("runner calls = %d, want 1 (loom_search only)", got)
		}
	})
	t.Run("run with an empty tools list", func(t *testing.T) {
		t.Parallel()
		g := newTestGateway(t, gatewayOptions{})
		_, tok := g.createRun(t, `{"runId":"r","tools":[]}`)
		wantProblem(t, g.call("r", tok, "loom_search", `{"query":"a"}`), http.StatusNotFound, "not_configured")
		if s := g.summary(t, "r"); len(s.Tools) != 0 {
			t.Errorf("summary tools = %v, want none", s.Tools)
		}
	})
	t.Run("tool not offered by the gateway", func(t *testing.T) {
		t.Parallel()
		g := newTestGateway(t, gatewayOptions{Tools: []loom.Tool{loom.Search}})
		_, tok := g.createRun(t, `{"runId":"r"}`)
		wantStatus(t, g.call("r", tok, "loom_search", `{"query":"a"}`), http.StatusOK)
		wantProblem(t, g.call("r", tok, "loom_profile", `{}`), http.StatusNotFound, "not_configured")
	})
	t.Run("no configuration", func(t *testing.T) {
		t.Parallel()
		g := newTestGateway(t, gatewayOptions{NoConfig: true})
		_, tok := g.createRun(t, `{"runId":"r"}`)
		for i, r := range agentRoutes[:8] {
			p := wantProblem(t, g.call("r", tok, r.op, r.body), http.StatusNotFound, "not_configured")
			if want := "r:" + r.op + ":" + itoa(i+1); p.OutputID != want {
				t.Errorf("%s: outputId = %q, want %q", r.op, p.OutputID, want)
			}
		}
		// Checked before the arguments: a refusable input still answers
		// not_configured.
		wantProblem(t, g.call("r", tok, "loom_search", `{"query":"-x"}`), http.StatusNotFound, "not_configured")
		if got := len(g.fake.Calls()); got != 0 {
			t.Errorf("runner calls = %d, want 0", got)
		}
		if s := g.summary(t, "r"); len(s.Tools) != 0 {
			t.Errorf("summary tools = %v, want none without configuration", s.Tools)
		}
		// A run cannot ask for tools the gateway does not offer.
		p := wantProblem(t, g.hostDo(http.MethodPost, "/host/v1/runs", `{"tools":["loom_search"]}`), 400, "invalid_input")
		if p.Pointer != "/tools/0" || len(p.Choices) != 0 {
			t.Errorf("pointer %q choices %v, want /tools/0 and no choices", p.Pointer, p.Choices)
		}
	})
}

// writeRecord writes a read-ceiling record and returns its path.
func writeRecord(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ceiling.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadCeilingRecord(t *testing.T) {
	t.Parallel()
	workRecord := `{"loomReadCeiling":["` + work + `"],"facets":["work"],"facetSource":"test"}`
	tests := []struct {
		name    string
		record  string // "" means the file does not exist
		facets  []string
		body    string
		status  int
		code    string
		ranLoom bool
	}{
		{"missing record", "", nil, `{"query":"atlas"}`, 503, "ceiling_unavailable", false},
		{"missing record, bad input too", "", nil, `{"query":"-x"}`, 503, "ceiling_unavailable", false},
		{"record not JSON", `{`, nil, `{"query":"atlas"}`, 503, "ceiling_unavailable", false},
		{"record with an empty ceiling", `{"loomReadCeiling":[],"facets":["work"],"facetSource":"t"}`, nil, `{"query":"atlas"}`, 503, "ceiling_unavailable", false},
		{"record of other facets", workRecord, []string{"home"}, `{"query":"atlas"}`, 503, "ceiling_unavailable", false},
		{"record of the configured facets", workRecord, []string{"work"}, `{"query":"atlas"}`, 200, "", true},
		{"valid record, bad input", workRecord, nil, `{"query":"-x"}`, 400, "invalid_input", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "missing.json")
			if tt.record != "" {
				path = writeRecord(t, tt.record)
			}
			g := newTestGateway(t, gatewayOptions{ReadCeilingFile: path, Facets: tt.facets})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			rec := g.call("r", tok, "loom_search", tt.body)
			if tt.status == 200 {
				wantStatus(t, rec, 200)
			} else {
				p := wantProblem(t, rec, tt.status, tt.code)
				if p.OutputID != "r:loom_search:1" {
					t.Errorf("outputId = %q, want r:loom_search:1", p.OutputID)
				}
				if strings.Contains(rec.Body.String(), path) || strings.Contains(rec.Body.String(), filepath.Dir(path)) {
					t.Errorf("problem names the record path: %s", rec.Body)
				}
			}
			if ran := len(g.fake.Calls()) > 0; ran != tt.ranLoom {
				t.Errorf("runner called = %v, want %v", ran, tt.ranLoom)
			}
		})
	}

	// The record narrows the run's ceiling: under a work-only record the
	// health rows are withheld although the run has no ceiling, and a
	// rewritten record takes effect at the next call.
	path := writeRecord(t, workRecord)
	g := newTestGateway(t, gatewayOptions{ReadCeilingFile: path})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	res := checkResult(t, g.call("r", tok, "loom_people", `{"query":"noor@northwind-clinic.example"}`).Body.Bytes(), "r:loom_people:1", "people", false)
	if res.Admitted != 0 || res.Withheld != 1 || res.Entries[0].ReasonCode != ifc.ReasonCeilingExceeded {
		t.Errorf("health card under a work record: %+v, want withheld cfc_ceiling_exceeded", res)
	}
	if err := os.WriteFile(path, []byte(`{"loomReadCeiling":["`+health+`"],"facets":["health"],"facetSource":"test"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res = checkResult(t, g.call("r", tok, "loom_people", `{"query":"noor@northwind-clinic.example"}`).Body.Bytes(), "r:loom_people:2", "people", false)
	if res.Admitted != 1 {
		t.Errorf("health card under a health record: %+v, want admitted", res)
	}
	// The summary's ceiling is the run's, before the record.
	if got := compactJSON(t, g.summary(t, "r").Ceiling); got != "null" {
		t.Errorf("summary ceiling = %s, want null (the record is not part of it)", got)
	}
}

func TestBuilderRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    loom.Tool
		body    string
		pointer string
		choices []string
	}{
		{"query starting with a dash", loom.Search, `{"query":"-x"}`, "/query", nil},
		{"person starting with a dash", loom.Search, `{"person":"--help"}`, "/person", nil},
		{"neither query nor person", loom.Search, `{"rank":"score"}`, "/query", nil},
		{"control character", loom.Search, `{"query":"a\tb"}`, "/query", nil},
		{"over 500 UTF-16 units", loom.Search, `{"query":"` + strings.Repeat("😀", 300) + `"}`, "/query", nil},
		{"people bare name", loom.People, `{"query":"Ada"}`, "/query", nil},
		{"people verb", loom.People, `{"query":"list"}`, "/query", nil},
		{"context where with since", loom.Context, `{"read":"where","since":"2026-01-01"}`, "/since", nil},
		{"context where with until", loom.Context, `{"read":"where","until":"2026-01-01"}`, "/until", nil},
		{"calendar all with from", loom.CalendarList, `{"all":true,"from":"2026-01-01"}`, "/all", nil},
		{"calendar all with to", loom.CalendarList, `{"to":"2026-01-01","all":true}`, "/all", nil},
		{"target starting with a dash", loom.PageRead, `{"target":"-rf"}`, "/target", nil},
	}
	g := newTestGateway(t, gatewayOptions{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := "run-" + itoa(i)
			_, tok := g.createRun(t, `{"runId":"`+id+`"}`)
			rec := g.call(id, tok, string(tt.tool), tt.body)
			p := wantProblem(t, rec, http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer || p.OutputID != id+":"+string(tt.tool)+":1" {
				t.Errorf("pointer %q outputId %q, want %q %q", p.Pointer, p.OutputID, tt.pointer, id+":"+string(tt.tool)+":1")
			}
			if diff := cmp.Diff(tt.choices, p.Choices, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("choices mismatch (-want +got):\n%s", diff)
			}
			// The refused value never comes back.
			var in map[string]any
			_ = json.Unmarshal([]byte(tt.body), &in)
			for _, v := range in {
				if s, ok := v.(string); ok && len(s) > 3 && strings.Contains(rec.Body.String(), s) {
					t.Errorf("problem echoes the value %q: %s", s, rec.Body)
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := len(g.fake.Calls()); n != 0 {
			t.Errorf("refused inputs ran loom %d times", n)
		}
	})
}

func TestContractRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    loom.Tool
		body    string
		pointer string
		choices []string
	}{
		{"unknown field", loom.Search, `{"query":"a","bogus":1}`, "/bogus", nil},
		{"explicit null", loom.Search, `{"query":null}`, "/query", nil},
		{"limit zero", loom.Search, `{"query":"a","limit":0}`, "/limit", nil},
		{"limit over 200", loom.Search, `{"query":"a","limit":201}`, "/limit", nil},
		{"limit fraction", loom.Search, `{"query":"a","limit":5.5}`, "/limit", nil},
		{"discover limit over 500", loom.PageDiscover, `{"limit":501}`, "/limit", nil},
		{"rank enum", loom.Search, `{"query":"a","rank":"Recency"}`, "/rank", []string{"recency", "score"}},
		{"kind enum", loom.PageDiscover, `{"kind":"page"}`, "/kind", []string{"all", "project", "projects", "entity", "entities"}},
		{"read enum", loom.Context, `{"read":"hosted"}`, "/read", []string{"where", "activity"}},
		{"shape enum", loom.People, `{"query":"a@b","shape":"full"}`, "/shape", []string{"summary", "card"}},
		{"target required", loom.PageRead, `{}`, "/target", nil},
		{"empty target", loom.PageInspect, `{"target":""}`, "/target", nil},
		{"date pattern", loom.CalendarList, `{"from":"March 1"}`, "/from", nil},
		{"fresh not a boolean", loom.Profile, `{"fresh":"yes"}`, "/fresh", nil},
		{"duplicate key", loom.Search, `{"query":"a","query":"b"}`, "/query", nil},
		{"not an object", loom.Profile, `[]`, "", nil},
		{"empty body", loom.Profile, ``, "", nil},
	}
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, g.call("r", tok, string(tt.tool), tt.body), http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer || p.OutputID != "" {
				t.Errorf("pointer %q outputId %q, want %q and none", p.Pointer, p.OutputID, tt.pointer)
			}
			if diff := cmp.Diff(tt.choices, p.Choices, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("choices mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(g.fake.Calls()); n != 0 {
		t.Errorf("refused inputs ran loom %d times", n)
	}
	if s := g.summary(t, "r"); s.Calls != 0 {
		t.Errorf("contract violations took %d outputs", s.Calls)
	}
	// Bodies are bounded and must be JSON.
	big := newTestGateway(t, gatewayOptions{MaxRequestBytes: 256})
	_, tokBig := big.createRun(t, `{"runId":"r"}`)
	wantProblem(t, big.call("r", tokBig, "loom_search", `{"query":"`+strings.Repeat("a", 400)+`"}`), http.StatusRequestEntityTooLarge, "request_too_large")
	req := testkit.Serve(big.agent, http.MethodPost, "/v1/runs/r/loom_profile", tokBig, "")
	wantProblem(t, req, http.StatusBadRequest, "invalid_input")
}

func TestCallLog(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{MaxConfidentiality: `["` + work + `"]`})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	search := checkResult(t, g.call("r", tok, "loom_search", `{"query":"a"}`).Body.Bytes(), "r:loom_search:1", "search", true)
	g.clock.Advance(time.Minute)
	wantProblem(t, g.call("r", tok, "loom_search", `{"query":"a","sources":"restricted"}`), 502, "host_refused")

	calls := g.calls(t, "r")
	if len(calls) != 2 {
		t.Fatalf("call log has %d records, want 2", len(calls))
	}
	ok := calls[0]
	if ok.OutputID != "r:loom_search:1" || ok.Tool != "loom_search" || ok.Status != "ok" || ok.Code != nil || ok.HostCode != nil ||
		ok.Admitted != search.Admitted || ok.Withheld != search.Withheld || ok.Omitted != 0 || ok.Truncated ||
		ok.ExitCode == nil || *ok.ExitCode != 0 || !ok.StartedAt.Equal(testStart) || ok.Cfc.Version != 1 {
		t.Errorf("ok call record = %+v", ok)
	}
	wantObserved := `{"confidentiality":["` + work + `",{"anyOf":["` + work + `","` + home + `"]}]}`
	if got := compactJSON(t, ok.Cfc.ObservedLabel); got != wantObserved {
		t.Errorf("observedLabel = %s, want %s", got, wantObserved)
	}
	if len(ok.Entries) != len(search.Entries) {
		t.Fatalf("call record has %d entries, the result %d", len(ok.Entries), len(search.Entries))
	}
	for i, e := range ok.Entries {
		r := search.Entries[i]
		if e.Status != r.Status || e.ReasonCode != r.ReasonCode || e.Handle != r.Handle || e.LabelSource != r.LabelSource ||
			!cmp.Equal(e.Label, r.Label) {
			t.Errorf("call entry %d = %+v, result entry %+v", i, e, r)
		}
	}

	failed := calls[1]
	if failed.Status != "error" || failed.Code == nil || *failed.Code != "host_refused" || failed.HostCode == nil ||
		*failed.HostCode != "source_not_permitted" || failed.ExitCode == nil || *failed.ExitCode != 2 ||
		failed.Cfc.ObservedLabel != nil || failed.Entries != nil || !failed.StartedAt.Equal(testStart.Add(time.Minute)) {
		t.Errorf("failed call record = %+v", failed)
	}
}

func TestModelContextLabel(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r"}`)

	// "retro" finds one unlabeled row: it takes the query label.
	retro := func(outputID string) toolEntry {
		t.Helper()
		res := checkResult(t, g.call("r", tok, "loom_search", `{"query":"retro"}`).Body.Bytes(), outputID, "search", true)
		if len(res.Entries) != 1 || res.Entries[0].Status != "admitted" {
			t.Fatalf("search retro = %+v, want one admitted entry", res)
		}
		return res.Entries[0]
	}
	public := retro("r:loom_search:1")
	if public.LabelSource != "query" || !cmp.Equal(public.Label, &disclosedLabel{Confidentiality: [][]string{}, Integrity: []string{}}) {
		t.Errorf("unlabeled row before any observation: %s %+v, want query and the public label", public.LabelSource, public.Label)
	}
	// An unlabeled row observes nothing.
	if got := compactJSON(t, g.summary(t, "r").ModelContextLabel); got != `{"confidentiality":[]}` {
		t.Errorf("modelContextLabel = %s, want empty", got)
	}

	// The profile row is labeled work: the model context now holds work.
	wantStatus(t, g.call("r", tok, "loom_profile", `{}`), http.StatusOK)
	if got := compactJSON(t, g.summary(t, "r").ModelContextLabel); got != `{"confidentiality":["`+work+`"]}` {
		t.Errorf("modelContextLabel after profile = %s, want work", got)
	}
	worked := retro("r:loom_search:3")
	if worked.LabelSource != "query" || !cmp.Equal(worked.Label, &disclosedLabel{Confidentiality: [][]string{{work}}, Integrity: []string{}}) {
		t.Errorf("unlabeled row after profile: %s %+v, want query and work", worked.LabelSource, worked.Label)
	}
	if worked.Handle == public.Handle {
		t.Errorf("the same row under a grown query label kept its handle %s", worked.Handle)
	}

	// A host observation joins in too.
	wantStatus(t, g.hostDo(http.MethodPost, "/host/v1/runs/r/observations", `{"label":{"confidentiality":["`+health+`"]}}`), http.StatusNoContent)
	both := retro("r:loom_search:4")
	if !cmp.Equal(both.Label, &disclosedLabel{Confidentiality: [][]string{{work}, {health}}, Integrity: []string{}}) {
		t.Errorf("unlabeled row after a host observation: %+v, want work and health", both.Label)
	}
	// The same call again keeps the handle.
	if again := retro("r:loom_search:5"); again.Handle != both.Handle {
		t.Errorf("the same row under the same label got a new handle: %s then %s", both.Handle, again.Handle)
	}
}

// TestOutputBound feeds a payload far over the 48,000-unit result budget:
// the result stops at the bound, every entry that fits carries a handle,
// and only those are registered.
func TestOutputBound(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"hits":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"hit-` + itoa(i) + `","snippet":"` + strings.Repeat("x", 1000) + `"}`)
	}
	b.WriteString(`],"query":"` + strings.Repeat("q", 5000) + `"}`)
	g := newTestGateway(t, gatewayOptions{RunFunc: loomtest.Reply(b.String(), 0)})
	_, tok := g.createRun(t, `{"runId":"r"}`)
	rec := g.call("r", tok, "loom_search", `{"query":"x"}`)
	wantStatus(t, rec, http.StatusOK)
	res := checkResult(t, rec.Body.Bytes(), "r:loom_search:1", "search", true)
	if res.Omitted == 0 || !res.Truncated || res.Admitted+res.Omitted != 100 {
		t.Errorf("admitted %d omitted %d truncated %v, want some omitted of 100 and truncated", res.Admitted, res.Omitted, res.Truncated)
	}
	if n := len([]rune(rec.Body.String())); n > ifc.OutputBound {
		t.Errorf("result is %d characters, over the bound %d", n, ifc.OutputBound)
	}
	var env struct{ Query string }
	_ = json.Unmarshal(res.Envelope, &env)
	if len(env.Query) != ifc.StringBound {
		t.Errorf("envelope query is %d characters, want cut to %d", len(env.Query), ifc.StringBound)
	}
	if s := g.summary(t, "r"); s.Handles != res.Admitted {
		t.Errorf("handle table holds %d, the result admitted %d", s.Handles, res.Admitted)
	}
	if c := g.calls(t, "r"); len(c) != 1 || c[0].Omitted != res.Omitted || !c[0].Truncated {
		t.Errorf("call log = %+v, want omitted %d truncated", c, res.Omitted)
	}
}
