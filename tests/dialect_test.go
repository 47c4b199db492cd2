package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// TestToolDialects: GET .../tools gives each provider's reading of the
// input schemas on ?dialect=; the default states loom_search's "query or
// person" in words, with no if/then (and so does tools/list); an unknown
// dialect is refused.
func TestToolDialects(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	get := func(q string) (int, string) {
		resp, body := agentDo(t, g, http.MethodGet, "/v1/runs/"+r.ID+"/tools"+q, r.Token, "", nil)
		return resp.StatusCode, body
	}
	if code, body := get(""); code != 200 || !strings.Contains(body, "Required unless `person` is given.") || strings.Contains(body, `"if"`) || strings.Contains(body, "YYYY-MM- DD") {
		t.Errorf("default: %d %.400s", code, body)
	}
	if code, body := get("?dialect=openai"); code != 200 || strings.Count(body, `"strict":true`) != 10 || strings.Contains(body, `"minLength"`) || strings.Contains(body, `"if"`) {
		t.Errorf("openai: %d %.400s", code, body)
	}
	if code, body := get("?dialect=gemini"); code != 200 || strings.Contains(body, "additionalProperties") || !strings.Contains(body, `"propertyOrdering"`) {
		t.Errorf("gemini: %d %.400s", code, body)
	}
	if code, body := get("?dialect=anthropic"); code != 200 || !strings.Contains(body, "Required unless `query` is given.") || strings.Contains(body, `"if"`) {
		t.Errorf("anthropic: %d %.400s", code, body)
	}
	if code, body := get("?dialect=cohere"); code != 400 || !strings.Contains(body, `"invalid_input"`) {
		t.Errorf("unknown dialect: %d %s", code, body)
	}
	_, body := mcpPost(t, g, r.ID, r.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if !strings.Contains(body, "Required unless `person` is given.") || strings.Contains(body, `"if"`) {
		t.Errorf("tools/list: loom_search states no query-or-person rule")
	}
}
