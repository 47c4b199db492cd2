package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
)

// TestLoomContainment: the gateway says once at start-up how loom's
// processes are held, with a warning when no namespace can be made.
func TestLoomContainment(t *testing.T) {
	t.Parallel()
	noNamespace := func(string) (loom.Containment, error) {
		return loom.Containment{}, errors.New("clone: operation not permitted")
	}
	noExecutable := func() (string, error) { return "", errors.New("no /proc") }
	tests := []struct {
		name       string
		executable func() (string, error)
		contain    func(string) (loom.Containment, error)
		namespace  bool
		level      string
	}{
		{"no namespace to be had", os.Executable, noNamespace, false, "WARN"},
		{"no executable: the C init", noExecutable, loom.Contain, true, "INFO"},
		{"this binary", os.Executable, loom.Contain, true, "INFO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.namespace {
				exe, _ := tt.executable()
				if _, err := loom.Contain(exe); err != nil {
					t.Skipf("no namespace here: %v", err)
				}
			}
			var buf bytes.Buffer
			c := loomContainment(slog.New(slog.NewTextHandler(&buf, nil)), tt.executable, tt.contain)
			if got := c.Namespace(); got != tt.namespace {
				t.Errorf("loomContainment = %+v, want a namespace: %v", c, tt.namespace)
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "level="+tt.level) {
				t.Errorf("start-up log %q, want one %s line", lines, tt.level)
			}
			// The warning names what would restore the namespace.
			for _, fix := range []string{"seccomp=loom-gateway.json", "type: Localhost", "CAP_SYS_ADMIN", "unprivileged user namespaces"} {
				if got := strings.Contains(lines[0], fix); got != !tt.namespace {
					t.Errorf("start-up log %q names %q: %v, want %v", lines[0], fix, got, !tt.namespace)
				}
			}
		})
	}
}
