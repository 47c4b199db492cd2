package jsjson

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFloors holds the lowest floors of docs/ARCHITECTURE.md: jsjson,
// telemetry and loom's namespace init import nothing of the module, ifc
// only jsjson, and loom only ifc, jsjson and its init; the core (gateway,
// problem, result) links no HTTP package: not net/http, the router or the
// contract's generated code; and no package but tests links loomref, the
// reference reading of loom's stdout.
func TestFloors(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	const mod = "github.com/loom-gateway/gateway/"
	allowed := map[string][]string{
		"internal/jsjson":      nil,
		"internal/ifc":         {"internal/jsjson"},
		"internal/loom":        {"internal/ifc", "internal/jsjson", "internal/loom/nsinit"},
		"internal/loom/nsinit": nil,
		"internal/telemetry":   nil,
	}
	for pkg, may := range allowed {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			name, ok := strings.CutPrefix(dep, mod)
			if !ok || name == pkg {
				continue
			}
			if !slices.Contains(may, name) {
				t.Errorf("%s depends on %s", pkg, name)
			}
		}
	}
	for _, pkg := range []string{"internal/gateway", "internal/problem", "internal/result", "internal/telemetry"} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "net/http" || strings.HasPrefix(dep, "github.com/go-chi/") || strings.HasPrefix(dep, "github.com/getkin/") || strings.HasPrefix(dep, mod+"api/") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list -deps of the module: %v", err)
	}
	const ref = mod + "internal/loom/loomref"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if pkg != ref && slices.Contains(strings.Fields(deps), ref) {
			t.Errorf("%s depends on %s", pkg, ref)
		}
	}
}
