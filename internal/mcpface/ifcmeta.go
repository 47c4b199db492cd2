package mcpface

import (
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// IFC-aware MCP clients read one label per tool result in _meta.ifc:
// {"integrity":"trusted"|"untrusted","confidentiality":"public"|"private"}
// (GitHub's MCP server writes it; Microsoft agent-framework reads it).
// The face writes that projection of a result's labels when the host
// turns it on (IFCLabels.On), never otherwise: with it off an answer is
// what it was without it, byte for byte. The projection is read from the
// result the agent is shown, never from anything the agent sent, and it
// only rounds up: "public" and "trusted" are each said only when every
// part of the result that could make it private or untrusted is known
// not to (docs/agents.md, "Labels for IFC-aware clients").

// IFCLabels is the host's choice of the _meta.ifc projection.
type IFCLabels struct {
	// On writes _meta.ifc on every tool result.
	On bool
	// TrustedIntegrity lists the integrity atom types the host vouches
	// for: a loom result is "trusted" only when every row it admits
	// carries one of them (and it shows nothing else of loom's). Empty:
	// every loom result is "untrusted".
	TrustedIntegrity []string
}

// The values of the projection: closed sets, the convention's.
const (
	ifcTrusted   = "trusted"
	ifcUntrusted = "untrusted"
	ifcPublic    = "public"
	ifcPrivate   = "private"
)

// ifcLabel is _meta.ifc.
type ifcLabel struct {
	Integrity       string `json:"integrity"`
	Confidentiality string `json:"confidentiality"`
}

// disclosedLabel is a label as a result shows it: atom types only.
type disclosedLabel struct {
	Confidentiality *[][]string `json:"confidentiality"`
	Integrity       []string    `json:"integrity"`
}

// public reports whether l says public: it is there and its
// confidentiality holds no clause.
func (l *disclosedLabel) public() bool {
	return l != nil && l.Confidentiality != nil && len(*l.Confidentiality) == 0
}

// projectedResult is what the projection reads of a tool result.
type projectedResult struct {
	Status   string                     `json:"status"`
	Withheld *int                       `json:"withheld"`
	Omitted  *int                       `json:"omitted"`
	Envelope map[string]json.RawMessage `json:"envelope"`
	Entries  *[]projectedEntry          `json:"entries"`
	Known    *bool                      `json:"known"`
	Label    *disclosedLabel            `json:"label"`
}

type projectedEntry struct {
	Status      string          `json:"status"`
	Label       *disclosedLabel `json:"label"`
	LabelSource string          `json:"labelSource"`
}

// project is the _meta.ifc of the tool result body (and isError) of a
// call of tool:
//
//   - an error (a problem), or a body the projection cannot read:
//     untrusted and private;
//   - result (the run's result written): trusted and public, the
//     gateway's own words about the agent's own value;
//   - describe_handle: for a token the run does not hold (known false),
//     trusted and public; for a held one, untrusted (the label's atom
//     types are loom's text) and public only when the label's
//     confidentiality has no clause;
//   - a loom tool: public only when nothing is withheld or omitted, no
//     envelope member is shown, and every admitted row carries a label of
//     its own (labelSource row: an unlabeled row's label is assumed, not
//     loom's) whose confidentiality has no clause; trusted only when the
//     host lists trusted integrity
//     types, no envelope member is shown, and every admitted row's
//     integrity carries one of them.
func (c IFCLabels) project(tool string, body []byte, isError bool) ifcLabel {
	worst := ifcLabel{Integrity: ifcUntrusted, Confidentiality: ifcPrivate}
	var res projectedResult
	if isError || json.Unmarshal(body, &res) != nil {
		return worst
	}
	switch tool {
	case "result":
		if res.Status != "ok" {
			return worst
		}
		return ifcLabel{Integrity: ifcTrusted, Confidentiality: ifcPublic}
	case "describe_handle":
		switch {
		case res.Known == nil:
			return worst
		case !*res.Known:
			return ifcLabel{Integrity: ifcTrusted, Confidentiality: ifcPublic}
		case res.Label.public():
			return ifcLabel{Integrity: ifcUntrusted, Confidentiality: ifcPublic}
		}
		return worst
	}
	if res.Status != "ok" || res.Entries == nil || res.Withheld == nil || res.Omitted == nil {
		return worst
	}
	public := *res.Withheld == 0 && *res.Omitted == 0 && len(res.Envelope) == 0
	trusted := len(c.TrustedIntegrity) > 0 && len(res.Envelope) == 0
	for _, e := range *res.Entries {
		if e.Status != "admitted" {
			public = false
			continue
		}
		public = public && e.LabelSource == "row" && e.Label.public()
		trusted = trusted && e.Label != nil && slices.ContainsFunc(e.Label.Integrity, func(t string) bool {
			return slices.Contains(c.TrustedIntegrity, t)
		})
	}
	l := worst
	if public {
		l.Confidentiality = ifcPublic
	}
	if trusted {
		l.Integrity = ifcTrusted
	}
	return l
}

// meta is the _meta.ifc member of a call of tool's result, as JSON
// (`"ifc":{...}`); nil when the projection is off.
func (c IFCLabels) meta(tool string, body []byte, isError bool) []byte {
	if !c.On {
		return nil
	}
	l := c.project(tool, body, isError)
	return []byte(`"ifc":{"integrity":"` + l.Integrity + `","confidentiality":"` + l.Confidentiality + `"}`)
}

// labelled is res, the tool result of a call of tool, with its
// _meta.ifc when the projection is on.
func (c IFCLabels) labelled(res *mcp.CallToolResult, tool string, body []byte, isError bool) *mcp.CallToolResult {
	if c.On {
		res.Meta = mcp.Meta{"ifc": c.project(tool, body, isError)}
	}
	return res
}

// withMember is the JSON object obj (nil: {}) with member (`"name":value`)
// first.
func withMember(obj, member []byte) []byte {
	out := make([]byte, 0, len(obj)+len(member)+2)
	out = append(append(append(out, '{'), member...), '}')
	if len(obj) > 2 {
		out = append(append(out[:len(out)-1], ','), obj[1:]...)
	}
	return out
}
