package mcpface

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/internal/tooldef"
)

// The reading rules of the clients that read _meta.ifc, written from
// their code:
//
//   - Microsoft agent-framework (python/packages/core/agent_framework/
//     security.py at 5eb3eb745e16, _label_from_mcp_meta,
//     _map_mcp_annotations_to_labels, combine_labels; and the restrict-only
//     rule of its PR #8187, which that snapshot predates: a result's label
//     is combine_labels(fallback, server label) unless the host trusts the
//     server, trust_server_ifc=True). It reads the result's _meta (not a content
//     block's); _meta.ifc must be an object with both members, integrity
//     one of trusted|untrusted and confidentiality one of
//     public|private|user_identity; anything else (a missing member, an
//     unknown value, a non-object) is no label, and the tool's static
//     label stands. The static label comes from the tool's annotations:
//     openWorldHint false is trusted, true untrusted, absent the host's
//     default (untrusted); a read-only tool's confidentiality falls back
//     to public.
//   - github-mcp-server (pkg/ifc/ifc.go at 64a49f34d076) writes the same
//     object with exactly those two members and the values trusted|
//     untrusted and public|private, and writes none on an error result.
//
// afLabel is agent-framework's ContentLabel: integrity 0 trusted, 1
// untrusted; confidentiality 0 public, 1 private, 2 user_identity.
type afLabel struct{ integrity, confidentiality int }

var (
	afIntegrity       = map[string]int{"trusted": 0, "untrusted": 1}
	afConfidentiality = map[string]int{"public": 0, "private": 1, "user_identity": 2}
)

// afParse is _label_from_mcp_meta: the label of a result's _meta, or
// false (no label).
func afParse(meta any) (afLabel, bool) {
	m, ok := meta.(map[string]any)
	if !ok {
		return afLabel{}, false
	}
	l, ok := m["ifc"].(map[string]any)
	if !ok {
		return afLabel{}, false
	}
	is, iok := l["integrity"].(string)
	cs, cok := l["confidentiality"].(string)
	if !iok || !cok {
		return afLabel{}, false
	}
	i, iok := afIntegrity[is]
	c, cok := afConfidentiality[cs]
	if !iok || !cok {
		return afLabel{}, false
	}
	return afLabel{i, c}, true
}

// afStatic is the label agent-framework gives a tool's results from its
// annotations (untrusted by default).
func afStatic(t *mcp.Tool) afLabel {
	l := afLabel{integrity: 1}
	if a := t.Annotations; a != nil && a.OpenWorldHint != nil {
		l.integrity = 0
		if *a.OpenWorldHint {
			l.integrity = 1
		}
	}
	return l
}

// afRead is the label agent-framework gives a tool result (its JSON):
// the server's label only tightens the static one, unless trustServer.
func afRead(t *mcp.Tool, result []byte, trustServer bool) afLabel {
	static := afStatic(t)
	var res struct {
		Meta any `json:"_meta"`
	}
	_ = json.Unmarshal(result, &res)
	server, ok := afParse(res.Meta)
	switch {
	case !ok:
		return static
	case trustServer:
		return server
	}
	return afLabel{max(static.integrity, server.integrity), max(static.confidentiality, server.confidentiality)}
}

// TestAgentFrameworkReadingRules: the rules as written read what they
// should, so the test below can fail.
func TestAgentFrameworkReadingRules(t *testing.T) {
	closed := false
	tool := &mcp.Tool{Name: "x", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}}
	for _, c := range []struct {
		result string
		want   afLabel
	}{
		{`{}`, afLabel{0, 0}},
		{`{"_meta":{"ifc":{"integrity":"untrusted","confidentiality":"private"}}}`, afLabel{1, 1}},
		{`{"_meta":{"ifc":{"integrity":"trusted","confidentiality":"user_identity"}}}`, afLabel{0, 2}},
		{`{"_meta":{"ifc":{"integrity":"untrusted"}}}`, afLabel{0, 0}},
		{`{"_meta":{"ifc":{"integrity":"untrusted","confidentiality":"secret"}}}`, afLabel{0, 0}},
		{`{"_meta":{"ifc":{"integrity":"Untrusted","confidentiality":"private"}}}`, afLabel{0, 0}},
		{`{"_meta":{"ifc":"untrusted"}}`, afLabel{0, 0}},
		{`{"_meta":{"ifc":{"integrity":1,"confidentiality":"private"}}}`, afLabel{0, 0}},
		{`{"content":[],"_meta":{"other":{},"ifc":{"integrity":"untrusted","confidentiality":"public","x":1}}}`, afLabel{1, 0}},
	} {
		if got := afRead(tool, []byte(c.result), false); got != c.want {
			t.Errorf("%s: %v, want %v", c.result, got, c.want)
		}
	}
	open := true
	if got := afStatic(&mcp.Tool{Annotations: &mcp.ToolAnnotations{OpenWorldHint: &open}}); got != (afLabel{1, 0}) {
		t.Errorf("open world: %v", got)
	}
	if got := afStatic(&mcp.Tool{}); got != (afLabel{1, 0}) {
		t.Errorf("no annotations: %v", got)
	}
}

