package loom

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

var update = flag.Bool("update", false, "rewrite the argv and env sections of testdata/argv/*.txtar")

// goldenPath is the host PATH every golden case is built with.
const goldenPath = "/usr/local/bin:/usr/bin:/bin"

// goldenCase is one testdata/argv/<case>.txtar: sections "tool", "config"
// and "input" are the request; "argv" (one element per line) and "env"
// (sorted, one variable per line) are the expectation.
type goldenCase struct {
	name    string
	file    string
	archive *txtar.Archive
	tool    Tool
	config  []byte
	input   []byte
}

func section(a *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func loadGolden(t testing.TB) []goldenCase {
	t.Helper()
	files, err := filepath.Glob("testdata/argv/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var cases []goldenCase
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c := goldenCase{name: strings.TrimSuffix(filepath.Base(file), ".txtar"), file: file, archive: a}
		tool, _ := section(a, "tool")
		c.tool = Tool(strings.TrimSpace(string(tool)))
		var ok bool
		if c.config, ok = section(a, "config"); !ok {
			t.Fatalf("%s: no config section", file)
		}
		if c.input, ok = section(a, "input"); !ok {
			t.Fatalf("%s: no input section", file)
		}
		cases = append(cases, c)
	}
	return cases
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestBuildArgv(t *testing.T) {
	for _, c := range loadGolden(t) {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := ParseTool(string(c.tool)); !ok {
				t.Fatalf("tool section %q is not a tool", c.tool)
			}
			cfg, err := ParseConfig(c.config)
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			inv, err := BuildArgv(cfg, c.tool, c.input)
			argv := inv.Argv
			if err != nil {
				t.Fatalf("BuildArgv(%s, %s) = %v", c.tool, c.input, err)
			}
			env := Env(cfg, goldenPath, true)
			slices.Sort(env)
			gotArgv := []byte(strings.Join(argv, "\n") + "\n")
			gotEnv := []byte(strings.Join(env, "\n") + "\n")

			if *update {
				var files []txtar.File
				for _, f := range c.archive.Files {
					if f.Name != "argv" && f.Name != "env" {
						files = append(files, f)
					}
				}
				files = append(files, txtar.File{Name: "argv", Data: gotArgv}, txtar.File{Name: "env", Data: gotEnv})
				c.archive.Files = files
				if err := os.WriteFile(c.file, txtar.Format(c.archive), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantArgv, ok := section(c.archive, "argv")
			if !ok {
				t.Fatalf("no argv section; run go test -update")
			}
			wantEnv, _ := section(c.archive, "env")
			if diff := cmp.Diff(lines(wantArgv), argv); diff != "" {
				t.Errorf("argv mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(lines(wantEnv), env); diff != "" {
				t.Errorf("env mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

var brokerConfig = &Config{
	CLIPath:   "/opt/loom/bin/loom",
	Transport: Transport{Kind: TransportBroker, QueuePath: "/run/loom/queue"},
}

func TestBuildArgvRefusals(t *testing.T) {
	long := strings.Repeat("a", 501)
	astral := strings.Repeat("😀", 250) + "a" // 501 UTF-16 units, 251 runes
	pageChoices := []string{"all", "project", "projects", "entity", "entities"}
	tests := []struct {
		name  string
		tool  Tool
		input string
		want  *InputError
	}{
		// The input as a whole.
		{"not json", Search, `{"query":`, &InputError{Reason: ReasonNotObject}},
		{"array", Search, `["query"]`, &InputError{Reason: ReasonNotObject}},
		{"null input", Profile, `null`, &InputError{Reason: ReasonNotObject}},
		{"string input", Profile, `"x"`, &InputError{Reason: ReasonNotObject}},
		{"empty input", Profile, ``, &InputError{Reason: ReasonNotObject}},
		{"two values", Profile, `{} {}`, &InputError{Reason: ReasonNotObject}},
		{"invalid utf8", Search, "{\"query\":\"\xff\"}", &InputError{Reason: ReasonNotObject}},

		// Unknown and duplicate keys.
		{"unknown key", Search, `{"query":"a","rpcQueue":"/x"}`, &InputError{Field: "rpcQueue", Reason: ReasonUnknown}},
		{"unknown before invalid known", Search, `{"query":"-a","zz":1}`, &InputError{Field: "zz", Reason: ReasonUnknown}},
		{"first unknown in input order", Search, `{"b":1,"a":2}`, &InputError{Field: "b", Reason: ReasonUnknown}},
		{"array-index key enumerates first", Search, `{"zz":1,"7":2,"3":3}`, &InputError{Field: "3", Reason: ReasonUnknown}},
		{"non-canonical index keeps order", Search, `{"zz":1,"07":2}`, &InputError{Field: "zz", Reason: ReasonUnknown}},
		{"key of another tool", PageRead, `{"target":"a","kind":"all"}`, &InputError{Field: "kind", Reason: ReasonUnknown}},
		{"profile unknown", Profile, `{"fresh":true,"peek":true}`, &InputError{Field: "peek", Reason: ReasonUnknown}},
		{"duplicate key", Search, `{"query":"a","query":"b"}`, &InputError{Field: "query", Reason: ReasonDuplicate}},

		// Text rule.
		{"text null", Search, `{"query":null}`, &InputError{Field: "query", Reason: ReasonNull}},
		{"text number", Search, `{"query":5}`, &InputError{Field: "query", Reason: ReasonString}},
		{"text array", Search, `{"query":["a"]}`, &InputError{Field: "query", Reason: ReasonString}},
		{"text empty", Search, `{"query":""}`, &InputError{Field: "query", Reason: ReasonLength}},
		{"text 501", Search, `{"query":"` + long + `"}`, &InputError{Field: "query", Reason: ReasonLength}},
		{"text 501 utf16 units", Search, `{"query":"` + astral + `"}`, &InputError{Field: "query", Reason: ReasonLength}},
		{"text tab", Search, `{"query":"a\tb"}`, &InputError{Field: "query", Reason: ReasonControl}},
		{"text newline", Search, `{"query":"a\nb"}`, &InputError{Field: "query", Reason: ReasonControl}},
		{"text NUL", Search, `{"query":"a\u0000b"}`, &InputError{Field: "query", Reason: ReasonControl}},
		{"text unit separator", Search, `{"query":"a\u001fb"}`, &InputError{Field: "query", Reason: ReasonControl}},
		{"text leading dash", Search, `{"query":"--rpc-queue"}`, &InputError{Field: "query", Reason: ReasonDash}},
		{"text escaped dash", Search, `{"query":"\u002dx"}`, &InputError{Field: "query", Reason: ReasonDash}},
		{"person dash", Search, `{"person":"-x"}`, &InputError{Field: "person", Reason: ReasonDash}},
		{"sources dash", Search, `{"query":"a","sources":"-all"}`, &InputError{Field: "sources", Reason: ReasonDash}},
		{"since null", Search, `{"query":"a","since":null}`, &InputError{Field: "since", Reason: ReasonNull}},
		{"until control", Search, `{"query":"a","until":"x\r"}`, &InputError{Field: "until", Reason: ReasonControl}},
		{"tz empty", Search, `{"query":"a","tz":""}`, &InputError{Field: "tz", Reason: ReasonLength}},
		{"target missing", PageInspect, `{}`, &InputError{Field: "target", Reason: ReasonRequired}},
		{"target empty", PageRead, `{"target":""}`, &InputError{Field: "target", Reason: ReasonLength}},
		{"target flag", PageInspect, `{"target":"--engine"}`, &InputError{Field: "target", Reason: ReasonDash}},
		{"target null", PageRead, `{"target":null}`, &InputError{Field: "target", Reason: ReasonNull}},

		// Order of checks within search.
		{"query before person", Search, `{"person":"-p","query":"-q"}`, &InputError{Field: "query", Reason: ReasonDash}},
		{"neither query nor person", Search, `{"limit":5}`, &InputError{Field: "query", Reason: ReasonQueryPerson}},
		{"presence before sources", Search, `{"sources":"-x"}`, &InputError{Field: "query", Reason: ReasonQueryPerson}},
		{"sources before limit", Search, `{"query":"a","limit":0,"sources":5}`, &InputError{Field: "sources", Reason: ReasonString}},
		{"limit before rank", Search, `{"query":"a","rank":"x","limit":0}`, &InputError{Field: "limit", Reason: ReasonInteger}},

		// Integer rule.
		{"limit zero", Search, `{"query":"a","limit":0}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit negative", Search, `{"query":"a","limit":-1}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit fraction", Search, `{"query":"a","limit":1.5}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit string", Search, `{"query":"a","limit":"5"}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit null", Search, `{"query":"a","limit":null}`, &InputError{Field: "limit", Reason: ReasonNull}},
		{"limit bool", Search, `{"query":"a","limit":true}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit unsafe", Search, `{"query":"a","limit":9007199254740992}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit overflow", PageDiscover, `{"limit":1e400}`, &InputError{Field: "limit", Reason: ReasonInteger}},
		{"limit underflow", PageDiscover, `{"limit":1e-400}`, &InputError{Field: "limit", Reason: ReasonInteger}},

		// Enums.
		{"kind unknown", PageDiscover, `{"kind":"pages"}`, &InputError{Field: "kind", Reason: ReasonEnum, Choices: pageChoices}},
		{"kind wrong case", PageDiscover, `{"kind":"All"}`, &InputError{Field: "kind", Reason: ReasonEnum, Choices: pageChoices}},
		{"kind trailing newline", PageDiscover, `{"kind":"all\n"}`, &InputError{Field: "kind", Reason: ReasonEnum, Choices: pageChoices}},
		{"kind null", PageDiscover, `{"kind":null}`, &InputError{Field: "kind", Reason: ReasonEnum, Choices: pageChoices}},
		{"kind before limit", PageDiscover, `{"limit":0,"kind":1}`, &InputError{Field: "kind", Reason: ReasonEnum, Choices: pageChoices}},
		{"rank unknown", Search, `{"query":"a","rank":"relevance"}`, &InputError{Field: "rank", Reason: ReasonEnum, Choices: []string{"recency", "score"}}},
		{"shape unknown", People, `{"query":"a@b","shape":"full"}`, &InputError{Field: "shape", Reason: ReasonEnum, Choices: []string{"summary", "card"}}},

		// People.
		{"people missing query", People, `{"shape":"card"}`, &InputError{Field: "query", Reason: ReasonRequired}},
		{"people bare name", People, `{"query":"Ada Example"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people verb list", People, `{"query":"list"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people verb group-add", People, `{"query":"group-add"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people verb merge", People, `{"query":"merge"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people short phone", People, `{"query":"+1234"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people phone letter", People, `{"query":"555-12a4"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people phone non-ascii digit", People, `{"query":"٥55-1234"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people phone NEL is not JS space", People, `{"query":"5\u00855512"}`, &InputError{Field: "query", Reason: ReasonLookup}},
		{"people dash verb", People, `{"query":"--revoke"}`, &InputError{Field: "query", Reason: ReasonDash}},
		{"people text before shape", People, `{"shape":"x","query":""}`, &InputError{Field: "query", Reason: ReasonLength}},
		{"people lookup before shape", People, `{"shape":"x","query":"revoke"}`, &InputError{Field: "query", Reason: ReasonLookup}},

		// Calendar.
		{"all not boolean", CalendarList, `{"all":"true"}`, &InputError{Field: "all", Reason: ReasonBoolean}},
		{"all null", CalendarList, `{"all":null}`, &InputError{Field: "all", Reason: ReasonNull}},
		{"all before from", CalendarList, `{"from":"x","all":1}`, &InputError{Field: "all", Reason: ReasonBoolean}},
		{"from not a date", CalendarList, `{"from":"2026-1-01"}`, &InputError{Field: "from", Reason: ReasonDate}},
		{"from with time", CalendarList, `{"from":"2026-01-01T00:00"}`, &InputError{Field: "from", Reason: ReasonDate}},
		{"from non-ascii digits", CalendarList, `{"from":"２０２６-01-01"}`, &InputError{Field: "from", Reason: ReasonDate}},
		{"from dash", CalendarList, `{"from":"-2026-01-01"}`, &InputError{Field: "from", Reason: ReasonDash}},
		{"from null", CalendarList, `{"from":null}`, &InputError{Field: "from", Reason: ReasonNull}},
		{"to not a date", CalendarList, `{"from":"2026-01-01","to":"tomorrow"}`, &InputError{Field: "to", Reason: ReasonDate}},
		{"from before to", CalendarList, `{"to":"x","from":"y"}`, &InputError{Field: "from", Reason: ReasonDate}},
		{"all with from", CalendarList, `{"all":true,"from":"2026-01-01"}`, &InputError{Field: "all", Reason: ReasonAllDates}},
		{"all with to", CalendarList, `{"to":"2026-01-01","all":true}`, &InputError{Field: "all", Reason: ReasonAllDates}},
		{"dates before exclusivity", CalendarList, `{"all":true,"to":"x"}`, &InputError{Field: "to", Reason: ReasonDate}},

		// Context.
		{"read missing", Context, `{}`, &InputError{Field: "read", Reason: ReasonRequired, Choices: []string{"where", "activity"}}},
		{"read hosted", Context, `{"read":"hosted"}`, &InputError{Field: "read", Reason: ReasonEnum, Choices: []string{"where", "activity"}}},
		{"read null", Context, `{"read":null}`, &InputError{Field: "read", Reason: ReasonEnum, Choices: []string{"where", "activity"}}},
		{"read before since", Context, `{"since":"-x","read":"x"}`, &InputError{Field: "read", Reason: ReasonEnum, Choices: []string{"where", "activity"}}},
		{"since with where", Context, `{"read":"where","since":"yesterday"}`, &InputError{Field: "since", Reason: ReasonWhere}},
		{"until with where", Context, `{"read":"where","until":"today"}`, &InputError{Field: "until", Reason: ReasonWhere}},
		{"since text before where check", Context, `{"read":"where","since":"-x"}`, &InputError{Field: "since", Reason: ReasonDash}},
		{"until text before where check", Context, `{"read":"where","since":"a","until":""}`, &InputError{Field: "until", Reason: ReasonLength}},
		{"where check before at", Context, `{"read":"where","at":"-x","until":"a"}`, &InputError{Field: "until", Reason: ReasonWhere}},
		{"at dash", Context, `{"read":"activity","at":"-1h"}`, &InputError{Field: "at", Reason: ReasonDash}},

		// Profile.
		{"fresh string", Profile, `{"fresh":"yes"}`, &InputError{Field: "fresh", Reason: ReasonBoolean}},
		{"fresh null", Profile, `{"fresh":null}`, &InputError{Field: "fresh", Reason: ReasonNull}},
		{"fresh number", Profile, `{"fresh":1}`, &InputError{Field: "fresh", Reason: ReasonBoolean}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := BuildArgv(brokerConfig, tt.tool, []byte(tt.input))
			argv := inv.Argv
			var got *InputError
			if !errors.As(err, &got) {
				t.Fatalf("BuildArgv(%s, %s) = %q, %v; want *InputError", tt.tool, tt.input, argv, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BuildArgv(%s, %s) error mismatch (-want +got):\n%s", tt.tool, tt.input, diff)
			}
			if argv != nil {
				t.Errorf("BuildArgv returned argv %q with an error", argv)
			}
		})
	}
}

// TestInputErrorNeverQuotesValue checks that no refusal message carries the
// rejected value.
func TestInputErrorNeverQuotesValue(t *testing.T) {
	const secret = "s3cr3t-VALUE"
	inputs := []struct {
		tool  Tool
		input string
	}{
		{Search, `{"query":"-` + secret + `"}`},
		{Search, `{"query":"a","rank":"` + secret + `"}`},
		{PageDiscover, `{"kind":"` + secret + `"}`},
		{People, `{"query":"` + strings.ReplaceAll(secret, "-", " ") + `"}`},
		{CalendarList, `{"from":"` + secret + `"}`},
		{Context, `{"read":"` + secret + `"}`},
		{Context, `{"read":"where","since":"` + secret + `"}`},
		{Search, `{"query":"` + secret + "\\n" + `"}`},
	}
	for _, in := range inputs {
		_, err := BuildArgv(brokerConfig, in.tool, []byte(in.input))
		if err == nil {
			t.Fatalf("BuildArgv(%s, %s) succeeded", in.tool, in.input)
		}
		if strings.Contains(strings.ToLower(err.Error()), "s3cr3t") {
			t.Errorf("BuildArgv(%s, %s) error %q quotes the value", in.tool, in.input, err)
		}
	}
}

func TestInputErrorMessage(t *testing.T) {
	tests := []struct {
		err  *InputError
		want string
	}{
		{&InputError{Reason: ReasonNotObject}, "loom: invalid input: input must be a JSON object"},
		{&InputError{Field: "query", Reason: ReasonDash}, `loom: invalid input: "query" must not start with '-'`},
		{&InputError{Field: "kind", Reason: ReasonEnum, Choices: pageKinds}, `loom: invalid input: "kind" must be one of: all, project, projects, entity, entities`},
		{&InputError{Field: "a\nb", Reason: ReasonUnknown}, `loom: invalid input: "a\nb" is not accepted by this tool`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestBuildArgvUnknownTool(t *testing.T) {
	for _, tool := range []Tool{"", "search", "loom_hosted", "LOOM_SEARCH"} {
		if _, err := BuildArgv(brokerConfig, tool, []byte(`{}`)); !errors.Is(err, ErrUnknownTool) {
			t.Errorf("BuildArgv(%q) error = %v, want ErrUnknownTool", tool, err)
		}
	}
}

func TestBuildArgvChoicesAreCopies(t *testing.T) {
	_, err := BuildArgv(brokerConfig, PageDiscover, []byte(`{"kind":"x"}`))
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatal(err)
	}
	ie.Choices[0] = "mutated"
	if pageKinds[0] != "all" {
		t.Fatal("InputError.Choices aliases the package's enum")
	}
}

func TestPersonLookup(t *testing.T) {
	tests := []struct {
		tool  Tool
		input string
		want  bool
	}{
		{People, `{"query":"ada@example.com"}`, true},
		{Search, `{"query":"x"}`, false},
		{Search, `{"person":"ada@example.com"}`, true},
		{Search, `{"query":"x","person":"p"}`, true},
		{Profile, `{}`, false},
		{CalendarList, `{}`, false},
	}
	for _, tt := range tests {
		inv, err := BuildArgv(brokerConfig, tt.tool, []byte(tt.input))
		if err != nil || inv.PersonLookup != tt.want || inv.Tool != tt.tool {
			t.Errorf("BuildArgv(%s, %s) = %+v, %v; want PersonLookup %v", tt.tool, tt.input, inv, err, tt.want)
		}
	}
}

func TestIsLookup(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"ada@example.com", true},
		{"handle:ada", true},
		{"person:ada-example", true},
		{"group:team", true},
		{"People/Ada Example/about.md", true},
		{"merge:x", true}, // the heuristic admits verb-shaped text with a colon
		{"+1 (555) 010-4477", true},
		{"5550104477", true},
		{"55501", true},
		{"5550", false},
		{"+5550", false},
		{"+", false},
		{"", false},
		{"555\u00a00104", true}, // NBSP is in JavaScript's \s
		{"555\u30000104", true}, // ideographic space
		{"555\ufeff0104", true}, // BOM is in JavaScript's \s
		{"555\u20090104", true}, // thin space
		{"555\u200b0104", false},
		{"555\u00850104", false}, // NEL is not
		{"(555) 0104", false},    // must open with a digit
		{"555 0104 x", false},
		{"list", false},
		{"revoke", false},
	}
	for _, tt := range tests {
		if got := isLookup(tt.in); got != tt.want {
			t.Errorf("isLookup(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// builderFlags is every element the builder itself writes after argv[0]:
// subcommand words and flags. An element outside this set came from input.
var builderFlags = map[string]bool{
	"search": true, "page": true, "discover": true, "inspect": true, "read": true,
	"people": true, "calendar": true, "list": true, "context": true, "profile": true,
	"--json": true, "--concise": true, "--sources": true, "--since": true, "--until": true,
	"--tz": true, "--person": true, "--limit": true, "--rank": true, "--kind": true,
	"--shape": true, "--from": true, "--to": true, "--all": true, "--at": true, "--fresh": true,
}

func FuzzBuildArgv(f *testing.F) {
	for _, c := range loadGolden(f) {
		f.Add(string(c.tool), c.input)
	}
	f.Add(string(Search), []byte(`{"query":"-x"}`))
	f.Add(string(People), []byte(`{"query":"list"}`))
	f.Fuzz(func(t *testing.T, tool string, input []byte) {
		for _, cfg := range []*Config{brokerConfig, directConfig} {
			inv, err := BuildArgv(cfg, Tool(tool), input)
			argv := inv.Argv
			if err != nil {
				if argv != nil {
					t.Fatalf("argv %q with error %v", argv, err)
				}
				continue
			}
			if want := Tool(tool) == People || Tool(tool) == Search && slices.Contains(argv, "--person"); inv.PersonLookup != want {
				t.Fatalf("PersonLookup = %v for argv %q", inv.PersonLookup, argv)
			}
			if len(argv) < 2 || argv[0] != cfg.CLIPath {
				t.Fatalf("argv = %q, want argv[0] = %q", argv, cfg.CLIPath)
			}
			for i := 1; i < len(argv); i++ {
				a, isValue := argv[i], isValueFlag(argv[i-1])
				if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r < 0x20 }) {
					t.Fatalf("argv[%d] = %q is empty or holds a control character", i, a)
				}
				// Only the builder's own flags, never a value, may start with '-'.
				if a[0] == '-' && (isValue || !builderFlags[a]) {
					t.Fatalf("argv[%d] = %q reads as a flag", i, a)
				}
				if jsjson.UTF16Len(a) > 500 {
					t.Fatalf("argv[%d] is %d UTF-16 units", i, jsjson.UTF16Len(a))
				}
			}
			if isValueFlag(argv[len(argv)-1]) {
				t.Fatalf("argv %q ends with a flag that takes a value", argv)
			}
			if !bytes.Contains([]byte(strings.Join(argv, "\x00")), []byte("\x00--json")) {
				t.Fatalf("argv %q lacks --json", argv)
			}
		}
	})
}

// isValueFlag reports whether flag takes a value as the next element.
func isValueFlag(flag string) bool {
	switch flag {
	case "--sources", "--since", "--until", "--tz", "--person", "--limit", "--rank",
		"--kind", "--shape", "--from", "--to", "--at":
		return true
	}
	return false
}

var directConfig = &Config{
	CLIPath:   "/opt/loom/bin/loom",
	Transport: Transport{Kind: TransportDirect, InstanceDir: "/var/loom/instance", RunID: "run-7", Actor: "agent:gateway"},
}

func TestWithTraceparent(t *testing.T) {
	env := []string{"PATH=/bin", "LOOM_INSTANCE_DIR=/i", "LOOM_DISPATCH_ID=r"}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	got := WithTraceparent(env[:3:3], tp)
	want := []string{"PATH=/bin", "LOOM_INSTANCE_DIR=/i", "LOOM_DISPATCH_ID=r", "TRACEPARENT=" + tp}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithTraceparent (-want +got):\n%s", diff)
	}
	if len(env) != 3 {
		t.Errorf("WithTraceparent changed its argument: %q", env)
	}
	if got := WithTraceparent(env, ""); !slices.Equal(got, env) {
		t.Errorf("WithTraceparent(env, \"\") = %q, want env", got)
	}
}
