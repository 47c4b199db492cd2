package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
)

// warnMisconfigured logs, at warn level, each setting the gateway starts
// with but that leaves it unable to serve a tool call: no host config (the
// eight tools answer not_configured), or a cliPath that is missing, not a
// regular file or not executable (/readyz answers 503 until it is). Neither
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

// checkTokenFile refuses a host token file that users other than the
// gateway's may read or write, as ssh refuses such a private key: the token
// opens every run of the host API.
func checkTokenFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return usagef("--host-token-file: cannot read %s", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return usagef("--host-token-file %s is open to group or others (mode %04o): the host token must be readable by the gateway's user only (chmod 600 %s)", path, perm, path)
	}
	return nil
}

// portHint is what to do about a listener that cannot open its port.
func portHint(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return " (another process holds the port: stop it, or choose another port)"
	}
	return ""
}
