package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCliPathProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct{ name, path, want string }{
		{"executable", write("loom", 0o700), ""},
		{"missing", filepath.Join(dir, "absent"), "does not exist"},
		{"a directory", dir, "is a directory"},
		{"not executable", write("plain", 0o600), "is not executable (mode 0600)"},
		{"a device", "/dev/null", "is not a regular file"},
	}
	for _, tc := range tests {
		if got := cliPathProblem(tc.path); got != tc.want {
			t.Errorf("%s: cliPathProblem = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckTokenFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o700, true}, {0o640, false}, {0o604, false}, {0o620, false}, {0o644, false}, {0o666, false}} {
		p := filepath.Join(dir, "token-"+tc.mode.String())
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		err := checkTokenFile(p)
		if tc.ok != (err == nil) {
			t.Errorf("mode %04o: checkTokenFile = %v, want ok %v", tc.mode, err, tc.ok)
		}
		if _, usage := errors.AsType[*usageError](err); err != nil && (!usage || !strings.Contains(err.Error(), "chmod 600 "+p)) {
			t.Errorf("mode %04o: %v is not a usage error naming the chmod", tc.mode, err)
		}
	}
}

func TestPortHint(t *testing.T) {
	if got := portHint(&os.SyscallError{Syscall: "bind", Err: syscall.EADDRINUSE}); !strings.Contains(got, "another process holds the port") {
		t.Errorf("EADDRINUSE: hint %q", got)
	}
	if got := portHint(errors.New("other")); got != "" {
		t.Errorf("another error: hint %q, want none", got)
	}
}
