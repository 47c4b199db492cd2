package store

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDatabaseClient: the domain types and the packages that read them
// link no database client; only redisstore (and cmd/gateway, which picks a
// store) imports go-redis.
func TestNoDatabaseClient(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	const mod = "github.com/loom-gateway/gateway/"
	for _, pkg := range []string{"internal/store", "internal/result", "internal/gateway", "internal/handlers", "internal/mcpface", "internal/store/memstore"} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "go-redis") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
	out, err := exec.Command("go", "list", "-deps", mod+"internal/store/redisstore").Output()
	if err != nil || !strings.Contains(string(out), "github.com/redis/go-redis/v9") {
		t.Errorf("the test cannot see go-redis even in redisstore: %v", err)
	}
}
