package mcpface

import (
	"bytes"
	"encoding/json"
	"github.com/loom-gateway/gateway/internal/problem/problemhttp"
	"io"
	"net/http"
	"strconv"

	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid"
)

// CodeRunEnded is the JSON-RPC error code of a request, other than a
// tool call, whose run has ended (in the implementation-defined server
// error range).
const CodeRunEnded = -32010

// ServeEnded answers a request whose token opened a run that has ended
// (deleted or expired), so that an agent SDK shows the model the text
// instead of an HTTP status it turns into "try again": a tools/call is
// answered with a tool result with isError whose text and structured
// content are the run_ended problem; any other request with a JSON-RPC
// error whose message is the problem's detail and whose data is the
// problem; anything that is not one JSON-RPC request (a notification, a
// batch, a body that does not parse) with the problem itself (410).
func (f *Face) ServeEnded(w http.ResponseWriter, r *http.Request) {
	p := problem.New(problem.RunEnded)
	p.RequestID = reqid.FromContext(r.Context())
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.maxBytes()))
	if err != nil || r.Method != http.MethodPost || json.Unmarshal(bytes.TrimSpace(body), &m) != nil ||
		len(m.ID) == 0 || string(m.ID) == "null" || len(m.ID) > MaxNameBytes {
		problemhttp.Write(w, p)
		return
	}
	var out []byte
	if m.Method == "tools/call" {
		res, _ := json.Marshal(result(p.JSON(), true))
		if stateless(r, m.Params) && len(res) > 1 {
			// 2026-07-28 requires a result type of every result.
			res = append([]byte(`{"resultType":"complete",`), res[1:]...)
		}
		out, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
		}{"2.0", m.ID, res})
	} else {
		out, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   any             `json:"error"`
		}{"2.0", m.ID, map[string]any{"code": CodeRunEnded, "message": p.Title + ": " + p.Detail, "data": p}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// stateless reports whether a request speaks the stateless revision
// (2026-07-28 or later): by its MCP-Protocol-Version header or by the
// protocol version in its params' _meta.
func stateless(r *http.Request, params json.RawMessage) bool {
	v := r.Header.Get("MCP-Protocol-Version")
	if v == "" {
		var p struct {
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(params, &p)
		v = p.Meta.Version
	}
	return v >= revisions[0]
}

func (f *Face) maxBytes() int64 {
	if f.cfg.MaxRequestBytes > 0 {
		return f.cfg.MaxRequestBytes
	}
	return 1 << 20
}
