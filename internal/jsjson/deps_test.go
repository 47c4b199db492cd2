package jsjson

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFloors holds the lowest floors of docs/ARCHITECTURE.md: jsjson
// imports nothing of the module, ifc only jsjson, and loom only ifc and
// jsjson.
func TestFloors(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	const mod = "github.com/loom-gateway/gateway/"
	allowed := map[string][]string{
		"internal/jsjson": nil,
		"internal/ifc":    {"internal/jsjson"},
		"internal/loom":   {"internal/ifc", "internal/jsjson"},
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
}
