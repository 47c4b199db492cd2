package loom_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/sampleloom"
)

var updateSchemas = flag.Bool("update-schemas", false, "rewrite docs/loom/schemas from loom.PayloadSchema")

const schemaDir = "../../docs/loom/schemas"

// TestPayloadSchemaFiles: docs/loom/schemas holds exactly what
// PayloadSchema generates (go test -run TestPayloadSchemaFiles
// -update-schemas rewrites them).
func TestPayloadSchemaFiles(t *testing.T) {
	for _, tool := range loom.Tools {
		path := filepath.Join(schemaDir, string(tool)+".json")
		want := loom.PayloadSchema(tool)
		if *updateSchemas {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what loom.PayloadSchema(%s) generates (err %v): run go test ./internal/loom -run TestPayloadSchemaFiles -update-schemas", path, tool, err)
		}
	}
}

func compileSchema(t *testing.T, tool loom.Tool) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(loom.PayloadSchema(tool)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	url := string(tool) + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: the schema does not compile: %v", tool, err)
	}
	return s
}

// schemaVerdict validates stdout against s and sorts the failures: shape
// is set when a failure is not in a row, rows holds the rows (by index) a
// failure is in (the row not an object, or its ifc).
type schemaVerdict struct {
	valid bool
	shape bool
	rows  []int
}

func validate(t *testing.T, s *jsonschema.Schema, tool loom.Tool, stdout []byte) schemaVerdict {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(stdout))
	if err != nil {
		return schemaVerdict{shape: true}
	}
	err = s.Validate(inst)
	if err == nil {
		return schemaVerdict{valid: true}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatal(err)
	}
	var v schemaVerdict
	shape := loom.ShapeOf(tool)
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := e.InstanceLocation
		switch {
		case shape.List != "" && len(loc) >= 2 && loc[0] == shape.List:
			loc = loc[1:]
		case shape.List != "":
			v.shape = true
			return
		case shape.Array && len(loc) >= 1:
		case !shape.Array && len(loc) >= 1 && loc[0] == "ifc":
			v.rows = append(v.rows, 0)
			return
		default:
			v.shape = true
			return
		}
		i, err := strconv.Atoi(loc[0])
		if err != nil || (len(loc) > 1 && loc[1] != "ifc") {
			v.shape = true
			return
		}
		v.rows = append(v.rows, i)
	}
	walk(ve)
	slices.Sort(v.rows)
	v.rows = slices.Compact(v.rows)
	return v
}

// gatewayVerdict reads stdout (exit 0) as the gateway does: "" when it is
// answered, else the code; unreadable lists the rows withheld
// cfc_label_read_failed.
func gatewayVerdict(tool loom.Tool, exit int, stdout []byte) (code string, unreadable []int) {
	kept := loom.Condense(tool, bytes.NewReader(stdout))
	defer kept.Release()
	if kept.Refused {
		return "malformed_payload", nil
	}
	err := loom.Decide(tool, false, kept.Payload != nil, exit, kept.Facts)
	switch {
	case errors.Is(err, loom.ErrSchemaVersion):
		return "schema_version_mismatch", nil
	case errors.Is(err, loom.ErrNotJSON):
		return "command_failed", nil
	case err != nil:
		return "other", nil
	case !kept.Shaped:
		return "malformed_payload", nil
	}
	res := ifc.Measure(ifc.Input{Command: tool.Command(), Rows: kept.Rows, More: kept.More, RowBytes: kept.RowBytes, Envelope: kept.Envelope, Ceiling: ifc.NoCeiling})
	for i, e := range res.Entries {
		if !e.Admitted && e.ReasonCode == ifc.ReasonLabelReadFailed {
			unreadable = append(unreadable, i)
		}
	}
	return "", unreadable
}

// sampleInputs are inputs the sample Loom answers with a payload.
var sampleInputs = map[loom.Tool][]string{
	loom.Search:       {`{"query":"atlas"}`, `{"query":"clinic"}`, `{"person":"person:ada-example"}`, `{"query":"a","rank":"recency","limit":3}`},
	loom.PageDiscover: {`{}`, `{"kind":"entity"}`, `{"kind":"project","limit":1}`},
	loom.PageInspect:  {`{"target":"Projects/Atlas"}`, `{"target":"Projects/Garden"}`, `{"target":"Entities/Northwind Clinic"}`},
	loom.PageRead:     {`{"target":"Projects/Atlas"}`, `{"target":"Projects/Atlas/brief.md"}`},
	loom.People:       {`{"query":"person:ada-example"}`, `{"query":"person:grace-sample","shape":"card"}`},
	loom.CalendarList: {`{}`, `{"all":true}`, `{"from":"2026-01-01","to":"2026-12-31"}`},
	loom.Context:      {`{"read":"where"}`, `{"read":"activity"}`, `{"read":"where","at":"2026-01-01"}`},
	loom.Profile:      {`{}`, `{"fresh":true}`},
}

