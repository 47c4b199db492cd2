package mcpface

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/tooldef"
)

// The MCP URL takes the tool dialect GET /v1/runs/{runId}/tools takes:
// ?dialect=openai|gemini|anthropic gives each input schema of tools/list
// in that provider's reading (tooldef.In), for a client that hands the
// run's MCP tools to that provider. Output schemas stay the contract's:
// a client checks each answer's structured content against them. In the
// openai dialect a tools/call's null optional members are dropped
// (dialectArgs), as the dialect's nullable says "left out".

// dialectOf is the dialect r asks for; "" is the default.
func dialectOf(r *http.Request) tooldef.Dialect {
	return tooldef.Dialect(r.URL.Query().Get("dialect"))
}

// checkDialect refuses a dialect the catalog is not given in, as the
// REST route does: 400 invalid_input, not_in_choices at dialect.
func checkDialect(r *http.Request) error {
	vals, ok := r.URL.Query()["dialect"]
	if !ok || len(vals) == 1 && slices.Contains(tooldef.Dialects(), vals[0]) {
		return nil
	}
	choices := tooldef.Dialects()
	return problem.Invalid("dialect", problem.NotInChoices,
		"Parameter dialect must be one of "+strings.Join(choices, ", ")+".", choices...)
}

// catalogKey names the catalog of names in r's dialect: the key of the
// server (and of the kept results) that serves it.
func catalogKey(r *http.Request, names []string) string {
	return string(dialectOf(r)) + "\x00" + strings.Join(names, ",")
}

// defs is the definitions of names in r's dialect.
func (f *Face) defs(r *http.Request, names []string) []tooldef.Def {
	defs := f.cfg.Defs.For(names)
	d := dialectOf(r)
	for i, def := range defs {
		if t, err := tooldef.In(def, d); err == nil {
			defs[i] = t
		}
	}
	return defs
}

// dialectKey holds, in a request's context, the dialect it asked for.
type dialectKey struct{}

// withDialect is r with its dialect in its context, for its tool calls.
func withDialect(r *http.Request) *http.Request {
	d := dialectOf(r)
	if d == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), dialectKey{}, d))
}

// dialectArgs is args (a tools/call's arguments) as the contract reads
// them: in the openai dialect an optional member is nullable and a
// strict model sends null for one it leaves out, so such a null member
// is dropped (the REST route leaves that to the caller and refuses null).
// A required member's null stays, for the validator to refuse; anything
// that is not an object of distinct members is left as it is.
func (f *Face) dialectArgs(ctx context.Context, name string, args []byte) []byte {
	if d, _ := ctx.Value(dialectKey{}).(tooldef.Dialect); d != tooldef.OpenAI {
		return args
	}
	def, ok := f.cfg.Defs.Tool(name)
	if !ok {
		return args
	}
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(def.InputSchema, &s)
	out, dropped := []byte{'{'}, false
	whole := eachMember(args, func(n string, v []byte) bool {
		if string(v) == "null" && !slices.Contains(s.Required, n) {
			dropped = true
			return true
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendString(out, []byte(n))
		out = append(append(out, ':'), v...)
		return true
	})
	if !whole || !dropped {
		return args
	}
	return append(out, '}')
}
