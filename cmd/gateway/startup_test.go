package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
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

// fakeFile is a FileInfo of a given mode and owner, so that the token file
// rule is tested for every owner without root.
type fakeFile struct {
	mode fs.FileMode
	uid  uint32
}

func (f fakeFile) Name() string       { return "token" }
func (f fakeFile) Size() int64        { return 44 }
func (f fakeFile) Mode() fs.FileMode  { return f.mode }
func (f fakeFile) ModTime() time.Time { return time.Time{} }
func (f fakeFile) IsDir() bool        { return f.mode.IsDir() }
func (f fakeFile) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

// TestTokenFileRule: the modes and owners the host token file rule takes
// and refuses, each refusal a usage error naming the path and its fix.
func TestTokenFileRule(t *testing.T) {
	credDir := t.TempDir()
	inCred := filepath.Join(credDir, "host-token")
	if err := os.WriteFile(inCred, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "host-token")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	const user = 1000
	for _, tc := range []struct {
		name string
		path string
		f    fakeFile
		want string // "" to accept, else a part of the refusal
	}{
		{"own 0600", outside, fakeFile{0o600, user}, ""},
		{"own 0400", outside, fakeFile{0o400, user}, ""},
		{"own 0700", outside, fakeFile{0o700, user}, ""},
		{"own 0640 (a umask's accident)", outside, fakeFile{0o640, user}, "open to its group (mode 0640) and owned by uid 1000"},
		{"own 0440", outside, fakeFile{0o440, user}, "chmod 600 " + outside},
		{"root 0440 (Kubernetes fsGroup)", outside, fakeFile{0o440, 0}, ""},
		{"root 0640", outside, fakeFile{0o640, 0}, ""},
		{"root 0400", outside, fakeFile{0o400, 0}, ""},
		{"root 0660 group-writable", outside, fakeFile{0o660, 0}, "writable by its group (mode 0660)"},
		{"root 0620", outside, fakeFile{0o620, 0}, "chmod g-w " + outside},
		{"root 0444 world-readable", outside, fakeFile{0o444, 0}, "open to others (mode 0444)"},
		{"root 0442 world-writable", outside, fakeFile{0o442, 0}, "open to others"},
		{"own 0604", outside, fakeFile{0o604, user}, "chmod 600 " + outside},
		{"own 0601", outside, fakeFile{0o601, user}, "open to others"},
		{"own 0644", outside, fakeFile{0o644, user}, "open to others (mode 0644)"},
		{"credentials 0440 of the service's user", inCred, fakeFile{0o440, user}, ""},
		{"credentials 0440 root (LoadCredential= with an ACL)", inCred, fakeFile{0o440, 0}, ""},
		{"credentials 0460", inCred, fakeFile{0o460, 0}, "writable by its group"},
		{"credentials 0444", inCred, fakeFile{0o444, 0}, "open to others"},
		{"a FIFO", outside, fakeFile{fs.ModeNamedPipe | 0o600, user}, "is a named pipe (FIFO), not a regular file"},
		{"a directory", outside, fakeFile{fs.ModeDir | 0o700, user}, "is a directory, not a regular file"},
		{"a socket", outside, fakeFile{fs.ModeSocket | 0o600, user}, "is a socket"},
		{"a device", outside, fakeFile{fs.ModeDevice | fs.ModeCharDevice | 0o600, 0}, "is a device"},
	} {
		err := tokenFileProblem(tc.path, tc.f, credDir)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.name, err)
			}
			continue
		}
		if _, usage := errors.AsType[*usageError](err); !usage || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--host-token-file "+tc.path) {
			t.Errorf("%s: %v, want a usage error naming the path and saying %q", tc.name, err, tc.want)
		}
	}
	// Outside $CREDENTIALS_DIRECTORY, or with none, a group-readable token
	// file of another owner than root is refused.
	if err := tokenFileProblem(inCred, fakeFile{0o440, user}, ""); err == nil {
		t.Errorf("0440 of uid %d accepted with no $CREDENTIALS_DIRECTORY", user)
	}
	if err := tokenFileProblem(outside, fakeFile{0o440, user}, credDir); err == nil {
		t.Errorf("0440 of uid %d outside $CREDENTIALS_DIRECTORY accepted", user)
	}
}

