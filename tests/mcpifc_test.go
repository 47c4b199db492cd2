package tests

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mcpToolCall calls tool with args on run's MCP endpoint under revision,
// on the direct path or (sdk) the library's, by a progress token the
// direct path leaves to it; it returns the tool result.
func mcpToolCall(t *testing.T, g *gateway, r *run, revision string, sdk bool, tool, args string) json.RawMessage {
	t.Helper()
	var meta []string
	header := map[string]string{}
	if revision != "" {
		header["MCP-Protocol-Version"] = revision
	}
	if revision == "2026-07-28" {
		meta = append(meta, strings.TrimSuffix(strings.TrimPrefix(statelessMeta, `"_meta":{`), "}"))
		header = statelessHeader("tools/call", tool)
	}
	if sdk {
		meta = append(meta, `"progressToken":"p"`)
	}
	params := `"name":"` + tool + `","arguments":` + args
	if meta != nil {
		params += `,"_meta":{` + strings.Join(meta, ",") + `}`
	}
	resp, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{`+params+`}}`, header)
	var a rpcAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || resp.StatusCode != 200 || len(a.Result) == 0 {
		t.Fatalf("%s %q sdk %v: %d %.400s", tool, revision, sdk, resp.StatusCode, body)
	}
	return a.Result
}

// ifcOf is a tool result's _meta.ifc (nil: none) and whether it is an
// error.
func ifcOf(t *testing.T, result json.RawMessage) (map[string]string, bool) {
	t.Helper()
	var res struct {
		Meta    map[string]json.RawMessage `json:"_meta"`
		IsError bool                       `json:"isError"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		t.Fatalf("%s: %v", result, err)
	}
	raw, ok := res.Meta["ifc"]
	if !ok {
		return nil, res.IsError
	}
	var l map[string]string
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("_meta.ifc %s: %v", raw, err)
	}
	return l, res.IsError
}

// TestMCPIFCLabels: with --mcp-ifc-labels every tool result carries the
// _meta.ifc projection of what it shows, on every revision and on both
// paths; without it none does.
func TestMCPIFCLabels(t *testing.T) {
	t.Parallel()
	on := startGateway(t, gwOptions{Flags: []string{"--mcp-ifc-labels", "--mcp-ifc-trusted-integrity", atomSigned}})
	off := startGateway(t, gwOptions{})
	label := func(integrity, confidentiality string) map[string]string {
		return map[string]string{"integrity": integrity, "confidentiality": confidentiality}
	}
	type step struct {
		name, tool, args string
		loom             string // the command's behaviour; "" leaves it
		stdout           string
		want             map[string]string
		isError          bool
	}
	for _, revision := range mcpAllRevisions {
		for _, sdk := range []bool{false, true} {
			for _, g := range []*gateway{on, off} {
				r := g.workRun(t)
				// The handle of a public row, for describe_handle and result.
				g.setBehaviour(t, "profile", behaviour{Stdout: fill(`{"name":"ada","ifc":{"confidentiality":[],"integrity":["{S}"]}}`)})
				res := mcpToolCall(t, g, r, revision, sdk, "loom_profile", `{}`)
				var sc struct {
					StructuredContent struct{ Entries []struct{ Handle string } }
				}
				_ = json.Unmarshal(res, &sc)
				if len(sc.StructuredContent.Entries) != 1 {
					t.Fatalf("profile: %s", res)
				}
				handle := sc.StructuredContent.Entries[0].Handle
				steps := []step{
					{"one public signed row", "loom_profile", `{}`, "", "", label("trusted", "public"), false},
					{"rows of several labels", "loom_calendar_list", `{}`, "calendar.list",
						`[{"i":1,"ifc":{"confidentiality":[],"integrity":["{S}"]}},{"i":2,"ifc":{"confidentiality":["{W}"],"integrity":["{S}"]}}]`,
						label("trusted", "private"), false},
					{"an unsigned row", "loom_calendar_list", `{}`, "calendar.list",
						`[{"i":1,"ifc":{"confidentiality":[],"integrity":["{S}"]}},{"i":2,"ifc":{"confidentiality":[]}}]`,
						label("untrusted", "public"), false},
					{"an unlabeled row", "loom_calendar_list", `{}`, "calendar.list", `[{"i":1}]`, label("untrusted", "private"), false},
					{"all withheld", "loom_calendar_list", `{}`, "calendar.list",
						`[{"i":1,"ifc":{"confidentiality":["{H}"],"integrity":["{S}"]}},{"i":2,"ifc":7}]`,
						label("trusted", "private"), false},
					{"an envelope", "loom_search", `{"query":"atlas"}`, "search",
						`{"query":"atlas","hits":[{"i":1,"ifc":{"confidentiality":[],"integrity":["{S}"]}}]}`,
						label("untrusted", "private"), false},
					{"an input error", "loom_search", `{}`, "", "", label("untrusted", "private"), true},
					{"a loom error", "loom_calendar_list", `{}`, "calendar.list", `not json`, label("untrusted", "private"), true},
					{"describe a public row's handle", "describe_handle", `{"token":"` + handle + `"}`, "", "", label("untrusted", "public"), false},
					{"describe an unknown token", "describe_handle", `{"token":"cfh:v:22222"}`, "", "", label("trusted", "public"), false},
					{"write the result", "result", `{"value":{"cite":"` + handle + `"}}`, "", "", label("trusted", "public"), false},
					{"write it again", "result", `{"value":1}`, "", "", label("untrusted", "private"), true},
				}
				for _, s := range steps {
					if s.loom != "" {
						g.setBehaviour(t, s.loom, behaviour{Stdout: fill(s.stdout)})
					}
					res := mcpToolCall(t, g, r, revision, sdk, s.tool, s.args)
					got, isError := ifcOf(t, res)
					what := s.name + " (revision " + strconv.Quote(revision) + ", sdk " + strconv.FormatBool(sdk) + ")"
					if s.tool == "describe_handle" {
						// A known handle says when it ends: its run's expiry.
						var d struct {
							StructuredContent struct {
								Known     bool
								ExpiresAt *time.Time
							}
						}
						_ = json.Unmarshal(res, &d)
						want := r.summary(t).ExpiresAt
						switch k, e := d.StructuredContent.Known, d.StructuredContent.ExpiresAt; {
						case k && (e == nil || !e.Equal(want)):
							t.Errorf("%s: expiresAt %v, the run's %v", what, e, want)
						case !k && e != nil:
							t.Errorf("%s: an unknown token has expiresAt %v", what, e)
						}
					}
					if isError != s.isError {
						t.Errorf("%s: isError %v", what, isError)
					}
					want := s.want
					if g == off {
						want = nil
						// Off, a result's _meta is what it was before the
						// projection: none, or under 2026-07-28 the
						// server's info alone.
						var m struct {
							Meta map[string]json.RawMessage `json:"_meta"`
						}
						_ = json.Unmarshal(res, &m)
						if _, info := m.Meta["io.modelcontextprotocol/serverInfo"]; len(m.Meta) > 1 || len(m.Meta) == 1 && (!info || revision != "2026-07-28") {
							t.Errorf("%s off: _meta %v", what, m.Meta)
						}
					}
					if len(got) != len(want) || got["integrity"] != want["integrity"] || got["confidentiality"] != want["confidentiality"] {
						t.Errorf("%s on %v: _meta.ifc %v, want %v", what, g == on, got, want)
					}
				}
			}
		}
	}
}
