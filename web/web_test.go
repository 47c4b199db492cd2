package web

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/loom-gateway/gateway/api"

	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// TestContractJSONHasTheAgentRoutes: the contract the console serves has
// every route its proxy forwards.
func TestContractJSONHasTheAgentRoutes(t *testing.T) {
	c, err := New(Options{AgentURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	c.Mount(r)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/contract.json", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("contract.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var contract struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &contract); err != nil {
		t.Fatal(err)
	}
	for tool := range agentRoutes {
		if contract.Paths["/v1/runs/{runId}/"+tool] == nil {
			t.Errorf("contract.json has no route for %s", tool)
		}
	}
}

func TestProxyAgentDown(t *testing.T) {
	ag := httptest.NewServer(http.NotFoundHandler())
	url := ag.URL
	ag.Close()
	c, err := New(Options{AgentURL: url})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/console/agent/v1/runs/r/loom_profile", strings.NewReader("{}"))
	rec := httptest.NewRecorder()
	r := chi.NewRouter()
	c.Mount(r)
	r.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), `"agent_unreachable"`) {
		t.Errorf("agent down: %d %s", rec.Code, rec.Body.String())
	}
}

func TestLoopbackIfUnspecified(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:8080":   "127.0.0.1:8080",
		"[::]:8080":      "[::1]:8080",
		":8080":          "127.0.0.1:8080",
		"127.0.0.1:8080": "127.0.0.1:8080",
		"10.1.2.3:80":    "10.1.2.3:80",
		"gw.local:8080":  "gw.local:8080",
	} {
		if got := loopbackIfUnspecified(in); got != want {
			t.Errorf("loopbackIfUnspecified(%q) = %q, want %q", in, got, want)
		}
	}
}

// The page shows a failing call's code with the gateway's fixed detail:
// codes.json is the gateway's problem table (package problem), every code
// with its status, title and detail, plus the console's own
// agent_unreachable.
func TestCodesAreTheProblemTable(t *testing.T) {
	c, err := New(Options{AgentURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	c.Public(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/codes.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("codes.json: %d", rec.Code)
	}
	var got map[string]problem.Info
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]problem.Info{"agent_unreachable": agentUnreachable}
	for _, c := range problem.Codes() {
		info := problem.Lookup(c)
		info.When = "" // documentation only, not served
		want[string(c)] = info
	}
	if len(want) < 20 {
		t.Fatalf("the problem table has %d codes", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("codes.json differs from the problem table (-table +served):\n%s", diff)
	}
}

// Row values are untrusted: the page never parses text as HTML.
func TestNoHTMLSinks(t *testing.T) {
	sink := regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval|Function)\s*[=(]|new Function\b`)
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") && !strings.HasSuffix(p, ".html") {
			return err
		}
		b, _ := fs.ReadFile(static, p)
		for i, line := range strings.Split(string(b), "\n") {
			if sink.MatchString(line) {
				t.Errorf("%s:%d: HTML or code sink: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		if strings.HasSuffix(p, ".html") && (strings.Contains(string(b), "<script>") || strings.Contains(string(b), " on") && regexp.MustCompile(` on[a-z]+=`).Match(b)) {
			t.Errorf("%s: inline script or handler (the CSP forbids them)", p)
		}
		if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).Match(b) {
			t.Errorf("%s: refers to another origin", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestContractKeepsSchemaOrder: contract.json (what the try-a-tool form
// reads) is the contract, with every schema's properties in the order
// api/openapi.yaml declares them, so the form lists the fields in that
// order (not sorted).
func TestContractKeepsSchemaOrder(t *testing.T) {
	got, err := contractJSON(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	// The same document as a plain YAML to JSON conversion.
	var want, have any
	if err := yaml.Unmarshal(api.Spec, &want); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	_ = json.Unmarshal(wantJSON, &want)
	if err := json.Unmarshal(got, &have); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, have) {
		t.Fatal("contract.json is not the contract")
	}
	// Property order of every schema, from the YAML document itself.
	var doc struct {
		Components struct {
			Schemas map[string]yaml.Node `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(api.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Components struct {
			Schemas map[string]map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(got, &js); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, n := range doc.Components.Schemas {
		var yamlOrder []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "properties" {
				for j := 0; j+1 < len(n.Content[i+1].Content); j += 2 {
					yamlOrder = append(yamlOrder, n.Content[i+1].Content[j].Value)
				}
			}
		}
		if len(yamlOrder) < 2 {
			continue
		}
		checked++
		if got := testkit.ObjectKeys(t, js.Components.Schemas[name]["properties"]); !reflect.DeepEqual(got, yamlOrder) {
			t.Errorf("%s properties %v, want the contract's order %v", name, got, yamlOrder)
		}
	}
	if checked == 0 {
		t.Fatal("no schema with properties checked")
	}
	if got := testkit.ObjectKeys(t, js.Components.Schemas["SearchInput"]["properties"]); got[0] != "query" || got[1] != "sources" {
		t.Errorf("SearchInput properties %v, want query, sources, ... first", got)
	}
}
