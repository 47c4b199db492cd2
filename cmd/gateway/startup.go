package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
)

// warnMisconfigured logs, at warn level, each setting the gateway starts
// with but that leaves it unable to serve a tool call: no host config (the
// eight tools answer not_configured), or a cliPath that is missing, not a
// regular file or not executable (/readyz answers 503 until it is); and
// the read ceilings that cannot do what they seem to (warnCeilings). None
// stops startup: the gateway serves its other routes, and a loom installed
// later is found at the next call.
func warnMisconfigured(log *slog.Logger, o *options, d *deps) {
	if o.configPath == "" {
		log.Warn("no host config (--loom-retrieval-config or CF_HARNESS_LOOM_RETRIEVAL_CONFIG): every tool answers not_configured")
		return
	}
	if problem := cliPathProblem(d.LoomPath); problem != "" {
		log.Warn("the host config's cliPath "+problem+": every tool call fails and /readyz answers 503 until it is fixed", "cliPath", d.LoomPath, "config", o.configPath)
	}
	warnCeilings(log, o, d)
}

// warnCeilings logs, at warn level, a read ceiling that cannot do what it
// seems to: none at all (no --max-confidentiality, no readCeilingFile in
// the host config: a run created without maxConfidentiality reads every
// row loom returns), or an atom of --max-confidentiality or of the
// read-ceiling record that no row label is likely to use (unknownAtoms).
// The demo, whose own run has a ceiling, is spared the first.
func warnCeilings(log *slog.Logger, o *options, d *deps) {
	if d.Loom == nil {
		return
	}
	if !d.MaxConfidentiality.Defined() && d.Loom.ReadCeilingFile == "" && !o.demo {
		log.Warn("no read ceiling can apply to a run created without maxConfidentiality: it reads every row loom returns; set --max-confidentiality (a process-wide ceiling every run's is met with), or readCeilingFile in the host config, or give every run a maxConfidentiality")
	}
	for _, a := range unknownAtoms(d.MaxConfidentiality.Clauses(), d.Loom.Facets) {
		log.Warn("a ceiling atom of --max-confidentiality is "+a.why+": a row labeled with other atoms is withheld under it", "atom", a.atom)
	}
	if d.Loom.ReadCeilingFile == "" {
		return
	}
	record, err := loom.ReadCeiling(d.Loom)
	if err != nil {
		log.Warn("the read-ceiling record cannot be used: every tool call answers ceiling_unavailable until it is fixed", "readCeilingFile", d.Loom.ReadCeilingFile, "reason", err.Error())
		return
	}
	for _, a := range unknownAtoms(record.Clauses(), d.Loom.Facets) {
		log.Warn("a ceiling atom of the read-ceiling record is "+a.why+": a row labeled with other atoms is withheld under it", "atom", a.atom, "readCeilingFile", d.Loom.ReadCeilingFile)
	}
}

// unknownAtom is an atom of a ceiling that no row label is likely to use,
// and why.
type unknownAtom struct{ atom, why string }

// unknownAtoms returns the atoms of clauses (a clause's own atom, or each
// of its anyOf) that neither a known atom form nor a configured facet
// uses. What the gateway can know at startup is the atoms' form and the
// host config's facets, not the labels loom will print; so an atom is
// taken as used when it is
//
//   - an object with a string type (a typed atom: its fields are loom's);
//   - a string that is a configured facet id;
//   - a string that is an absolute URI (scheme and host, as
//     https://loom.example/facet/work), unless its path names a facet
//     (".../facet/ID") and the host config lists facets without ID.
//
// Anything else, a bare word such as "work" with no facet of that name,
// a relative path, an object without a string type, is returned.
func unknownAtoms(clauses ifc.Confidentiality, facets []string) []unknownAtom {
	var out []unknownAtom
	check := func(raw json.RawMessage) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		switch a := v.(type) {
		case map[string]any:
			if _, ok := a["type"].(string); !ok {
				out = append(out, unknownAtom{string(raw), "an object without a string type (an atom is a URI or a typed object)"})
			}
		case string:
			if slices.Contains(facets, a) {
				return
			}
			u, err := url.Parse(a)
			if err != nil || u.Scheme == "" || u.Host == "" {
				why := "not a URI (such as https://loom.example/facet/work) nor a typed object"
				if facets != nil {
					why += ", nor one of the host config's facets"
				}
				out = append(out, unknownAtom{a, why})
				return
			}
			if _, id, ok := strings.Cut(u.Path, "/facet/"); ok && facets != nil && !slices.Contains(facets, strings.Trim(id, "/")) {
				out = append(out, unknownAtom{a, "a facet the host config's facets do not list"})
			}
		default:
			out = append(out, unknownAtom{string(raw), "neither a string nor an object"})
		}
	}
	for _, c := range clauses {
		var alts struct {
			AnyOf []json.RawMessage `json:"anyOf"`
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(c, &members) == nil && len(members) == 1 && json.Unmarshal(c, &alts) == nil && alts.AnyOf != nil {
			for _, a := range alts.AnyOf {
				check(a)
			}
			continue
		}
		check(json.RawMessage(c))
	}
	return out
}

// cliPathProblem says what keeps path from being run as loom, "" when
// nothing does. The test is the one /readyz makes: a regular file with an
// execute bit.
func cliPathProblem(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "cannot be reached (permission denied on a directory of its path)"
	case err != nil:
		return "cannot be read: " + err.Error()
	case fi.IsDir():
		return "is a directory"
	case !fi.Mode().IsRegular():
		return "is not a regular file"
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("is not executable (mode %04o)", fi.Mode().Perm())
	}
	return ""
}

