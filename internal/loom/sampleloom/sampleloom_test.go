package sampleloom_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/sampleloom"
)

var (
	broker = &loom.Config{CLIPath: "/opt/loom/bin/loom", Transport: loom.Transport{Kind: loom.TransportBroker, QueuePath: "/run/loom/q"}}
	direct = func(runID string) *loom.Config {
		return &loom.Config{CLIPath: "/opt/loom/bin/loom", Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: "/var/loom", RunID: runID}}
	}
)

// call runs one tool call through the real argument builder, the sample
// loom and the real outcome reading, as the gateway does.
func call(t *testing.T, cfg *loom.Config, tool loom.Tool, input string) ([]jsontext.Value, jsontext.Value, error) {
	t.Helper()
	inv, err := loom.BuildArgv(cfg, tool, []byte(input))
	if err != nil {
		t.Fatalf("BuildArgv(%s, %s): %v", tool, input, err)
	}
	argv := inv.Argv
	var stdout, stderr bytes.Buffer
	code := sampleloom.Main(argv, loom.Env(cfg, "/usr/bin:/bin", true), &stdout, &stderr)
	if stderr.Len() > 0 { // a usage error: the argv shape was not understood
		t.Fatalf("sample loom %q: exit %d, stderr %q", argv, code, stderr.String())
	}
	payload, err := loomref.Interpret(tool, inv.PersonLookup, loomref.Output{Stdout: stdout.Bytes(), ExitCode: code})
	if err != nil {
		return nil, nil, err
	}
	rows, env, err := loomref.Split(tool, payload)
	if err != nil {
		t.Fatalf("Split(%s): %v", tool, err)
	}
	return rows, env, nil
}

// workCeiling is the work-only ceiling the sample data is built around.
var workCeiling = ifc.CeilingOf(ifc.Confidentiality{ifc.Clause(`"https://loom.example/facet/work"`)})

// classify sorts a row into the four outcomes the sample data is built to
// show under a work-only ceiling: "labeled" (readable, fits), "over"
// (readable, does not fit), "unlabeled" (no ifc), "unreadable".
func classify(t *testing.T, row jsontext.Value) string {
	t.Helper()
	l, present, err := ifc.ReadRowLabel(row)
	switch {
	case !present:
		return "unlabeled"
	case err != nil:
		return "unreadable"
	case ifc.Fits(l.Confidentiality, workCeiling):
		return "labeled"
	}
	return "over"
}

