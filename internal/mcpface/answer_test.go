package mcpface

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGuard: whatever the SDK handler writes that is not a JSON-RPC
// result reaches the client in the face's words: its text error bodies
// as the problem of their status, its JSON-RPC errors with the face's
// message of their code (and no data but -32022's, bounded); results,
// notifications' 202 and event streams pass, an event stream's errors
// rewritten.
func TestGuard(t *testing.T) {
	sdkText := "SDK-TEXT-" + strings.Repeat("x", 300<<10)
	rpcErr := func(code int, data string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":7,"error":{"code":%d,"message":%q,"data":%s}}`, code, sdkText, data)
		}
	}
	result := `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"` + strings.Repeat("r", 100<<10) + `"}]}}`
	for _, tc := range []struct {
		name        string
		write       func(w http.ResponseWriter)
		status      int
		contentType string
		body        string // the whole answer, or with a leading "~" a part of it
	}{
		{"text 400", func(w http.ResponseWriter) { http.Error(w, sdkText, http.StatusBadRequest) },
			400, "application/problem+json", `~"code":"invalid_input"`},
		{"text 404", func(w http.ResponseWriter) { http.Error(w, sdkText, http.StatusNotFound) },
			400, "application/problem+json", `~"code":"invalid_input"`},
		{"text 405", func(w http.ResponseWriter) { http.Error(w, sdkText, http.StatusMethodNotAllowed) },
			405, "application/problem+json", `~"code":"method_not_allowed"`},
		{"text 413", func(w http.ResponseWriter) { http.Error(w, sdkText, http.StatusRequestEntityTooLarge) },
			413, "application/problem+json", `~"code":"request_too_large"`},
		{"text 415", func(w http.ResponseWriter) { http.Error(w, sdkText, http.StatusUnsupportedMediaType) },
			415, "application/problem+json", `~"code":"unsupported_media_type"`},
		{"text 500", func(w http.ResponseWriter) { http.Error(w, sdkText, http.StatusInternalServerError) },
			500, "application/problem+json", `~"code":"internal_error"`},
		{"text 200", func(w http.ResponseWriter) { _, _ = w.Write([]byte(sdkText)) },
			500, "application/problem+json", `~"code":"internal_error"`},
		{"JSON-RPC error 400", rpcErr(-32020, `"`+sdkText+`"`),
			400, "application/json", `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"` + rpcMessages[-32020] + `"}}`},
		{"JSON-RPC error of another code", rpcErr(-32099, `{}`),
			400, "application/json", `{"jsonrpc":"2.0","id":7,"error":{"code":-32099,"message":"` + rpcMessageOther + `"}}`},
		{"-32022 with a long requested", rpcErr(-32022, `{"supported":["x"],"requested":"`+sdkText+`"}`),
			400, "application/json", `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"` + rpcMessages[-32022] + `","data":{"supported":["2026-07-28","2025-11-25","2025-06-18"]}}}`},
		{"-32022", rpcErr(-32022, `{"supported":["x"],"requested":"2099-01-01"}`),
			400, "application/json", `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"` + rpcMessages[-32022] + `","data":{"supported":["2026-07-28","2025-11-25","2025-06-18"],"requested":"2099-01-01"}}}`},
		{"JSON-RPC error 200, written a byte at a time", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			for _, c := range []byte(`{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"` + sdkText[:1000] + `"}}`) {
				_, _ = w.Write([]byte{c})
			}
		}, 200, "application/json", `{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"` + rpcMessages[-32602] + `"}}`},
		{"a result, in pieces", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			for i := 0; i < len(result); i += 10 {
				_, _ = w.Write([]byte(result[i:min(i+10, len(result))]))
			}
		}, 200, "application/json", result},
		{"a notification accepted", func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }, 202, "", ""},
		{"nothing", func(w http.ResponseWriter) {}, 200, "", ""},
		{"an event stream", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"" + sdkText + "\"}}\n\n"))
		}, 200, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"" + rpcMessages[-32602] + "\"}}\n\n"},
		{"an event stream of text", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: " + sdkText + "\n\n"))
		}, 500, "application/problem+json", `~"code":"internal_error"`},
	} {
		rec := httptest.NewRecorder()
		g := newGuard(rec, asked{method: "tools/list"})
		tc.write(g)
		g.finish()
		body := rec.Body.String()
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != tc.contentType {
			t.Errorf("%s: %d %q, want %d %q", tc.name, rec.Code, rec.Header().Get("Content-Type"), tc.status, tc.contentType)
		}
		if part, ok := strings.CutPrefix(tc.body, "~"); ok && !strings.Contains(body, part) || !ok && body != tc.body {
			t.Errorf("%s: %.300s, want %.300s", tc.name, body, tc.body)
		}
		if strings.Contains(body, "SDK-TEXT") {
			t.Errorf("%s: the SDK's text reached the answer", tc.name)
		}
	}
}

// TestRPCMessage: the face names a method or tool the run may not call
// in its own words.
func TestRPCMessage(t *testing.T) {
	if got := rpcMessage(codeMethodNotFound, "rt/x", "", false); got != `Method not found: "rt/x" is not a method this endpoint serves under the request's revision.` {
		t.Error(got)
	}
	if got := rpcMessage(codeInvalidParams, "tools/call", "nope", true); got != `Unknown tool "nope": tools/list names the tools this run may call.` {
		t.Error(got)
	}
	if got := rpcMessage(codeInvalidParams, "tools/call", "loom_search", false); got != rpcMessages[codeInvalidParams] {
		t.Error(got)
	}
}
