package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/receipt"
)

func testSigner(t *testing.T) *receipt.Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return receipt.NewSigner(k)
}

// TestReceiptChain: with receipts on, every numbered call, its error
// included, and the result write are one chain the receipt signs; each
// call's record digests the exact bytes it answered; each audit record
// carries its record's seq, eventId and hash.
func TestReceiptChain(t *testing.T) {
	signer := testSigner(t)
	c := newTestCore(t, coreOptions{Receipts: &Receipts{Signer: signer, Version: "test"}})
	ctx := context.Background()
	tok := c.createRun(t, "r")
	responses := map[int64][]byte{}
	body, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`)
	if err != nil {
		t.Fatal(err)
	}
	responses[1] = body
	if _, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`); err != nil { // the same rows: tokens held
		t.Fatal(err)
	}
	if _, err := c.call(ctx, "r", tok, "describe_handle", `{"token":"cfh:v:22222"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.call(ctx, "r", tok, "result", `{"note":"done"}`); err != nil {
		t.Fatal(err)
	}
	d, err := c.Receipt(ctx, "r", receipt.ReasonRequested)
	if err != nil {
		t.Fatal(err)
	}
	p, err := receipt.Verify(d, receipt.NewKeyring(signer.Public()), responses)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if p.ChainLength != int64(len(c.callLog(t, "r")))+1 {
		t.Fatalf("chain of %d records, call log of %d and a result", p.ChainLength, len(c.callLog(t, "r")))
	}
	audits := c.logRecords(t, "audit")
	if len(audits) != len(d.Chain) {
		t.Fatalf("%d audit records, %d chain records", len(audits), len(d.Chain))
	}
	for i, a := range audits {
		f, _ := receipt.ParseRecord(d.Chain[i].Record)
		if a["seq"] != float64(i+1) || a["eventId"] != f.EventID || a["recordHash"] != d.Chain[i].Hash || a["schemaVersion"] != float64(receipt.SchemaVersion) {
			t.Errorf("audit record %d = %v, chain record %s", i, a, d.Chain[i].Record)
		}
	}
	// The response the agent got for the first call is the one digested;
	// a byte changed is found.
	responses[1] = append([]byte(nil), body...)
	responses[1][len(body)-2] ^= 1
	if _, err := receipt.Verify(d, receipt.NewKeyring(signer.Public()), responses); err == nil {
		t.Fatal("a changed response verified")
	}

	// Deleting the run signs its receipt into the log.
	if err := c.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	recs := c.logRecords(t, "receipt")
	if len(recs) != 1 || recs[0]["reason"] != receipt.ReasonDeleted || recs[0]["chainTip"] != hex.EncodeToString(mustTip(t, d)) {
		t.Fatalf("receipt log records = %v", recs)
	}
}

func mustTip(t *testing.T, d receipt.Document) []byte {
	t.Helper()
	h := receipt.Hash(d.Chain[len(d.Chain)-1].Record)
	return h[:]
}

// TestReceiptOff: without Receipts no chain is kept and the audit
// records are as they were.
func TestReceiptOff(t *testing.T) {
	c := newTestCore(t, coreOptions{})
	ctx := context.Background()
	tok := c.createRun(t, "r")
	if _, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`); err != nil {
		t.Fatal(err)
	}
	if recs, _ := c.store.Chain(ctx, "r"); len(recs) != 0 {
		t.Fatalf("chain of %d records with receipts off", len(recs))
	}
	if a := c.logRecords(t, "audit"); len(a) != 1 || a[0]["seq"] != nil {
		t.Fatalf("audit = %v", a)
	}
	if _, err := c.Receipt(ctx, "r", receipt.ReasonRequested); err != ErrNoChain {
		t.Fatalf("Receipt = %v", err)
	}
}

// TestReceiptExpired: a run that ends by expiring gets its receipt signed
// by the sweep on its chain as it ended.
func TestReceiptExpired(t *testing.T) {
	signer := testSigner(t)
	c := newTestCore(t, coreOptions{Receipts: &Receipts{Signer: signer, Version: "test"}})
	ctx := context.Background()
	id, ttl := "short", 200*time.Millisecond
	created, err := c.CreateRun(ctx, RunSpec{ID: &id, TTL: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.call(ctx, id, created.Token, "loom_search", `{"query":"atlas"}`); err != nil {
		t.Fatal(err)
	}
	want, err := c.Receipt(ctx, id, receipt.ReasonRequested)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl)
	if n := c.store.SweepEnded(c.Expired); n != 1 {
		t.Fatalf("SweepEnded removed %d runs", n)
	}
	recs := c.logRecords(t, "receipt")
	if len(recs) != 1 || recs[0]["reason"] != receipt.ReasonExpired || recs[0]["chainTip"] != hex.EncodeToString(mustTip(t, want)) {
		t.Fatalf("receipt log records = %v", recs)
	}
	payload, _ := base64.StdEncoding.DecodeString(recs[0]["payload"].(string))
	sig, _ := base64.StdEncoding.DecodeString(recs[0]["signature"].(string))
	d := receipt.Document{RunID: id, Chain: want.Chain, Receipt: &receipt.Signed{Payload: payload, Signature: sig, KeyID: signer.KeyID()}}
	if _, err := receipt.Verify(d, receipt.NewKeyring(signer.Public()), nil); err != nil {
		t.Fatalf("the expired run's receipt: %v", err)
	}
}

// TestReceiptBrokenChain: a chain changed in the store, so that it no
// longer verifies, is served unsigned and the first bad link logged.
func TestReceiptBrokenChain(t *testing.T) {
	signer := testSigner(t)
	broken := &brokenChains{}
	c := newTestCore(t, coreOptions{Receipts: &Receipts{Signer: signer, Chains: broken}})
	broken.Store = c.store
	ctx := context.Background()
	tok := c.createRun(t, "r")
	for range 3 {
		if _, err := c.call(ctx, "r", tok, "loom_search", `{"query":"atlas"}`); err != nil {
			t.Fatal(err)
		}
	}
	d, err := c.Receipt(ctx, "r", receipt.ReasonRequested)
	if err != nil || d.Receipt != nil || len(d.Chain) != 2 {
		t.Fatalf("Receipt = %d links, signed %v, %v; want the 2 left, unsigned", len(d.Chain), d.Receipt != nil, err)
	}
	if recs := c.logRecords(t, "run chain does not verify: receipt not signed"); len(recs) != 1 || !strings.Contains(recs[0]["error"].(string), "chain link 2") {
		t.Fatalf("log = %v", recs)
	}
}

// brokenChains reads a memory store's chains with their second record
// dropped, as a writer of the backend could leave them.
type brokenChains struct {
	Store interface {
		Chain(context.Context, string) ([][]byte, error)
	}
}

func (b *brokenChains) Chain(ctx context.Context, id string) ([][]byte, error) {
	recs, err := b.Store.Chain(ctx, id)
	if err != nil || len(recs) < 2 {
		return recs, err
	}
	return append(recs[:1:1], recs[2:]...), nil
}
