package tests

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/api/client"
)

// unheldToken returns a well-formed cfh:v: token none of held is.
func unheldToken(held ...string) string {
	for _, c := range []string{"22222", "zzzzz", "23456", "98765", "abcde", "vwxyz"} {
		tok := "cfh:v:" + c
		if !contains(held, tok) {
			return tok
		}
	}
	panic("all candidates held")
}

// TestResultWriter: the agent's result resolves held tokens into linked
// documents; any unheld token refuses the whole write; a run takes one
// result.
func TestResultWriter(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[` +
		`{"id":"r1","title":"Atlas","ifc":{"confidentiality":["{W}"],"integrity":["{S}"]}},` +
		`{"id":"r2","title":"Clinic","ifc":{"confidentiality":["{H}"],"integrity":["{S}","https://loom.example/integrity/other"]}}]}`)})
	a := g.newRun(t, client.CreateRunInput{})
	b := g.newRun(t, client.CreateRunInput{})
	_, ha := views(t, a.ok(t, "loom_search", `{"query":"q"}`).Entries)
	_, hb := views(t, b.ok(t, "loom_search", `{"query":"q"}`).Entries)
	if len(ha) != 2 || len(hb) != 2 {
		t.Fatalf("handles %v %v", ha, hb)
	}
	held := append(append([]string{}, ha...), hb...)
	unheld := unheldToken(held...)
	foreign := hb[0]
	if contains(ha, foreign) {
		foreign = hb[1]
	}

	t.Run("describe_handle", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			r     *run
			token string
			known bool
		}{
			{"own", a, ha[0], true},
			{"own, padded", a, " \t" + ha[1] + "  ", true},
			{"unknown", a, unheld, false},
			{"another run's", a, foreign, false},
			{"a longer token", a, ha[0] + "x", false},
			{"an address token", a, "cfh:a:22222", false},
		} {
			body, _ := json.Marshal(map[string]string{"token": tc.token})
			d := tc.r.call(t, "describe_handle", string(body))
			if d.Status != http.StatusOK || d.Handle == nil {
				t.Fatalf("%s: %d %s", tc.name, d.Status, d.Body)
			}
			if d.Handle.Known != tc.known || d.Handle.Token != strings.TrimSpace(tc.token) {
				t.Errorf("%s: known %v token %q, want %v %q", tc.name, d.Handle.Known, d.Handle.Token, tc.known, strings.TrimSpace(tc.token))
			}
			if !tc.known && (d.Handle.Referent != nil || d.Handle.Label != nil) {
				t.Errorf("%s: an unknown token is described: %s", tc.name, d.Body)
			}
			if !strings.HasPrefix(d.Handle.OutputId, tc.r.ID+":describe_handle:") {
				t.Errorf("%s: outputId %q", tc.name, d.Handle.OutputId)
			}
		}
	})

	refusals := []struct{ name, value string }{
		{"unheld token", `{"source":"` + unheld + `"}`},
		{"unheld link", `{"source":{"@link":"` + unheld + `"}}`},
		{"unheld inside prose", `{"summary":"as ` + unheld + ` says"}`},
		{"unheld in a property name", `{"` + unheld + `":"x"}`},
		{"unheld deep in an array", `[1,[2,{"a":["` + unheld + `"]}]]`},
		{"another run's token", `"` + foreign + `"`},
		{"address token", `{"cell":"cfh:a:22222"}`},
		{"over-long token", `"` + ha[0] + `x"`},
		{"held and unheld", `{"ok":"` + ha[0] + `","bad":"` + unheld + `"}`},
	}
	for _, tc := range refusals {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			a.fails(t, "result", `{"value":`+tc.value+`}`, http.StatusUnprocessableEntity, "unheld_handle")
		})
	}
	t.Run("nothing stored after refusals", func(t *testing.T) {
		resp, err := g.hostClient(t).GetResultWithResponse(ctx(t), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusNotFound, "result_not_found", "")
		if a.summary(t).HasResult {
			t.Error("hasResult after refused writes")
		}
	})

	t.Run("malformed", func(t *testing.T) {
		base := g.AgentURL + "/v1/runs/" + a.ID + "/result"
		resp, body := rawRequest(t, "POST", base, a.Token, "text/plain", strings.NewReader(`{"value":1}`))
		wantProblemCode(t, resp.StatusCode, body, http.StatusUnsupportedMediaType, "unsupported_media_type", "")
		resp, body = rawRequest(t, "POST", base, a.Token, "", strings.NewReader(`{"value":1}`))
		wantProblemCode(t, resp.StatusCode, body, http.StatusUnsupportedMediaType, "unsupported_media_type", "")
		big := `{"value":"` + strings.Repeat("x", 1<<20) + `"}`
		resp, body = rawRequest(t, "POST", base, a.Token, "application/json", strings.NewReader(big))
		wantProblemCode(t, resp.StatusCode, body, http.StatusRequestEntityTooLarge, "request_too_large", "")
		resp, body = rawRequest(t, "POST", base, a.Token, "application/json", strings.NewReader(`{"value":1,"value":2}`))
		wantProblemCode(t, resp.StatusCode, body, http.StatusBadRequest, "invalid_input", "")
		resp, body = rawRequest(t, "POST", base, a.Token, "application/json", strings.NewReader(`{"value":1} {"value":2}`))
		wantProblemCode(t, resp.StatusCode, body, http.StatusBadRequest, "invalid_input", "")
		resp, body = rawRequest(t, "POST", base, a.Token, "application/json", strings.NewReader(`{"value":null}`))
		wantProblemCode(t, resp.StatusCode, body, http.StatusBadRequest, "invalid_input", "")
		// A tool route takes the same limits.
		resp, body = rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+a.ID+"/loom_search", a.Token, "application/json", bytes.NewReader([]byte(`{"query":"`+strings.Repeat("q", 1<<20)+`"}`)))
		wantProblemCode(t, resp.StatusCode, body, http.StatusRequestEntityTooLarge, "request_too_large", "")
		resp, body = rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+a.ID+"/loom_search", a.Token, "application/x-www-form-urlencoded", strings.NewReader(`query=q`))
		wantProblemCode(t, resp.StatusCode, body, http.StatusUnsupportedMediaType, "unsupported_media_type", "")
	})

	t.Run("written", func(t *testing.T) {
		value := `{"summary":"Atlas moved; see ` + ha[0] + `.","source":"` + ha[0] + `","again":{"@link":"` + ha[0] + `"},"` + ha[1] + `":[1,2.50,true,null]}`
		rep := a.call(t, "result", `{"value":`+value+`}`)
		if rep.Status != http.StatusCreated || rep.Written == nil {
			t.Fatalf("status %d %s, want 201", rep.Status, rep.Body)
		}
		if diff := cmp.Diff(client.ResultWritten{Status: "ok", Documents: 1, Links: 2}, *rep.Written); diff != "" {
			t.Errorf("written (-want +got):\n%s", diff)
		}
		resp, err := g.hostClient(t).GetResultWithResponse(ctx(t), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusOK || resp.JSON200 == nil {
			t.Fatalf("get result: %d %s", resp.StatusCode(), resp.Body)
		}
		got := resp.JSON200
		doc := "doc-" + a.ID + "-1"
		wantValue := `{"summary":"Atlas moved; see ` + ha[0] + `.","source":{"@link":"` + doc + `"},"again":{"@link":"` + doc + `"},"` + ha[1] + `":[1,2.50,true,null]}`
		if canon(t, got.Value) != canon(t, []byte(wantValue)) {
			t.Errorf("stored value %s, want %s", got.Value, wantValue)
		}
		if len(got.Documents) != 1 {
			t.Fatalf("documents %d, want 1", len(got.Documents))
		}
		d := got.Documents[0]
		if d.Id != doc || d.Source != "loom_search" || canon(t, d.Value) != canon(t, []byte(`{"id":"r1","title":"Atlas"}`)) {
			t.Errorf("document %+v", d)
		}
		label := func(l client.FullLabel) string { b, _ := json.Marshal(l); return canon(t, b) }
		for _, tc := range []struct{ name, got, want string }{
			{"document label", label(d.Label), `{"confidentiality":["{W}"],"integrity":["{S}"]}`},
			{"receipt (the uncited row)", label(got.Receipt), `{"confidentiality":["{H}"],"integrity":["{S}","https://loom.example/integrity/other"]}`},
			{"result label (every row)", label(got.Label), `{"confidentiality":["{W}","{H}"],"integrity":["{S}"]}`},
		} {
			if want := canon(t, []byte(fill(tc.want))); tc.got != want {
				t.Errorf("%s = %s, want %s", tc.name, tc.got, want)
			}
		}
		if !a.summary(t).HasResult {
			t.Error("hasResult false after the write")
		}
		a.fails(t, "result", `{"value":"second"}`, http.StatusConflict, "result_exists")
	})
}

// TestContractServed: the agent listener serves api/openapi.yaml byte for
// byte.
func TestContractServed(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{NoConfig: true})
	c, err := client.NewClient(g.AgentURL, client.WithHTTPClient(httpClient(t)))
	if err != nil {
		t.Fatal(err)
	}
	// GetContract, not GetContractWithResponse: the generated parser
	// unmarshals the YAML document into the declared string and fails.
	resp, err := c.GetContract(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if !bytes.Equal(body, specBytes) {
		t.Errorf("GET /openapi.yaml (%d bytes) differs from api/openapi.yaml (%d bytes)", len(body), len(specBytes))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/yaml") {
		t.Errorf("Content-Type %q, want application/yaml", ct)
	}
}
