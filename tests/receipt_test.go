package tests

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// writeReceiptKey writes a fresh Ed25519 key as --receipt-key takes it
// (PKCS#8 PEM) with mode, and its public key (PEM) beside it.
func writeReceiptKey(t *testing.T, dir, name string, mode os.FileMode) (keyFile, pubFile string) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile = filepath.Join(dir, name+".pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyFile, mode); err != nil {
		t.Fatal(err)
	}
	pder, _ := x509.MarshalPKIXPublicKey(pub)
	pubFile = filepath.Join(dir, name+".pub.pem")
	writeFile(t, pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder}))
	return keyFile, pubFile
}

// receiptDoc is the answer of GET /host/v1/runs/{runId}/receipt as the
// test reads it.
type receiptDoc struct {
	RunID string `json:"runId"`
	Chain []struct {
		Seq    int64  `json:"seq"`
		Hash   string `json:"hash"`
		Record []byte `json:"record"`
	} `json:"chain"`
	Receipt *struct {
		Payload   []byte `json:"payload"`
		Signature []byte `json:"signature"`
		KeyID     string `json:"keyId"`
	} `json:"receipt"`
}

// TestReceiptVerify: a run's receipt, as the host reads it, verifies with
// gateway verify-receipt and, with no code of ours, with openssl and
// sha256sum; a changed record, a chain cut short, a changed response and
// another key are each refused, naming the first bad link.
func TestReceiptVerify(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not installed (scripts/test.sh installs it)")
	}
	dir := newScenarioDir(t)
	keyFile, pubFile := writeReceiptKey(t, dir, "receipt-key", 0o600)
	_, otherPub := writeReceiptKey(t, dir, "other-key", 0o600)
	g := startGateway(t, gwOptions{Flags: []string{"--receipt-key", keyFile, "--log-format", "json"}})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[` +
		`{"id":"r1","title":"Atlas","ifc":{"confidentiality":["{W}"],"integrity":["{S}"]}},` +
		`{"id":"r2","title":"Clinic","ifc":{"confidentiality":["{H}"],"integrity":["{S}"]}}]}`)})
	r := g.newRun(t, client.CreateRunInput{})
	resp, first := rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+r.ID+"/loom_search", r.Token, "application/json", strings.NewReader(`{"query":"q"}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("loom_search = %d %s", resp.StatusCode, first)
	}
	firstFile := filepath.Join(dir, "response-1.json")
	writeFile(t, firstFile, first)
	rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+r.ID+"/describe_handle", r.Token, "application/json", strings.NewReader(`{"token":"cfh:v:22222"}`))
	rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+r.ID+"/loom_people", r.Token, "application/json", strings.NewReader(`{}`)) // refused by the contract: no number, no record
	if resp, body := rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+r.ID+"/result", r.Token, "application/json", strings.NewReader(`{"value":{"done":true}}`)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("result = %d %s", resp.StatusCode, body)
	}
	resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs/"+r.ID+"/receipt", g.HostToken, "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("receipt = %d %s", resp.StatusCode, body)
	}
	file := filepath.Join(dir, "receipt.json")
	writeFile(t, file, body)
	var d receiptDoc
	if err := json.Unmarshal(body, &d); err != nil || d.Receipt == nil || len(d.Chain) != 3 {
		t.Fatalf("receipt document %s (%v)", body, err)
	}

	verify := func(t *testing.T, want int, wantOut string, args ...string) {
		t.Helper()
		code, out := runGateway(t, nil, append([]string{"verify-receipt"}, args...)...)
		if code != want || !strings.Contains(out, wantOut) {
			t.Fatalf("verify-receipt %v: exit %d, want %d with %q:\n%s", args, code, want, wantOut, out)
		}
	}
	verify(t, 0, "verifies", file, "--key", pubFile, "--response", "1="+firstFile)
	verify(t, 1, "not among the 1 keys", file, "--key", otherPub)
	// Rotation: the other key beside the signing one.
	verify(t, 0, "verifies", file, "--key", otherPub, "--key", pubFile)

	tampered := func(name string, edit func(d map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		p := filepath.Join(dir, name+".json")
		writeFile(t, p, b)
		return p
	}
	chainOf := func(m map[string]any) []any { return m["chain"].([]any) }
	t.Run("a record changed", func(t *testing.T) {
		p := tampered("changed", func(m map[string]any) {
			l := chainOf(m)[1].(map[string]any)
			rec, _ := base64.StdEncoding.DecodeString(l["record"].(string))
			rec = bytes.Replace(rec, []byte(`"status":"ok"`), []byte(`"status":"OK"`), 1)
			sum := sha256.Sum256(rec)
			l["record"], l["hash"] = base64.StdEncoding.EncodeToString(rec), hex.EncodeToString(sum[:])
		})
		verify(t, 1, "chain link 3: prev", p, "--key", pubFile)
	})
	t.Run("cut short", func(t *testing.T) {
		p := tampered("cut", func(m map[string]any) { m["chain"] = chainOf(m)[:2] })
		verify(t, 1, "chain link 3: the receipt signed a chain of 3 records", p, "--key", pubFile)
	})
	t.Run("reordered", func(t *testing.T) {
		p := tampered("swapped", func(m map[string]any) { c := chainOf(m); c[0], c[1] = c[1], c[0] })
		verify(t, 1, "chain link 1:", p, "--key", pubFile)
	})
	t.Run("another response", func(t *testing.T) {
		other := filepath.Join(dir, "response-other.json")
		writeFile(t, other, bytes.Replace(first, []byte(`"status":"ok"`), []byte(`"status":"OK"`), 1))
		verify(t, 1, "chain link 1: the response kept for it", file, "--key", pubFile, "--response", "1="+other)
	})

	// The same check with standard tools: the signature over the payload's
	// bytes (openssl), and each record's hash and prev (sha256sum).
	payload, sig := filepath.Join(dir, "payload"), filepath.Join(dir, "signature")
	writeFile(t, payload, d.Receipt.Payload)
	writeFile(t, sig, d.Receipt.Signature)
	openssl := func(pub, msg string) (int, string) {
		cmd := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", msg, "-sigfile", sig)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := openssl(pubFile, payload); code != 0 || !strings.Contains(out, "Signature Verified Successfully") {
		t.Fatalf("openssl pkeyutl -verify: exit %d\n%s", code, out)
	}
	if code, out := openssl(otherPub, payload); code == 0 {
		t.Fatalf("openssl verified with another key:\n%s", out)
	}
	changed := filepath.Join(dir, "payload-changed")
	writeFile(t, changed, bytes.Replace(d.Receipt.Payload, []byte(`"chainLength":3`), []byte(`"chainLength":2`), 1))
	if code, _ := openssl(pubFile, changed); code == 0 {
		t.Fatal("openssl verified a changed payload")
	}
	var p struct {
		ChainLength int    `json:"chainLength"`
		ChainTip    string `json:"chainTip"`
	}
	if err := json.Unmarshal(d.Receipt.Payload, &p); err != nil || p.ChainLength != len(d.Chain) {
		t.Fatalf("payload %s (%v)", d.Receipt.Payload, err)
	}
	prev := strings.Repeat("0", 64)
	for i, l := range d.Chain {
		rec := filepath.Join(dir, "record-"+strconv.Itoa(i+1))
		writeFile(t, rec, l.Record)
		out, err := exec.Command("sha256sum", rec).Output()
		if err != nil {
			t.Fatal(err)
		}
		hash := strings.Fields(string(out))[0]
		var f struct{ Prev string }
		_ = json.Unmarshal(l.Record, &f)
		if f.Prev != prev || hash != l.Hash {
			t.Fatalf("record %d: prev %s, want %s; sha256sum %s, link %s", i+1, f.Prev, prev, hash, l.Hash)
		}
		prev = hash
	}
	if prev != p.ChainTip {
		t.Fatalf("the last record's sha256sum %s is not the signed tip %s", prev, p.ChainTip)
	}

	// The keys the host listener serves are the ones that verify.
	resp, body = rawRequest(t, "GET", g.HostURL+"/host/v1/receipt-keys", g.HostToken, "", nil)
	var keys struct {
		Keys []struct {
			KeyID, PublicKey string
			Signing          bool
		}
	}
	if err := json.Unmarshal(body, &keys); err != nil || resp.StatusCode != http.StatusOK || len(keys.Keys) != 1 || !keys.Keys[0].Signing || keys.Keys[0].KeyID != d.Receipt.KeyID {
		t.Fatalf("receipt-keys = %d %s", resp.StatusCode, body)
	}
	served := filepath.Join(dir, "served.pem")
	writeFile(t, served, []byte(keys.Keys[0].PublicKey))
	if code, out := openssl(served, payload); code != 0 {
		t.Fatalf("openssl with the served key: exit %d\n%s", code, out)
	}

	// Deleting the run writes its receipt to the log, signed.
	if resp, body := rawRequest(t, "DELETE", g.HostURL+"/host/v1/runs/"+r.ID, g.HostToken, "", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete = %d %s", resp.StatusCode, body)
	}
	recs := g.waitLogRecords(t, "receipt", 1)
	if recs[0]["runId"] != r.ID || recs[0]["reason"] != "deleted" || recs[0]["chainTip"] != p.ChainTip {
		t.Fatalf("receipt log record %v", recs[0])
	}
	logged, _ := base64.StdEncoding.DecodeString(recs[0]["payload"].(string))
	sigLogged, _ := base64.StdEncoding.DecodeString(recs[0]["signature"].(string))
	writeFile(t, payload, logged)
	writeFile(t, sig, sigLogged)
	if code, out := openssl(pubFile, payload); code != 0 {
		t.Fatalf("openssl on the logged receipt: exit %d\n%s", code, out)
	}
}