// TestReadTokenFile: real files of each kind, through the descriptor the
// gateway opens. A FIFO is refused at once (it used to hang startup).
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	const token = "host-token-read-0123456789abcdef-0123"
	write := func(name string, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", token+"\n", 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A Kubernetes Secret volume: token -> ..data/token, ..data -> a
	// timestamped directory holding the file.
	vol := filepath.Join(dir, "secret")
	stamped := filepath.Join(vol, "..2026_12_07_02_15_14.123456789")
	if err := os.MkdirAll(stamped, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stamped, "token"), []byte(token), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(stamped), filepath.Join(vol, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/token", filepath.Join(vol, "token")); err != nil {
		t.Fatal(err)
	}
	tooBig := write("big", strings.Repeat("x", maxTokenFileBytes+1), 0o600)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"regular 0600", good, ""},
		{"a Secret volume's symlinks", filepath.Join(vol, "token"), ""},
		{"a FIFO", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a directory", dir, "is a directory, not a regular file"},
		{"a socket", sock, "is a socket, not a regular file"},
		{"a device", "/dev/null", "is a device, not a regular file"},
		{"world-readable", write("open", token, 0o644), "open to others (mode 0644)"},
		{"group-writable", write("gw", token, 0o620), "writable by its group"},
		{"empty", write("empty", "\n", 0o600), "is empty"},
		{"too large", tooBig, "larger than 64 KiB"},
		{"missing", filepath.Join(dir, "absent"), "cannot read " + filepath.Join(dir, "absent") + ": it does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				tok string
				err error
			}
			done := make(chan result, 1)
			go func() {
				tok, err := readTokenFile(tc.path, "")
				done <- result{tok, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("readTokenFile(%s) still blocked after 5s", tc.path)
			}
			if tc.want == "" {
				if r.err != nil || r.tok != token {
					t.Errorf("readTokenFile = %q, %v; want the token", r.tok, r.err)
				}
				return
			}
			if _, usage := errors.AsType[*usageError](r.err); !usage || !strings.Contains(r.err.Error(), tc.want) {
				t.Errorf("readTokenFile = %v, want a usage error saying %q", r.err, tc.want)
			}
		})
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

// TestUnknownAtoms: the ceiling atoms startup warns of are those neither a
// known atom form nor a configured facet uses.
func TestUnknownAtoms(t *testing.T) {
	t.Parallel()
	const work, home = "https://loom.example/facet/work", "https://loom.example/facet/home"
	tests := []struct {
		ceiling string
		facets  []string
		want    []string // the atoms warned of
	}{
		{`["` + work + `"]`, nil, nil},
		{`["` + work + `"]`, []string{"work"}, nil},
		{`["` + home + `"]`, []string{"work"}, []string{home}},
		{`[{"anyOf":["` + work + `","` + home + `"]}]`, []string{"work"}, []string{home}},
		{`["https://loom.example/people/ada"]`, []string{"work"}, nil},
		{`["work"]`, nil, []string{"work"}},
		{`["work"]`, []string{"work"}, nil},
		{`["facet/work","urn:x"]`, nil, []string{"facet/work", "urn:x"}},
		{`[{"type":"person","id":"ada"}]`, nil, nil},
		{`[{"anyOf":["work",{"type":"t"}]}]`, nil, []string{"work"}},
		{`[]`, nil, nil},
	}
	for _, tt := range tests {
		conf, err := ifc.ParseCeiling([]byte(tt.ceiling))
		if err != nil {
			t.Fatalf("%s: %v", tt.ceiling, err)
		}
		var got []string
		for _, a := range unknownAtoms(conf, tt.facets) {
			got = append(got, a.atom)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("unknownAtoms(%s, %v) = %q, want %q", tt.ceiling, tt.facets, got, tt.want)
		}
	}
}
