package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A node is one package as a build sees it: production code, or a variant
// compiled for a test (the package with its _test.go files, its external
// _test package, or a package recompiled against one of those).
type node struct {
	path    string   // import path, without the variant's " [p.test]" or "_test"
	test    bool     // a variant compiled for a test
	imports []string // direct imports, as paths
	deps    []string // every package it depends on, as paths
}

type graph struct {
	nodes []node
	prod  map[string]int // path -> index of its production node
}

// listed is the part of a `go list -json` record the graph reads.
type listed struct {
	ImportPath string
	Name       string
	ForTest    string
	Imports    []string
	Deps       []string
}

// parseList reads the records of `go list -deps -test -json`, one after
// another, into a graph. The generated test mains (p.test) are left out:
// what they import is the test variants, which are nodes of their own.
func parseList(r io.Reader) (*graph, error) {
	g := &graph{prod: map[string]int{}}
	dec := json.NewDecoder(r)
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.ImportPath == "" {
			return nil, errors.New("go list output: a record without ImportPath")
		}
		path, variant, _ := strings.Cut(p.ImportPath, " ")
		if p.Name == "main" && variant == "" && strings.HasSuffix(path, ".test") {
			continue
		}
		n := node{path: strings.TrimSuffix(path, "_test"), test: variant != "" || p.ForTest != ""}
		for _, i := range p.Imports {
			n.imports = append(n.imports, base(i))
		}
		for _, d := range p.Deps {
			n.deps = append(n.deps, base(d))
		}
		if !n.test {
			g.prod[n.path] = len(g.nodes)
		}
		g.nodes = append(g.nodes, n)
	}
	return g, nil
}

// base is an import path without its test variant.
func base(path string) string {
	p, _, _ := strings.Cut(path, " ")
	return p
}

func match(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// A crossing is one package (or its tests) reaching one denied package.
type crossing struct {
	rule, pkg, dep, via string
	test                bool
}

func (c crossing) String() string {
	who, verb := rel(c.pkg), "reaches"
	if c.test {
		who, verb = who+"'s tests", "reach"
	}
	s := fmt.Sprintf("%s: %s %s %s", c.rule, who, verb, rel(c.dep))
	if c.via != "" && c.via != c.dep {
		s += " through " + rel(c.via)
	}
	return s
}

func rel(path string) string {
	if r, ok := strings.CutPrefix(path, mod+"/"); ok {
		return r
	}
	return path
}

// crossings is every crossing of the rules in g, each package, rule and
// denied package once (a package's test variants count as one, and its
// tests not at all where its production code crosses the same way).
func crossings(g *graph, rules []rule) []crossing {
	seen := map[crossing]bool{}
	var out []crossing
	for _, n := range g.nodes {
		if !strings.HasPrefix(n.path, mod+"/") && n.path != mod {
			continue
		}
		for _, r := range rules {
			if (n.test && !r.tests) || !matchAny(r.from, n.path) || matchAny(r.skip, n.path) {
				continue
			}
			for _, d := range n.deps {
				if d == n.path || !matchAny(r.deny, d) || matchAny(r.allow, d) {
					continue
				}
				c := crossing{rule: r.id, pkg: n.path, dep: d, test: n.test}
				if seen[c] {
					continue
				}
				seen[c] = true
				c.via = g.via(n, d)
				out = append(out, c)
			}
		}
	}
	return slices.DeleteFunc(out, func(c crossing) bool {
		return c.test && seen[crossing{rule: c.rule, pkg: c.pkg, dep: c.dep}]
	})
}

// via is the direct import of n through which it reaches dep.
func (g *graph) via(n node, dep string) string {
	for _, i := range n.imports {
		if i == dep {
			return i
		}
	}
	for _, i := range n.imports {
		if j, ok := g.prod[i]; ok && slices.Contains(g.nodes[j].deps, dep) {
			return i
		}
	}
	return ""
}

// problems checks g: every crossing that is no exception, and every
// exception that no longer crosses, each as one line.
func problems(g *graph, rules []rule, exceptions []exception) []string {
	var out []string
	used := make([]bool, len(exceptions))
	for _, c := range crossings(g, rules) {
		i := slices.IndexFunc(exceptions, func(e exception) bool {
			return c.test && e.rule == c.rule && e.pkg == c.pkg && match(e.dep, c.dep)
		})
		if i >= 0 {
			used[i] = true
			continue
		}
		out = append(out, c.String())
	}
	for i, e := range exceptions {
		if !used[i] {
			out = append(out, fmt.Sprintf("%s: %s's tests no longer reach %s: delete the exception", e.rule, rel(e.pkg), rel(e.dep)))
		}
	}
	return out
}

// withImport is g with one more import, from's production code to dep,
// and everything dep depends on.
func (g *graph) withImport(from, dep string) *graph {
	h := &graph{nodes: slices.Clone(g.nodes), prod: g.prod}
	i, ok := g.prod[from]
	if !ok {
		panic("no production package " + from)
	}
	n := h.nodes[i]
	n.imports = append(slices.Clone(n.imports), dep)
	n.deps = append(slices.Clone(n.deps), dep)
	if j, ok := g.prod[dep]; ok {
		n.deps = append(n.deps, g.nodes[j].deps...)
	}
	h.nodes[i] = n
	return h
}
