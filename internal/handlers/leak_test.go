package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
)

// TestNoHostTextInProblems: whatever a failing loom leaves in its error
// (exec error text, paths, stderr, stdout, payload messages), the agent's
// problem carries none of it.
func TestNoHostTextInProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		run    func(context.Context, []string, []string) (loomref.Output, error)
		status int
		code   string
	}{
		{"wrapped start error", loomtest.Fail(fmt.Errorf("exec /secret/MARKER: %w", loom.ErrStart)), 502, "command_failed"},
		{"start error cause", loomtest.Fail(&loom.StartError{Err: errors.New("fork/exec /secret/path MARKER-stderr: permission denied")}), 502, "command_failed"},
		{"wrapped timeout", loomtest.Fail(fmt.Errorf("/secret/path MARKER-stderr: %w", loom.ErrTimeout)), 502, "command_failed"},
		{"wrapped busy", loomtest.Fail(fmt.Errorf("/secret/path MARKER: %w", loom.ErrBusy)), 429, "busy"},
		{"unclassified runner error", loomtest.Fail(errors.New("/secret/path MARKER-stderr")), 500, "internal_error"},
		{"stdout not JSON", loomtest.Reply("Traceback: /secret/path MARKER-stderr", 2), 502, "command_failed"},
		{"refusal message", loomtest.Reply(`{"ok":false,"code":"denied","message":"/secret/path MARKER"}`, 2), 502, "host_refused"},
		{"schema version", loomtest.Reply(`{"schemaVersion":"/secret/MARKER","hits":[]}`, 0), 502, "schema_version_mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{RunFunc: tt.run})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			rec := g.call("r", tok, "loom_search", `{"query":"atlas"}`)
			wantProblem(t, rec, tt.status, tt.code)
			for _, leak := range []string{"MARKER", "/secret"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Errorf("problem contains %q: %s", leak, rec.Body)
				}
				for k, v := range rec.Header() {
					if strings.Contains(strings.Join(v, " "), leak) {
						t.Errorf("header %s contains %q", k, leak)
					}
				}
				// The host's call log carries the code and the gateway's
				// own words of why, not loom's text (no stderr here).
				if calls := g.hostDo(http.MethodGet, "/host/v1/runs/r/calls", ""); strings.Contains(calls.Body.String(), leak) {
					t.Errorf("call log contains %q: %s", leak, calls.Body)
				}
			}
		})
	}
}

// TestWithheldRowsDoNotLeak: under a work-only ceiling, the content of the
// sample rows labeled above it (or unreadably) appears nowhere the agent or
// the host's call log and handle table can see.
func TestWithheldRowsDoNotLeak(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, gatewayOptions{})
	_, tok := g.createRun(t, `{"runId":"r","maxConfidentiality":["`+work+`"]}`)
	tests := []struct {
		tool     loom.Tool
		body     string
		withheld int
		secrets  []string // text of the rows that must be withheld
		visible  string   // text of an admitted row, proving the call answered
	}{
		{loom.Search, `{"query":"a"}`, 3,
			[]string{"Blood panel normal", "Lab results", "bring the scan results", "Physio follow-up", "Receipts attached", "expense-report"},
			"launch checklist is final"},
		{loom.PageDiscover, `{}`, 2, []string{"Northwind Clinic", "knee rehabilitation", "Payroll migration"}, "customer importer relaunch"},
		{loom.People, `{"query":"noor@northwind-clinic.example"}`, 1, []string{"Noor", "Knee rehabilitation", "Physiotherapist"}, ""},
		{loom.People, `{"query":"handle:eve"}`, 1, []string{"Eve Sample", "Contractor"}, ""},
		{loom.CalendarList, `{"all":true}`, 2, []string{"Physio follow-up", "Northwind Clinic", "Offsite dinner", "The Example Arms"}, "Atlas kickoff"},
		{loom.Context, `{"read":"activity"}`, 1, []string{"Knee exercises", "physio plan"}, ""},
		{loom.Context, `{"read":"activity","since":"2026-03-01"}`, 1, []string{"Migration dry run review"}, ""},
	}
	for _, tt := range tests {
		rec := g.call("r", tok, string(tt.tool), tt.body)
		wantStatus(t, rec, http.StatusOK)
		var res toolResult
		decode(t, rec, &res)
		if res.Withheld != tt.withheld {
			t.Errorf("%s %s: withheld = %d, want %d", tt.tool, tt.body, res.Withheld, tt.withheld)
		}
		if tt.visible != "" && !strings.Contains(rec.Body.String(), tt.visible) {
			t.Errorf("%s %s: admitted text %q missing: %s", tt.tool, tt.body, tt.visible, rec.Body)
		}
		for _, s := range append(tt.secrets, health) {
			if strings.Contains(rec.Body.String(), s) {
				t.Errorf("%s %s: response contains withheld %q", tt.tool, tt.body, s)
			}
		}
	}
	calls := g.hostDo(http.MethodGet, "/host/v1/runs/r/calls", "").Body.String()
	handles := g.hostDo(http.MethodGet, "/host/v1/runs/r/handles", "").Body.String()
	for _, tt := range tests {
		for _, s := range tt.secrets {
			if strings.Contains(calls, s) || strings.Contains(handles, s) {
				t.Errorf("host call log or handle table contains withheld %q", s)
			}
		}
	}
	// Nothing above the ceiling reached the model-context label.
	if got := compactJSON(t, g.summary(t, "r").ModelContextLabel); strings.Contains(got, health) {
		t.Errorf("modelContextLabel %s holds a withheld row's label", got)
	}
}

