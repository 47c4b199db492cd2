package mcpface

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestParseDirect: which requests the direct path answers (the rest go
// to the SDK handler), and the id it writes back.
func TestParseDirect(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name     string
		revision string
		header   map[string]string
		body     string
		id       string // "" when not direct
	}{
		{"ping", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "1"},
		{"ping without the header", "", nil, `{"jsonrpc":"2.0","id":"a","method":"ping"}`, `"a"`},
		{"a string id, escaped as the SDK does", "2025-11-25", nil, `{"jsonrpc":"2.0","id":"\u003c","method":"ping"}`, `"\u003c"`},
		{"a negative id", "2025-06-18", nil, `{"jsonrpc":"2.0","id":-3,"method":"ping"}`, "-3"},
		{"a fraction id", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, ""},
		{"an exponent id", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, ""},
		{"an id past float64", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1234567890123456,"method":"ping"}`, ""},
		{"a leading zero", "2025-06-18", nil, `{"jsonrpc":"2.0","id":01,"method":"ping"}`, ""},
		{"a null id", "2025-06-18", nil, `{"jsonrpc":"2.0","id":null,"method":"ping"}`, ""},
		{"no id", "2025-06-18", nil, `{"jsonrpc":"2.0","method":"ping"}`, ""},
		{"initialize", "", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, ""},
		{"a revision not spoken after initialize", "2025-03-26", nil, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{"tools/list", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":1}}}`, "1"},
		{"tools/list with a cursor", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}`, ""},
		{"tools/call", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":{}}}`, "1"},
		{"tools/call without params", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, ""},
		{"tools/call with a progress token", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"loom_search"}}`, ""},
		{"a protocol version in _meta", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"},"name":"loom_search"}}`, ""},
		{"Last-Event-ID", "2025-06-18", map[string]string{"Last-Event-ID": "x"}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{"stateless tools/call", "2026-07-28", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "loom_search"}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"loom_search"}}`, "1"},
		{"stateless without Mcp-Name", "2026-07-28", map[string]string{"Mcp-Method": "tools/call"}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"loom_search"}}`, ""},
		{"stateless without _meta", "2026-07-28", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""},
		{"stateless ping", "2026-07-28", map[string]string{"Mcp-Method": "ping"}, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta + `}}`, ""},
		{"stateless tools/list", "2026-07-28", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, "1"},
		{"a stateless _meta under 2025-11-25", "2025-11-25", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, ""},
		{"a duplicate member", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, ""},
		{"a duplicate param", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, ""},
		{"params first", "2025-06-18", nil, `{"params":{"arguments":{"q":1},"name":"loom_search"},"id":9,"method":"tools/call","jsonrpc":"2.0"}`, "9"},
		{"no version tag", "2025-06-18", nil, `{"id":1,"method":"ping"}`, ""},
		{"a name on tools/list", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}`, ""},
		{"a long id", "2025-06-18", nil, `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", MaxNameBytes) + `","method":"ping"}`, ""},
		{"a long tool name", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("t", MaxNameBytes+1) + `"}}`, ""},
		{"a tool name at the bound", "2025-06-18", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("t", MaxNameBytes) + `"}}`, "1"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		if tc.revision != "" {
			r.Header.Set("MCP-Protocol-Version", tc.revision)
		}
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		d, ok := parseDirect(r, []byte(tc.body))
		switch {
		case ok != (tc.id != ""):
			t.Errorf("%s: direct = %v, want %v", tc.name, ok, tc.id != "")
		case ok && string(d.id) != tc.id:
			t.Errorf("%s: id %s, want %s", tc.name, d.id, tc.id)
		case ok && checkMessage([]byte(tc.body)) != nil:
			// Check reads a request the direct path takes no further.
			t.Errorf("%s: direct, but checkMessage refuses it: %v", tc.name, checkMessage([]byte(tc.body)))
		}
	}
}

// TestToolResult: the direct path's tool result reads back as the SDK's
// marshalling of the same result, its text any bytes at all.
func TestToolResult(t *testing.T) {
	meta, _ := json.Marshal(mcp.Meta{metaServerInfo: &mcp.Implementation{Name: "loom-gateway", Version: "v"}})
	for _, text := range []string{
		`{}`, `{"a":"b"}`, `{"q":"\"quoted\" \\ <tag> & \u2028 \u0001 \t\n\r é 日本"}`,
		"{\"bad\":\"\xff\xfe\xc3\"}", "{\"cut\":\"\xe6\x97\"}", `{"ctl":"\u0000\u001f` + "\x7f\"}",
	} {
		for _, isError := range []bool{false, true} {
			for _, m := range [][]byte{nil, meta} {
				want := result([]byte(text), isError)
				if m != nil {
					want.Meta = mcp.Meta{metaServerInfo: &mcp.Implementation{Name: "loom-gateway", Version: "v"}}
				}
				wantJSON, err := json.Marshal(want)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					ID     int             `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				out := toolResult([]byte("7"), []byte(text), isError, m)
				if err := json.Unmarshal(out, &got); err != nil || got.ID != 7 {
					t.Fatalf("%q: %s: %v", text, out, err)
				}
				var g, w map[string]any
				_ = json.Unmarshal(got.Result, &g)
				_ = json.Unmarshal(wantJSON, &w)
				if m != nil {
					w["resultType"] = "complete"
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%q isError %v meta %s (-SDK +direct):\n%s", text, isError, m, diff)
				}
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\xff", "\u2028<>&", "\x00\x1f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, _ := json.Marshal(string(b))
		var g, w string
		if err := json.Unmarshal(appendString(nil, b), &g); err != nil {
			t.Fatalf("%q: %s: %v", b, appendString(nil, b), err)
		}
		_ = json.Unmarshal(want, &w)
		if g != w {
			t.Errorf("%q reads back %q, encoding/json's %q", b, g, w)
		}
	})
}

// FuzzParseDirect: a body the direct path takes is one Check takes too,
// and its id is what the SDK would write back.
func FuzzParseDirect(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"loom_search","arguments":{"query":"x"},"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/list","params":{"_meta":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("MCP-Protocol-Version", "2025-06-18")
		d, ok := parseDirect(r, body)
		if !ok {
			return
		}
		if err := checkMessage(body); err != nil {
			t.Fatalf("%q: direct, but checkMessage: %v", body, err)
		}
		var m struct{ ID any }
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%q: direct, but not JSON: %v", body, err)
		}
		var id any
		if err := json.Unmarshal(d.id, &id); err != nil || id != m.ID && fmt.Sprint(id) != fmt.Sprint(m.ID) {
			t.Fatalf("%q: id %s, sent %v", body, d.id, m.ID)
		}
	})
}
