package mcpface

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/loom-gateway/gateway/internal/store"
)

// spend takes one call from run's request budget for r (a request Check
// took; d what the direct path read of it, nil when it did not), unless
// r is a tools/call of a tool the run may call: a loom tool or
// describe_handle spends as it takes its output number, and the result
// writer spends in run, so that a refused tools/call is answered as a
// tool result with isError, as every refused call is. Every other
// request spends here: ping, tools/list, initialize, server/discover, a
// notification, a call of a tool the run may not call. A refusal is the
// run's rate_limited, which ServeRun answers as the 429 problem it
// answers every request it refuses before the protocol's own answer
// (the REST answer, with Retry-After and retryAfter).
func (f *Face) spend(r *http.Request, run store.Run, d *direct) error {
	method, tool := "", ""
	if d != nil {
		method, tool = d.method, d.tool
	} else if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m) // Check has read it: one object
		method, tool = m.Method, m.Params.Name
	}
	if method == "tools/call" && contains(f.cfg.Core.Callable(run), tool) {
		return nil
	}
	return f.cfg.Core.Spend(r.Context(), run)
}
