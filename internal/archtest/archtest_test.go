package archtest

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the module's import graph, production code and tests, from one
// go list call shared by the tests of this package.
var module = sync.OnceValues(func() (*graph, error) {
	cmd := exec.Command("go", "list", "-deps", "-test", "-json=ImportPath,Name,ForTest,Imports,Deps", mod+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, &listError{err, stderr.String()}
	}
	return parseList(bytes.NewReader(out))
})

type listError struct {
	err    error
	stderr string
}

func (e *listError) Error() string { return "go list: " + e.err.Error() + "\n" + e.stderr }

func loadModule(t *testing.T) *graph {
	t.Helper()
	g, err := module()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBoundaries holds the module to the boundaries and floors of
// docs/ARCHITECTURE.md: no package crosses one, but for the exceptions
// listed in rules_test.go, each of which must still cross.
func TestBoundaries(t *testing.T) {
	t.Parallel()
	g := loadModule(t)
	for _, p := range problems(g, rules, exceptions) {
		t.Error(p)
	}
	if t.Failed() {
		for _, r := range rules {
			t.Logf("%s: %s", r.id, r.text)
		}
	}
}

// TestGraphIsTheModule checks that the graph holds what go list said, so
// that TestBoundaries cannot pass over an empty or misread graph: the
// packages of the module, their imports, and their tests' imports.
func TestGraphIsTheModule(t *testing.T) {
	t.Parallel()
	g := loadModule(t)
	var ours int
	for path := range g.prod {
		if strings.HasPrefix(path, mod+"/") {
			ours++
		}
	}
	if ours < 30 {
		t.Errorf("%d production packages of the module, want at least 30", ours)
	}
	h, ok := g.prod[m("internal/handlers")]
	if !ok || !slices.Contains(g.nodes[h].imports, m("internal/gateway")) {
		t.Errorf("internal/handlers does not import internal/gateway in the graph")
	}
	if !ok || !slices.Contains(g.nodes[h].deps, m("internal/jsjson")) {
		t.Errorf("internal/handlers does not depend on internal/jsjson in the graph")
	}
	coreTest := slices.ContainsFunc(g.nodes, func(n node) bool {
		return n.test && n.path == m("internal/gateway") && slices.Contains(n.imports, m("internal/loom/loomtest"))
	})
	if !coreTest {
		t.Errorf("no test of internal/gateway imports internal/loom/loomtest in the graph")
	}
	for _, n := range g.nodes {
		if strings.Contains(n.path, " ") || strings.HasSuffix(n.path, "_test") || strings.HasSuffix(n.path, ".test") {
			t.Errorf("node %q is not a package's path", n.path)
		}
	}
}

// TestRulesNamePackages: each rule is about packages that exist, and every
// package of the module it names exists, so a misspelt rule cannot hold
// for nothing.
func TestRulesNamePackages(t *testing.T) {
	t.Parallel()
	g := loadModule(t)
	exists := func(pattern string) bool {
		for path := range g.prod {
			if match(pattern, path) {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		for _, p := range slices.Concat(r.from, r.skip, r.deny, r.allow, r.cross[:]) {
			if strings.HasPrefix(p, mod) && !exists(p) {
				t.Errorf("%s names %s, which is no package of the module", r.id, p)
			}
		}
	}
	for _, e := range exceptions {
		if !exists(e.pkg) || !exists(e.dep) {
			t.Errorf("exception %s names %s or %s, which is no package of the module", e.rule, e.pkg, e.dep)
		}
	}
}

// TestEveryRuleFailsWhenCrossed feeds each rule its deliberate crossing:
// the module's graph with one more import in production code, which the
// check must report under that rule.
func TestEveryRuleFailsWhenCrossed(t *testing.T) {
	t.Parallel()
	g := loadModule(t)
	for _, r := range rules {
		from, dep := r.cross[0], r.cross[1]
		if i, ok := g.prod[from]; !ok || slices.Contains(g.nodes[i].deps, dep) {
			t.Errorf("%s: %s is no package of the module or already depends on %s", r.id, rel(from), rel(dep))
			continue
		}
		want := crossing{rule: r.id, pkg: from, dep: dep}.String()
		got := problems(g.withImport(from, dep), rules, exceptions)
		if !slices.Contains(got, want) {
			t.Errorf("%s: %s importing %s: the check reports %q, want %q among them", r.id, rel(from), rel(dep), got, want)
		}
	}
}

// TestTestsCount reads a small go list output: a test's crossing counts
// for a rule about layering and not for one about production code, a
// package's external test package counts as its tests, the test main is
// left out, and an exception that no longer crosses is reported.
func TestTestsCount(t *testing.T) {
	t.Parallel()
	list := strings.ReplaceAll(`
{"ImportPath": "M/internal/jsjson", "Name": "jsjson"}
{"ImportPath": "M/internal/ifc", "Name": "ifc", "Imports": ["M/internal/jsjson"], "Deps": ["M/internal/jsjson"]}
{"ImportPath": "M/internal/ifc_test [M/internal/ifc.test]", "Name": "ifc_test", "ForTest": "M/internal/ifc",
 "Imports": ["M/internal/ifc [M/internal/ifc.test]", "M/internal/loom/loomtest"],
 "Deps": ["M/internal/ifc [M/internal/ifc.test]", "M/internal/jsjson", "M/internal/loom", "M/internal/loom/loomtest"]}
{"ImportPath": "M/internal/loom/loomtest", "Name": "loomtest", "Imports": ["M/internal/loom"], "Deps": ["M/internal/loom"]}
{"ImportPath": "M/internal/ifc.test", "Name": "main", "Imports": ["M/internal/ifc_test [M/internal/ifc.test]"],
 "Deps": ["M/internal/ifc [M/internal/ifc.test]", "M/internal/ifc_test [M/internal/ifc.test]", "M/internal/loom", "M/internal/loom/loomtest"]}
{"ImportPath": "M/internal/problem [M/internal/problem.test]", "Name": "problem", "ForTest": "M/internal/problem",
 "Imports": ["M/api"], "Deps": ["M/api"]}
{"ImportPath": "M/internal/result", "Name": "result", "Imports": ["net/http"], "Deps": ["net/http"]}
`, "M/", mod+"/")
	g, err := parseList(strings.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.nodes) != 6 {
		t.Errorf("%d nodes, want 6 (the test main left out)", len(g.nodes))
	}
	got := problems(g, rules, []exception{{rule: "B5", pkg: m("web"), dep: m("internal/loom")}})
	want := []string{
		"B6: internal/ifc's tests reach internal/loom through internal/loom/loomtest",
		"B6: internal/ifc's tests reach internal/loom/loomtest",
		"F6: internal/result reaches net/http",
		"B5: web's tests no longer reach internal/loom: delete the exception",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
