package tests

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
	"github.com/loom-gateway/gateway/internal/tooldef"
)

// TestDialectOutputSchemas holds the reason docs/agents.md gives for
// serving the contract's output schemas in every dialect: the gateway's
// real answers (every tool's, over the binary) pass a row of loom's with
// member names the gateway does not know, holding null, as loom wrote
// it, and an envelope of loom's members. The contract's output schema
// accepts every real answer; each provider dialect's reading of it (the
// same reading the dialect gives input schemas, tooldef.In, which meets
// the provider's rules: internal/tooldef TestOutputSchemaRules) refuses
// real answers of every loom tool at a row or the envelope, where
// docs/agents.md says: OpenAI's closed objects refuse the row's and the
// envelope's members, and a Gemini schema cannot say loom's object, nor a
// null in terms a JSON Schema validator reads.
func TestDialectOutputSchemas(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	// A member name no schema can know in advance, and a null.
	odd := "m" + testkit.RandomHex(6)
	row := `{"title":"Atlas kickoff","` + odd + `":null,"n":1}`
	for cmd, out := range map[string]string{
		"search":        `{"query":"atlas","source_status":{"mail":"ok"},"warnings":[],"hits":[` + row + `,{"id":2}]}`,
		"page.discover": `{"totalPages":1,"pages":[` + row + `]}`,
		"page.inspect":  row,
		"page.read":     row,
		"people":        row,
		"calendar.list": `[` + row + `]`,
		"context":       row,
		"profile":       row,
	} {
		g.setBehaviour(t, cmd, behaviour{Stdout: out})
	}
	calls := map[string]string{
		"loom_search": `{"query":"atlas"}`, "loom_page_discover": `{}`,
		"loom_page_inspect": `{"target":"Projects/Atlas/about.md"}`, "loom_page_read": `{"target":"Projects/Atlas/about.md"}`,
		"loom_people": `{"query":"ada@example.com"}`, "loom_calendar_list": `{}`, "loom_context": `{"read":"where"}`,
		"loom_profile": `{}`,
	}
	answers := map[string]string{}
	var handle string
	for name, args := range calls {
		resp, body := agentDo(t, g, http.MethodPost, "/v1/runs/"+r.ID+"/"+name, r.Token, args, map[string]string{"Content-Type": "application/json"})
		if resp.StatusCode != 200 || !strings.Contains(body, `"`+odd+`":null`) {
			t.Fatalf("%s: %d %.400s", name, resp.StatusCode, body)
		}
		answers[name] = body
		var res struct{ Entries []struct{ Handle string } }
		_ = json.Unmarshal([]byte(body), &res)
		handle = res.Entries[0].Handle
	}
	for name, args := range map[string]string{
		"describe_handle": `{"token":"` + handle + `"}`,
		"result":          `{"value":{"cite":"` + handle + `"}}`,
	} {
		resp, body := agentDo(t, g, http.MethodPost, "/v1/runs/"+r.ID+"/"+name, r.Token, args, map[string]string{"Content-Type": "application/json"})
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %d %.400s", name, resp.StatusCode, body)
		}
		answers[name] = body
	}

	// Gemini says null only as nullable, which JSON Schema does not read:
	// a member a Gemini schema names refuses loom's null.
	if validateJSON(t, json.RawMessage(`{"type":"object","properties":{"`+odd+`":{"type":"string","nullable":true}}}`), row) == "" {
		t.Errorf("a JSON Schema reading of nullable: true takes null")
	}
	set, err := tooldef.Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []tooldef.Dialect{tooldef.JSONSchema, tooldef.OpenAI, tooldef.Gemini} {
		for _, name := range set.Names() {
			def, _ := set.Tool(name)
			schema := def.OutputSchema
			if d != tooldef.JSONSchema {
				got, err := tooldef.In(tooldef.Def{Name: name, InputSchema: def.OutputSchema}, d)
				if err != nil {
					t.Fatal(err)
				}
				schema = got.InputSchema
			}
			fault := validateJSON(t, schema, answers[name])
			loomTool := strings.HasPrefix(name, "loom_")
			switch {
			case d == tooldef.JSONSchema && fault != "":
				t.Errorf("%s: the contract's output schema refuses the real answer: %s", name, fault)
			case d != tooldef.JSONSchema && loomTool && fault == "":
				t.Errorf("%s in %q: the dialect's output schema accepts the real answer; docs/agents.md says no form does: build it", name, d)
			case d != tooldef.JSONSchema && loomTool && !strings.Contains(fault, "/value") && !strings.Contains(fault, "/envelope"):
				t.Errorf("%s in %q: refused elsewhere than a row or the envelope: %s", name, d, fault)
			}
		}
	}
}

// validateJSON is why the JSON Schema schema refuses doc; "" when it
// accepts it.
func validateJSON(t *testing.T, schema json.RawMessage, doc string) string {
	t.Helper()
	s, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("out.json", s); err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile("out.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := compiled.Validate(v); err != nil {
		return err.Error()
	}
	return ""
}
