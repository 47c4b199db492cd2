// Package version reports the version of the running gateway, read from
// the module's build information.
package version

import (
	"runtime/debug"
	"sync"
)

// Info is what the build recorded about the binary.
type Info struct {
	// Version is the main module's version: a release tag, or the
	// pseudo-version the go command derives from the commit of a clone
	// (with "+dirty" when the tree had changes); "devel" when the build
	// recorded none (go run, go test, -buildvcs=false).
	Version string
	// Revision is the VCS commit the binary was built from, "" when the
	// build recorded none.
	Revision string
	// Modified reports a build from a tree with uncommitted changes.
	Modified bool
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

var read = sync.OnceValue(func() Info { return fromBuildInfo(debug.ReadBuildInfo()) })

// Get returns the running binary's build information.
func Get() Info { return read() }

// String returns the running binary's version as one string (Info.String).
func String() string { return Get().String() }

// String is the version, with the revision added when the version does
// not already name it: "v1.2.0", "v0.0.0-20261206065100-f78723a1b2c3+dirty",
// "devel (f78723a1b2c3)", "devel".
func (i Info) String() string {
	if i.Version != "devel" || i.Revision == "" {
		return i.Version
	}
	s := "devel (" + short(i.Revision)
	if i.Modified {
		s += ", modified"
	}
	return s + ")"
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	i := Info{Version: "devel"}
	if !ok || bi == nil {
		return i
	}
	i.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		i.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
