package replicas

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loom-gateway/gateway/internal/receipt"
)

// receiptKey writes a fresh Ed25519 signing key in e's directory (PKCS#8
// PEM, mode 0600, as --receipt-key takes it) and returns the flags that
// sign with it and its public key.
func (e *env) receiptKey(t *testing.T) ([]string, ed25519.PublicKey) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, "receipt-key.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--receipt-key", path}, pub
}

// verifiedReceipt reads the run's receipt through r and verifies it with
// pub and the response bodies kept (by seq); it returns the chain's
// records.
func verifiedReceipt(t *testing.T, e *env, r *replica, rn run, pub ed25519.PublicKey, kept map[int64][]byte) []receipt.Fields {
	t.Helper()
	status, body := do(t, "GET", r.host+"/host/v1/runs/"+rn.id+"/receipt", e.hostToken, nil)
	var d receipt.Document
	expect(t, r.name+": receipt", status, body, http.StatusOK, &d)
	if _, err := receipt.Verify(d, receipt.NewKeyring(pub), kept); err != nil {
		t.Fatalf("%s: the receipt does not verify: %v", r.name, err)
	}
	out := make([]receipt.Fields, len(d.Chain))
	for i, l := range d.Chain {
		out[i], _ = receipt.ParseRecord(l.Record)
	}
	return out
}

// rawCall is one tool call; it returns the answer's outputId and its
// exact bytes.
func (r *replica) rawCall(rn run, tool string, input any) (string, []byte, error) {
	b, _ := json.Marshal(input)
	req, err := http.NewRequest("POST", r.agent+"/v1/runs/"+rn.id+"/"+tool, bytes.NewReader(b))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rn.token)
	resp, err := client.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("%s %s = %d: %s", r.name, tool, resp.StatusCode, body)
	}
	var res struct{ OutputID string }
	if err := json.Unmarshal(body, &res); err != nil {
		return "", nil, err
	}
	return res.OutputID, body, nil
}

// TestReceiptAcrossReplicas: two replicas on one store, sixteen clients
// calling one run through both at once, then the result written: the
// run's chain is one, with no gap and no fork (receipt.Verify, signed by
// the key both replicas hold), one record per numbered call and one for
// the result, and each record digests the exact bytes its client got.
func TestReceiptAcrossReplicas(t *testing.T) { eachStore(t, testReceiptAcrossReplicas) }

func testReceiptAcrossReplicas(t *testing.T, url string) {
	const clients, each = 16, 12
	e := setUp(t)
	flags, pub := e.receiptKey(t)
	flags = append(flags, "--run-rate", "0", "--max-label-clauses", "0")
	a := e.start(t, "replica A", url, flags...)
	b := e.start(t, "replica B", url, flags...)
	rn := e.newRun(t, a)
	t.Cleanup(func() { do(t, "DELETE", a.host+"/host/v1/runs/"+rn.id, e.hostToken, nil) })

	var mu sync.Mutex
	bodies := map[string][]byte{} // outputId -> the bytes answered
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for w := range clients {
		wg.Go(func() {
			for i := range each {
				r := a
				if (w+i)%2 == 1 {
					r = b
				}
				c := mix[(w+i)%len(mix)]
				id, body, err := r.rawCall(rn, c.tool, c.input)
				if err != nil {
					errs[w] = err
					return
				}
				mu.Lock()
				bodies[id] = body
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	status, body := do(t, "POST", b.agent+"/v1/runs/"+rn.id+"/result", rn.token, map[string]any{"value": map[string]any{"done": true}})
	expect(t, "B: result", status, body, http.StatusCreated, nil)

	// First without the bodies, to learn each record's seq; then with.
	recs := verifiedReceipt(t, e, a, rn, pub, nil)
	if len(recs) != clients*each+1 {
		t.Fatalf("the chain holds %d records, want %d calls and the result", len(recs), clients*each)
	}
	kept := map[int64][]byte{}
	for _, f := range recs[:clients*each] {
		if f.Kind != receipt.KindCall || bodies[f.OutputID] == nil {
			t.Fatalf("record %d is not one of the calls answered: %+v", f.Seq, f)
		}
		if kept[f.Seq] != nil {
			t.Fatalf("seq %d twice", f.Seq)
		}
		kept[f.Seq] = bodies[f.OutputID]
		delete(bodies, f.OutputID)
	}
	if len(bodies) != 0 || recs[clients*each].Kind != receipt.KindResult {
		t.Fatalf("%d calls answered are not in the chain; last record %+v", len(bodies), recs[clients*each])
	}
	verifiedReceipt(t, e, b, rn, pub, kept)
}
