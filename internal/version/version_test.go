package version

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuildInfo(t *testing.T) {
	rev := "f78723a1b2c3d4e5f60718293a4b5c6d7e8f9012"
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want Info
		str  string
	}{
		{"no build information", nil, false, Info{Version: "devel"}, "devel"},
		{"a release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}}, true,
			Info{Version: "v1.2.0", GoVersion: "go1.26.0"}, "v1.2.0"},
		{"a clone: the pseudo-version names the commit", &debug.BuildInfo{GoVersion: "go1.26.0",
			Main:     debug.Module{Version: "v0.0.0-20261206065100-f78723a1b2c3+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, true,
			Info{Version: "v0.0.0-20261206065100-f78723a1b2c3+dirty", Revision: rev, Modified: true, GoVersion: "go1.26.0"},
			"v0.0.0-20261206065100-f78723a1b2c3+dirty"},
		{"devel with a revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, true,
			Info{Version: "devel", Revision: rev}, "devel (f78723a1b2c3)"},
		{"devel, modified", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, true,
			Info{Version: "devel", Revision: rev, Modified: true}, "devel (f78723a1b2c3, modified)"},
		{"go test: no version, no revision", &debug.BuildInfo{Main: debug.Module{Version: ""}}, true, Info{Version: "devel"}, "devel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuildInfo(tc.bi, tc.ok)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fromBuildInfo (-want +got):\n%s", diff)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String() = %q, want %q", s, tc.str)
			}
		})
	}
}