// runSample runs the sample Loom as the gateway would call it with input.
func runSample(t *testing.T, tool loom.Tool, input string) (int, []byte) {
	t.Helper()
	cfg := &loom.Config{CLIPath: "/opt/loom/bin/loom", Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: "/srv/loom", RunID: "schema"}}
	inv, err := loom.BuildArgv(cfg, tool, []byte(input))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, input, err)
	}
	var out, errb bytes.Buffer
	code := sampleloom.Main(inv.Argv, loom.Env(cfg, "/usr/bin:/bin", true), &out, &errb)
	return code, out.Bytes()
}

// TestPayloadSchemaAcceptsSampleLoom: every payload the sample Loom prints
// for the inputs above is valid against its tool's schema, except the
// rows whose ifc the sample leaves unreadable on purpose, and those are
// exactly the rows the gateway withholds cfc_label_read_failed.
func TestPayloadSchemaAcceptsSampleLoom(t *testing.T) {
	checked, withUnreadable := 0, 0
	for _, tool := range loom.Tools {
		s := compileSchema(t, tool)
		for _, input := range sampleInputs[tool] {
			exit, stdout := runSample(t, tool, input)
			code, unreadable := gatewayVerdict(tool, exit, stdout)
			if code != "" {
				t.Errorf("%s %s: the gateway answers %s (exit %d); want a payload\n%.300s", tool, input, code, exit, stdout)
				continue
			}
			v := validate(t, s, tool, stdout)
			if v.shape || !slices.Equal(v.rows, unreadable) {
				t.Errorf("%s %s: schema verdict %+v, gateway withholds rows %v as unreadable\n%.300s", tool, input, v, unreadable, stdout)
			}
			checked++
			if len(unreadable) > 0 {
				withUnreadable++
			}
		}
	}
	if checked < 20 || withUnreadable == 0 {
		t.Errorf("checked %d sample payloads, %d with an unreadable label: want at least 20 and 1", checked, withUnreadable)
	}
}

// TestPayloadSchemaAgreesWithGateway: broken payloads are rejected by the
// schema, and whatever the gateway answers malformed_payload or
// schema_version_mismatch the schema rejects as a shape fault; a payload
// the gateway answers has no shape fault, and the rows the schema faults
// are the rows the gateway withholds as unreadable.
func TestPayloadSchemaAgreesWithGateway(t *testing.T) {
	cases := map[loom.Tool][]string{
		loom.Search: {
			`{"hits":[]}`, `{"hits":{}}`, `{"hits":null}`, `{}`, `[]`, `null`, `"hits"`,
			`{"hits":[],"schemaVersion":2}`, `{"hits":[],"schemaVersion":"1"}`, `{"hits":[],"schemaVersion":1.0}`,
			`{"hits":[1,{"ifc":null},{"ifc":{"confidentiality":[]}}]}`,
			`{"hits":[{"ifc":{"confidentiality":[{"anyOf":[]}]}},{"ifc":{"confidentiality":[{"type":"x","anyOf":["a"]}]}}]}`,
		},
		loom.PageDiscover: {`{"pages":[]}`, `{"pages":"x"}`, `{"totalPages":1}`, `[{"path":"a"}]`},
		loom.PageInspect:  {`{"path":"a"}`, `[]`, `7`, `{"ifc":"work"}`, `{"ifc":{"confidentiality":["a",{"anyOf":["b",{"type":"c"}]}],"integrity":["d"]}}`},
		loom.PageRead:     {`{"text":""}`, `null`, `{"ifc":{"confidentiality":["a"],"integrity":null}}`},
		loom.People:       {`{"id":"person:x"}`, `[{"id":"person:x"}]`},
		loom.CalendarList: {`[]`, `{}`, `{"events":[]}`, `[{"ifc":{}}]`, `["x"]`},
		loom.Context:      {`{"read":"where"}`, `true`, `{"ifc":{"confidentiality":[1]}}`},
		loom.Profile:      {`{"hasProfile":true}`, `[]`, `{"ifc":{"confidentiality":[["a"]]}}`},
	}
	rejected, malformed := 0, 0
	for tool, payloads := range cases {
		s := compileSchema(t, tool)
		for _, p := range payloads {
			code, unreadable := gatewayVerdict(tool, 0, []byte(p))
			v := validate(t, s, tool, []byte(p))
			if !v.valid {
				rejected++
			}
			switch code {
			case "malformed_payload", "schema_version_mismatch":
				malformed++
				if !v.shape {
					t.Errorf("%s %s: the gateway answers %s but the schema finds no shape fault (%+v)", tool, p, code, v)
				}
			case "":
				if v.shape || !slices.Equal(v.rows, unreadable) {
					t.Errorf("%s %s: the gateway answers it (unreadable rows %v); the schema says %+v", tool, p, unreadable, v)
				}
			default:
				t.Errorf("%s %s: the gateway answers %s", tool, p, code)
			}
		}
	}
	if rejected < 20 || malformed < 15 {
		t.Errorf("the schemas rejected %d payloads, %d of them malformed to the gateway: the cases no longer test much", rejected, malformed)
	}
}