func TestEveryToolShowsEveryOutcome(t *testing.T) {
	all := []string{"labeled", "over", "unlabeled", "unreadable"}
	tests := []struct {
		tool  loom.Tool
		calls []struct {
			cfg   *loom.Config
			input string
		}
	}{
		{loom.Search, calls(broker, `{"query":"atlas"}`, `{"query":"lab results"}`, `{"query":"garden"}`)},
		{loom.PageDiscover, calls(broker, `{}`)},
		{loom.PageInspect, calls(broker, `{"target":"Projects/Atlas"}`, `{"target":"Projects/Garden"}`, `{"target":"Entities/Northwind Clinic"}`, `{"target":"Projects/Payroll"}`)},
		{loom.PageRead, calls(broker, `{"target":"Projects/Atlas/brief.md"}`, `{"target":"Projects/Garden"}`, `{"target":"Entities/Northwind Clinic"}`, `{"target":"Projects/Payroll"}`)},
		{loom.People, calls(broker, `{"query":"ada@example.com"}`, `{"query":"grace@example.org"}`, `{"query":"handle:noor"}`, `{"query":"eve@example.net","shape":"summary"}`)},
		{loom.CalendarList, calls(broker, `{"all":true}`)},
		{loom.Context, calls(broker, `{"read":"where"}`, `{"read":"where","at":"2026-03-01T10:00"}`, `{"read":"activity"}`, `{"read":"activity","since":"2026-03-01","until":"2026-03-02"}`)},
		{loom.Profile, append(calls(broker, `{}`, `{"fresh":true}`), calls(direct("sample-health"), `{}`)[0], calls(direct("sample-unreadable"), `{}`)[0])},
	}
	for _, tt := range tests {
		t.Run(string(tt.tool), func(t *testing.T) {
			seen := map[string]bool{}
			for _, c := range tt.calls {
				rows, _, err := call(t, c.cfg, tt.tool, c.input)
				if err != nil {
					t.Fatalf("%s %s: %v", tt.tool, c.input, err)
				}
				for _, r := range rows {
					seen[classify(t, r)] = true
				}
			}
			var got []string
			for k := range seen {
				got = append(got, k)
			}
			slices.Sort(got)
			if diff := cmp.Diff(all, got); diff != "" {
				t.Errorf("outcomes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func calls(cfg *loom.Config, inputs ...string) []struct {
	cfg   *loom.Config
	input string
} {
	var out []struct {
		cfg   *loom.Config
		input string
	}
	for _, in := range inputs {
		out = append(out, struct {
			cfg   *loom.Config
			input string
		}{cfg, in})
	}
	return out
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		cfg   *loom.Config
		tool  loom.Tool
		input string
		rows  int
		err   error
	}{
		{"search by query", broker, loom.Search, `{"query":"atlas"}`, 4, nil},
		{"search by person", broker, loom.Search, `{"person":"ada@example.com"}`, 5, nil},
		{"search by person and query", broker, loom.Search, `{"query":"garden","person":"person:grace-sample"}`, 1, nil},
		{"search limit", broker, loom.Search, `{"query":"atlas","limit":2,"rank":"recency"}`, 2, nil},
		{"search sources", broker, loom.Search, `{"query":"atlas","sources":"mail"}`, 2, nil},
		{"search dates", broker, loom.Search, `{"query":"atlas","since":"2026-02-26","until":"2026-02-28"}`, 1, nil},
		{"search unknown person", broker, loom.Search, `{"person":"nobody@example.com"}`, 0, loom.ErrNotFound},
		{"search contested person", broker, loom.Search, `{"person":"team@example.com"}`, 0, loom.ErrContested},
		{"search restricted source", broker, loom.Search, `{"query":"atlas","sources":"restricted"}`, 0, &loom.HostRefusedError{HostCode: "source_not_permitted", HasHostCode: true}},
		{"search schema v2", broker, loom.Search, `{"query":"schema-v2"}`, 0, loom.ErrSchemaVersion},
		{"discover projects", broker, loom.PageDiscover, `{"kind":"projects"}`, 3, nil},
		{"discover entity limit", broker, loom.PageDiscover, `{"kind":"entity","limit":1}`, 1, nil},
		{"inspect unknown page", broker, loom.PageInspect, `{"target":"Projects/Nope"}`, 0, &loom.HostRefusedError{HostCode: "page_not_found", HasHostCode: true}},
		{"read document", direct("run-1"), loom.PageRead, `{"target":"Projects/Atlas/brief.md"}`, 1, nil},
		{"people phone", broker, loom.People, `{"query":"+1 (555) 010-4477"}`, 1, nil},
		{"people path", broker, loom.People, `{"query":"People/Grace Sample/about.md"}`, 1, nil},
		{"people group", broker, loom.People, `{"query":"group:atlas-team","shape":"card"}`, 1, nil},
		{"people not found", broker, loom.People, `{"query":"nobody@example.com"}`, 0, loom.ErrNotFound},
		{"people unknown handle", broker, loom.People, `{"query":"handle:nobody"}`, 0, loom.ErrNotFound},
		{"people contested", broker, loom.People, `{"query":"team@example.com"}`, 0, loom.ErrContested},
		{"calendar default window", broker, loom.CalendarList, `{}`, 5, nil},
		{"calendar range", broker, loom.CalendarList, `{"from":"2026-03-04","to":"2026-03-05"}`, 2, nil},
		{"calendar all", broker, loom.CalendarList, `{"all":true}`, 7, nil},
		{"calendar empty range", broker, loom.CalendarList, `{"from":"2027-01-01"}`, 0, nil},
		{"context where", broker, loom.Context, `{"read":"where"}`, 1, nil},
		{"profile", broker, loom.Profile, `{}`, 1, nil},
		{"profile fallback", broker, loom.Profile, `{"fresh":true}`, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, _, err := call(t, tt.cfg, tt.tool, tt.input)
			switch want := tt.err.(type) {
			case nil:
				if err != nil {
					t.Fatalf("call = %v", err)
				}
			case *loom.HostRefusedError:
				var got *loom.HostRefusedError
				if !errors.As(err, &got) || *got != *want {
					t.Fatalf("call error = %v, want %#v", err, want)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("call error = %v, want %v", err, want)
				}
			}
			if len(rows) != tt.rows {
				t.Errorf("%d rows, want %d", len(rows), tt.rows)
			}
		})
	}
}

func TestProfileFallbackPayload(t *testing.T) {
	rows, _, err := call(t, broker, loom.Profile, `{"fresh":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rows[0]), `"hasProfile": false`) {
		t.Errorf("fallback row %s lacks hasProfile: false", rows[0])
	}
}

func TestSearchEnvelope(t *testing.T) {
	_, env, err := call(t, broker, loom.Search, `{"query":"atlas","limit":1}`)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(env, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"query":         "atlas",
		"source_status": map[string]any{"mail": "ok", "notes": "ok", "calendar": "ok", "chat": "ok"},
		"warnings":      []any{},
		"truncated":     true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("envelope mismatch (-want +got):\n%s", diff)
	}
}

// TestGoldenArgv runs every argv the golden files pin through the sample
// loom: it must take each shape BuildArgv produces without a usage error.
func TestGoldenArgv(t *testing.T) {
	files, _ := filepath.Glob("../testdata/argv/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	refused := map[string]bool{"calendar_unchecked_date": true} // loom itself rejects 2026-13-45
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var argv, env []string
			for _, f := range a.Files {
				switch f.Name {
				case "argv":
					argv = strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n")
				case "env":
					env = strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n")
				}
			}
			var stdout, stderr bytes.Buffer
			code := sampleloom.Main(argv, env, &stdout, &stderr)
			if refused[name] {
				if code != 2 || stdout.Len() != 0 {
					t.Errorf("exit %d, stdout %q; want a usage error", code, stdout.String())
				}
				return
			}
			if code != 0 && code != 1 && code != 3 || stderr.Len() != 0 {
				t.Errorf("Main(%q) = exit %d, stderr %q", argv, code, stderr.String())
			}
		})
	}
}

func TestMainRefusals(t *testing.T) {
	env := loom.Env(broker, "/bin", true)
	tests := []struct {
		name string
		argv []string
		env  []string
	}{
		{"no transport", []string{"loom", "profile", "--json"}, []string{"PATH=/bin"}},
		{"no command", []string{"loom"}, env},
		{"unknown command", []string{"loom", "people-merge", "--json"}, env},
		{"unknown flag", []string{"loom", "search", "x", "--json", "--rpc-queue", "/x"}, env},
		{"flag missing value", []string{"loom", "search", "x", "--json", "--limit"}, env},
		{"repeated flag", []string{"loom", "profile", "--json", "--fresh", "--fresh"}, env},
		{"extra positional", []string{"loom", "people", "a@b", "c@d", "--json"}, env},
		{"bad kind", []string{"loom", "page", "discover", "--json", "--kind", "pages"}, env},
		{"all with dates", []string{"loom", "calendar", "list", "--json", "--all", "--from", "2026-01-01"}, env},
		{"where with since", []string{"loom", "context", "where", "--json", "--since", "x"}, env},
		{"search without query or person", []string{"loom", "search", "--json"}, env},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := sampleloom.Main(tt.argv, tt.env, &stdout, &stderr); code != 2 || stdout.Len() != 0 || stderr.Len() == 0 {
				t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 2 with a message on stderr", tt.argv, code, stdout.String(), stderr.String())
			}
		})
	}
}

func TestWithoutJSONFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := sampleloom.Main([]string{"loom", "profile"}, loom.Env(broker, "/bin", true), &stdout, &stderr)
	if code != 0 || jsontext.Value(bytes.TrimSpace(stdout.Bytes())).IsValid() {
		t.Errorf("Main without --json = %d, %q; want text", code, stdout.String())
	}
}