// TestReceiptKeyFile: the signing key file is held to the host token
// file's rule, and a key that is not Ed25519 PKCS#8 is refused, each with
// exit 2 and a message naming --receipt-key.
func TestReceiptKeyFile(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	tokenFile := filepath.Join(dir, "host-token")
	writeFile(t, tokenFile, []byte("host-token-receipt-0123456789abcdef"))
	open, _ := writeReceiptKey(t, dir, "open", 0o644)
	_, pub := writeReceiptKey(t, dir, "pub", 0o600)
	listen := []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", tokenFile}
	for _, tc := range []struct {
		name  string
		args  []string
		names []string
	}{
		{"open to others", []string{"--receipt-key", open}, []string{"--receipt-key", "open to others", "chmod 600"}},
		{"a public key", []string{"--receipt-key", pub}, []string{"--receipt-key", "PRIVATE KEY"}},
		{"missing", []string{"--receipt-key", filepath.Join(dir, "absent.pem")}, []string{"--receipt-key", "does not exist"}},
		{"verify keys alone", []string{"--receipt-verify-keys", pub}, []string{"--receipt-verify-keys", "--receipt-key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runGateway(t, nil, append(tc.args, listen...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, n := range tc.names {
				if !strings.Contains(out, n) {
					t.Errorf("the message does not name %q:\n%s", n, out)
				}
			}
		})
	}
}