// maxTokenFileBytes bounds what the gateway reads of a host token file: a
// token is a line of a few dozen bytes.
const maxTokenFileBytes = 64 << 10

// readTokenFile reads the host token from path under the token file rule
// (docs/SECURITY.md, "The host token file"):
//
//   - path is followed through symlinks (a Kubernetes Secret volume's
//     token -> ..data/token) and must end at a regular file: a FIFO, a
//     directory, a device or a socket is refused before it is opened, and
//     the file is opened with O_NONBLOCK and checked again by its
//     descriptor, so nothing at path can hang startup;
//   - no bit for others (read, write or execute) and no group write bit;
//   - group read only when root owns the file (a Kubernetes Secret with
//     fsGroup: root, 0440, group fsGroup) or it lies in
//     $CREDENTIALS_DIRECTORY (systemd's LoadCredential=: root, 0440 through
//     an ACL naming the service's user); a group-readable file of another
//     owner is a umask's accident, refused as ssh refuses such a key;
//   - the gateway's user must be able to read it.
//
// credDir is $CREDENTIALS_DIRECTORY, "" when unset. Every refusal is a
// usage error naming the path and the fix.
func readTokenFile(path, credDir string) (string, error) {
	b, err := hostTokenFile.read(path, credDir)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", usagef("--host-token-file %s is empty", path)
	}
	return token, nil
}

// secretFile is a file the gateway reads a secret from under the token
// file rule (readTokenFile): the host token's (hostTokenFile) and the
// receipt signing key's. Its refusals name flag, what it holds and how
// one is made.
type secretFile struct {
	flag, what, make string
}

// hostTokenFile is the host token's file (--host-token-file).
var hostTokenFile = secretFile{flag: "--host-token-file", what: "the host token", make: "head -c 32 /dev/urandom | base64 > host-token"}

// read reads the file at path under the token file rule; credDir is
// $CREDENTIALS_DIRECTORY.
func (sf secretFile) read(path, credDir string) ([]byte, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usagef("%s: cannot read %s: it does not exist", sf.flag, path)
	case errors.Is(err, fs.ErrPermission):
		return nil, usagef("%s: cannot read %s: permission denied on a directory of its path", sf.flag, path)
	case err != nil:
		return nil, usagef("%s: cannot read %s: %v", sf.flag, path, errors.Unwrap(err))
	}
	if err := sf.problem(path, fi, credDir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrPermission) {
		uid, _ := fileOwner(fi)
		return nil, usagef("%s %s: the gateway's user (uid %d) may not read it (owner uid %d, mode %04o): make it the gateway's user's, mode 0600 (chown %d %s; chmod 600 %s), or, owned by root, readable by a group of the gateway's user (mode 0440; a Kubernetes Secret: defaultMode 0440 with the pod's securityContext.fsGroup; systemd: LoadCredential=)", sf.flag, path, os.Geteuid(), uid, fi.Mode().Perm(), os.Geteuid(), path, path)
	}
	if err != nil {
		return nil, usagef("%s: cannot read %s: %v", sf.flag, path, errors.Unwrap(err))
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil || !os.SameFile(fi, ofi) {
		return nil, usagef("%s %s changed while the gateway read it: start again once it is written", sf.flag, path)
	}
	if err := sf.problem(path, ofi, credDir); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return nil, usagef("%s: cannot read %s: %v", sf.flag, path, errors.Unwrap(err))
	}
	if len(b) > maxTokenFileBytes {
		return nil, usagef("%s %s is larger than %d KiB: it must hold %s only (%s)", sf.flag, path, maxTokenFileBytes>>10, sf.what, sf.make)
	}
	return b, nil
}

// tokenFileProblem applies the token file rule of readTokenFile to fi, the
// file at path (symlinks followed): its kind, and its mode against its
// owner and credDir.
func tokenFileProblem(path string, fi fs.FileInfo, credDir string) error {
	return hostTokenFile.problem(path, fi, credDir)
}

// problem is tokenFileProblem for sf.
func (sf secretFile) problem(path string, fi fs.FileInfo, credDir string) error {
	if kind := fileKind(fi.Mode()); kind != "" {
		return usagef("%s %s is %s, not a regular file: write %s to a regular file readable by the gateway's user only (chmod 600)", sf.flag, path, kind, sf.what)
	}
	perm := fi.Mode().Perm()
	owner, _ := fileOwner(fi)
	switch {
	case perm&0o007 != 0:
		return usagef("%s %s is open to others (mode %04o): %s must be readable by the gateway's user only (chmod 600 %s; a root-owned file a group reads: chmod 440)", sf.flag, path, perm, sf.what, path)
	case perm&0o020 != 0:
		return usagef("%s %s is writable by its group (mode %04o): only its owner may write it (chmod 600 %s, or chmod g-w %s)", sf.flag, path, perm, path, path)
	case perm&0o050 != 0 && owner != 0 && !inDir(path, credDir):
		return usagef("%s %s is open to its group (mode %04o) and owned by uid %d: a token file may be group-readable only when root owns it or it lies in $CREDENTIALS_DIRECTORY (systemd LoadCredential=); otherwise %s must be readable by the gateway's user only (chmod 600 %s)", sf.flag, path, perm, owner, sf.what, path)
	}
	return nil
}

// fileKind names what a non-regular file is, "" for a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// fileOwner is the uid owning fi's file.
func fileOwner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// inDir says whether path, symlinks followed, lies below dir, symlinks
// followed; false when dir is "".
func inDir(path, dir string) bool {
	if dir == "" {
		return false
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// portHint is what to do about a listener that cannot open its port.
func portHint(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return " (another process holds the port: stop it, or choose another port)"
	}
	return ""
}