// TestIFCProjectionAsAgentFrameworkReads: every label the face writes, on
// every tool of the catalog and on both paths, is one agent-framework
// reads (never its fallback), and it reads the projection itself whether
// or not the host trusts the server: with the restrict-only rule the
// projection is never looser than the static label of a tool of ours. And
// without the projection it reads each loom tool's results as trusted and
// public (openWorldHint false): the reason the host may want it on.
func TestIFCProjectionAsAgentFrameworkReads(t *testing.T) {
	defs, err := tooldef.Contract()
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][2]string{ // by tool: a result, and its isError
		"result":          {`{"documents":0,"links":0,"status":"ok"}`, ""},
		"describe_handle": {`{"outputId":"r:describe_handle:1","token":"cfh:v:22222","known":false}`, ""},
	}
	loomBody := `{"outputId":"r:t:1","status":"ok","kind":"k","notice":"n","admitted":1,"withheld":0,"omitted":0,"truncated":false,"entries":[{"status":"admitted","label":{"confidentiality":[],"integrity":["s"]},"labelSource":"row","value":{},"handle":"cfh:v:22222"}]}`
	problem := `{"type":"about:blank","title":"t","status":400,"detail":"d","code":"invalid_input"}`
	if n := len(defs.Names()); n != 10 {
		t.Fatalf("%d tools in the catalog", n)
	}
	for _, labels := range []IFCLabels{{On: true}, {On: true, TrustedIntegrity: []string{"s"}}} {
		for _, def := range defs.For(defs.Names()) {
			tool := Tool(def)
			body := loomBody
			if b, ok := bodies[def.Name]; ok {
				body = b[0]
			}
			for _, c := range []struct {
				body    string
				isError bool
			}{{body, false}, {problem, true}} {
				want := labels.project(def.Name, []byte(c.body), c.isError)
				wantAF := afLabel{afIntegrity[want.Integrity], afConfidentiality[want.Confidentiality]}
				sdk, err := json.Marshal(labels.labelled(result([]byte(c.body), c.isError), def.Name, []byte(c.body), c.isError))
				if err != nil {
					t.Fatal(err)
				}
				answers := map[string][]byte{"sdk": sdk}
				for _, stateless := range []bool{false, true} {
					var meta []byte
					if stateless {
						meta, _ = json.Marshal(mcp.Meta{metaServerInfo: &mcp.Implementation{Name: "loom-gateway", Version: "v"}})
					}
					out := appendToolResult(nil, []byte("1"), []byte(c.body), c.isError, withMember(meta, labels.meta(def.Name, []byte(c.body), c.isError)), stateless)
					var resp struct {
						Result json.RawMessage `json:"result"`
					}
					if err := json.Unmarshal(out, &resp); err != nil {
						t.Fatalf("%s: %s: %v", def.Name, out, err)
					}
					answers[map[bool]string{false: "direct", true: "direct, stateless"}[stateless]] = resp.Result
				}
				for path, answer := range answers {
					var res struct {
						Meta any `json:"_meta"`
					}
					_ = json.Unmarshal(answer, &res)
					if _, ok := afParse(res.Meta); !ok {
						t.Errorf("%s (%s, isError %v): agent-framework reads no label in %s", def.Name, path, c.isError, answer)
					}
					for _, trust := range []bool{false, true} {
						if got := afRead(tool, answer, trust); got != wantAF {
							t.Errorf("%s (%s, isError %v, trust %v): agent-framework reads %v, the projection is %+v", def.Name, path, c.isError, trust, got, want)
						}
					}
					// github-mcp-server's shape: exactly the two members.
					var shape struct {
						Meta struct {
							IFC map[string]string `json:"ifc"`
						} `json:"_meta"`
					}
					_ = json.Unmarshal(answer, &shape)
					if len(shape.Meta.IFC) != 2 {
						t.Errorf("%s (%s): _meta.ifc is %v", def.Name, path, shape.Meta.IFC)
					}
				}
			}
			if def.Name != "result" && def.Name != "describe_handle" {
				off, _ := json.Marshal(IFCLabels{}.labelled(result([]byte(body), false), def.Name, []byte(body), false))
				if got := afRead(tool, off, false); got != (afLabel{0, 0}) {
					t.Errorf("%s off: agent-framework reads %v; the docs say trusted and public", def.Name, got)
				}
			}
		}
	}
}