// TestStderrOnlyForTheHost: loom's stderr reaches the host's call log and
// audit record (the failure's stderrTail) and nothing an agent reads,
// for a loom that exits 2, one that prints no JSON and one that times
// out. (tests/failure_test.go holds every reason over the binary, on
// REST, MCP and the console's proxy.)
func TestStderrOnlyForTheHost(t *testing.T) {
	t.Parallel()
	const marker = "STDERR-MARKER-/secret/path"
	loud := func(stdout string, code int, err error) func(context.Context, []string, []string) (loomref.Output, error) {
		return func(context.Context, []string, []string) (loomref.Output, error) {
			return loomref.Output{Stdout: []byte(stdout), ExitCode: code, Stderr: []byte("warning: " + marker + "\n")}, err
		}
	}
	tests := []struct {
		name   string
		run    func(context.Context, []string, []string) (loomref.Output, error)
		reason string
	}{
		{"exit 2", loud(`{"hits":[]}`, 2, nil), "exit_status"},
		{"not json", loud("Traceback "+marker, 0, nil), "not_json"},
		{"timeout", loud("", -1, loom.ErrTimeout), "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, gatewayOptions{RunFunc: tt.run})
			_, tok := g.createRun(t, `{"runId":"r"}`)
			rec := g.call("r", tok, "loom_search", `{"query":"atlas"}`)
			wantProblem(t, rec, 502, "command_failed")
			if strings.Contains(rec.Body.String(), "MARKER") || strings.Contains(fmt.Sprint(rec.Header()), "MARKER") {
				t.Errorf("the agent's answer holds stderr: %s", rec.Body)
			}
			calls := g.calls(t, "r")
			if len(calls) != 1 || calls[0].Failure == nil || string(calls[0].Failure.Reason) != tt.reason ||
				calls[0].Failure.StderrTail == nil || *calls[0].Failure.StderrTail != "warning: "+marker+"\n" {
				t.Fatalf("call log %+v, want the %s failure with loom's stderr", calls, tt.reason)
			}
			if f := calls[0].Failure; f.Detail != nil && strings.Contains(*f.Detail, "MARKER") {
				t.Errorf("the failure's detail quotes loom: %q", *f.Detail)
			}
			audits := logRecords(t, g, "audit")
			if len(audits) != 1 {
				t.Fatalf("%d audit records, want 1", len(audits))
			}
			if f, _ := audits[0]["failure"].(map[string]any); f["stderrTail"] != "warning: "+marker+"\n" {
				t.Errorf("audit failure %v, want loom's stderr", audits[0]["failure"])
			}
		})
	}
}

// TestFailureReasonsInContract: the contract's failure reasons are
// loom.Reasons, the closed set the gateway gives (and labels its metric
// with), in the same order.
func TestFailureReasonsInContract(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range doc.Components.Schemas["CallFailure"].Value.Properties["reason"].Value.Enum {
		got = append(got, v.(string))
	}
	var want []string
	for _, r := range loom.Reasons {
		want = append(want, string(r))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the contract's failure reasons %v, want loom.Reasons %v", got, want)
	}
}
