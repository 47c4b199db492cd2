package tests

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestPayloadPastBounds: a payload that is one JSON value but passes a
// bound of what the gateway holds of one piece of it (a member name over
// 64 KiB or a number over 4 KiB, more than 65,536 members or 1 MiB of names in the
// objects open at one point, an envelope value over 1 MiB) is answered
// malformed_payload, whatever else it says; one just within them is read.
func TestPayloadPastBounds(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	name := `"` + strings.Repeat("n", 70000) + `"`
	cases := []struct {
		name   string
		stdout string
		code   string // "" for a 200
	}{
		{"long-name", `{"hits":[{` + name + `:1}]}`, "malformed_payload"},
		{"long-name-refused", `{"ok":false,"code":"x","hits":[],"a":{` + name + `:1}}`, "malformed_payload"},
		{"long-name-ff", "{\"hits\":[{\"" + strings.Repeat("\xff", 2<<20) + "\":1}]}", "malformed_payload"},
		{"long-number", `{"hits":[{"n":1` + strings.Repeat("0", 5000) + `}]}`, "malformed_payload"},
		{"long-envelope", `{"hits":[],"warnings":[` + strings.Repeat(`1,`, 600000) + `1]}`, "malformed_payload"},
		{"many-names", `{"hits":[{"o":{` + strings.Repeat(`"a":1,`, 70000) + `"b":1}}]}`, "malformed_payload"},
		{"long-name-invalid-json", `{"hits":[{` + name + `:1}]`, "command_failed"},
		{"within", `{"hits":[{"` + strings.Repeat("n", 4000) + `":1,"n":1` + strings.Repeat("0", 4000) + `}],"warnings":[` + strings.Repeat(`1,`, 400000) + `1]}`, ""},
	}
	for _, tc := range cases {
		writeFile(t, filepath.Join(g.Dir, tc.name+".json"), []byte(tc.stdout))
		g.setBehaviour(t, "case-"+tc.name, behaviour{StdoutFile: tc.name + ".json"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := g.workRun(t)
			rep := r.call(t, "loom_search", `{"query":"case=`+tc.name+`"}`)
			if tc.code == "" {
				if rep.Status != http.StatusOK || rep.Result == nil {
					t.Fatalf("status %d %.300s, want 200", rep.Status, rep.Body)
				}
				return
			}
			wantProblem(t, rep, 502, tc.code)
		})
	}
}
