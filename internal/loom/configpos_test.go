package loom

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigErrorWhere: a config that cannot be used names why, and one
// that is not JSON names where it stops being JSON.
func TestConfigErrorWhere(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"missing", filepath.Join(dir, "absent.json"), "loom config: cannot read the file: it does not exist"},
		{"a directory", dir, "loom config: cannot read the file: it is a directory"},
		{"empty", write("empty.json", " \n", 0o600), "loom config: not valid JSON: the file is empty"},
		{"cut short", write("short.json", `{"cliPath":`, 0o600), "loom config: line 1, column 12: not valid JSON"},
		{"a missing colon on line 3", write("colon.json", "{\n  \"cliPath\": \"/x\",\n  \"transport\" {}\n}\n", 0o600), "loom config: line 3, column 15: not valid JSON"},
		{"after the value", write("after.json", "{}\n}", 0o600), "loom config: line 2, column 1: not valid JSON"},
		{"a key error has no position", write("key.json", `{"cliPath":"/x","transport":{"kind":"direct","instanceDir":"/x","runId":"r"},"facet":[]}`, 0o600), "loom config: facet: unknown key"},
	}
	if os.Geteuid() != 0 {
		tests = append(tests, struct{ name, path, want string }{"unreadable", write("locked.json", "{}", 0o000), "loom config: cannot read the file: permission denied"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(tc.path)
			if err == nil || err.Error() != tc.want {
				t.Errorf("LoadConfig(%s) = %v, want %q", tc.name, err, tc.want)
			}
		})
	}
}