// TestReceiptRoundTrips: with receipts on, on Redis, a tool call still
// reaches the store in two commands (Begin and Finish: the chain record
// goes with Finish), and describe_handle (whose record an error-free
// output appends) in as many as with receipts off; the chain holds every
// call.
func TestReceiptRoundTrips(t *testing.T) {
	t.Parallel()
	url, rc := redistest.Start(t)
	dir := newScenarioDir(t)
	keyFile, pubFile := writeReceiptKey(t, dir, "receipt-key", 0o600)
	const calls = 10
	steps := func(flags ...string) (search, describe map[string]int, g *gateway, r *run) {
		g = startGateway(t, gwOptions{Flags: append([]string{"--store", url, "--run-rate", "0"}, flags...)})
		g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"a"},{"id":"b"},{"id":"c"}]}`})
		r = g.newRun(t, client.CreateRunInput{})
		describeOnce := func() {
			rawRequest(t, "POST", g.AgentURL+"/v1/runs/"+r.ID+"/describe_handle", r.Token, "application/json", strings.NewReader(`{"token":"cfh:v:22222"}`))
		}
		r.ok(t, "loom_search", `{"query":"q"}`) // the scripts are loaded by now
		describeOnce()
		before := commandCalls(t, rc)
		for range calls {
			r.ok(t, "loom_search", `{"query":"q"}`)
		}
		search = commandsSince(t, rc, before)
		before = commandCalls(t, rc)
		for range calls {
			describeOnce()
		}
		return search, commandsSince(t, rc, before), g, r
	}
	offSearch, offDescribe, _, _ := steps()
	onSearch, onDescribe, g, r := steps("--receipt-key", keyFile)
	if onSearch["evalsha"] != 2*calls || outsideScripts(onSearch) != 0 {
		t.Errorf("%d tool calls ran %v in Redis, want %d EVALSHA and no other command sent", calls, onSearch, 2*calls)
	}
	if onSearch["evalsha"] != offSearch["evalsha"] || onDescribe["evalsha"] != offDescribe["evalsha"] || outsideScripts(onDescribe) != outsideScripts(offDescribe) {
		t.Errorf("receipts on: search %v, describe_handle %v; off: %v, %v", onSearch, onDescribe, offSearch, offDescribe)
	}
	t.Logf("%d calls each, receipts on: search %v, describe_handle %v; off: %v, %v", calls, onSearch, onDescribe, offSearch, offDescribe)
	resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs/"+r.ID+"/receipt", g.HostToken, "", nil)
	file := filepath.Join(dir, "receipt.json")
	writeFile(t, file, body)
	var d receiptDoc
	if err := json.Unmarshal(body, &d); err != nil || resp.StatusCode != http.StatusOK || len(d.Chain) != 2+2*calls {
		t.Fatalf("receipt = %d, %d records, want %d: %.300s", resp.StatusCode, len(d.Chain), 2+2*calls, body)
	}
	if code, out := runGateway(t, nil, "verify-receipt", file, "--key", pubFile); code != 0 {
		t.Fatalf("verify-receipt: exit %d\n%s", code, out)
	}
}

// TestReceiptMCP: a call through the MCP face is in the chain as a REST
// call is, and its record digests exactly the bytes of the tool result's
// text block.
func TestReceiptMCP(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	keyFile, pubFile := writeReceiptKey(t, dir, "receipt-key", 0o600)
	g := startGateway(t, gwOptions{Flags: []string{"--receipt-key", keyFile}})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"hits":[{"id":"r1","title":"Atlas","ifc":{"confidentiality":["{W}"]}}]}`)})
	r := g.newRun(t, client.CreateRunInput{})
	s, err := mcpSession(t, g, r.ID, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctx(t), &mcp.CallToolParams{Name: "loom_search", Arguments: json.RawMessage(`{"query":"q"}`)})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	text := filepath.Join(dir, "text")
	writeFile(t, text, []byte(res.Content[0].(*mcp.TextContent).Text))
	_, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs/"+r.ID+"/receipt", g.HostToken, "", nil)
	file := filepath.Join(dir, "receipt.json")
	writeFile(t, file, body)
	if code, out := runGateway(t, nil, "verify-receipt", file, "--key", pubFile, "--response", "1="+text); code != 0 || !strings.Contains(out, "1 responses checked") {
		t.Fatalf("verify-receipt: exit %d\n%s", code, out)
	}
}

// TestReceiptOff: a gateway without --receipt-key or --receipt-chain
// keeps no chain: GET .../receipt answers 404 route_not_found and the
// keys route an empty list.
func TestReceiptOff(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs/"+r.ID+"/receipt", g.HostToken, "", nil)
	wantProblemCode(t, resp.StatusCode, body, http.StatusNotFound, "route_not_found", "")
	resp, body = rawRequest(t, "GET", g.HostURL+"/host/v1/receipt-keys", g.HostToken, "", nil)
	if resp.StatusCode != http.StatusOK || string(body) != `{"keys":[]}` {
		t.Fatalf("receipt-keys = %d %s", resp.StatusCode, body)
	}
}
