package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/receipt"
	"github.com/loom-gateway/gateway/internal/store"
)

// TestVerifyReceipt: gateway verify-receipt's answers: a good document
// (from a file and from stdin), a response that is not the one digested,
// a document checked with no key (refused without --chain-only, the chain
// alone with it), and usage mistakes (exit 2).
func TestVerifyReceipt(t *testing.T) {
	dir := t.TempDir()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	signer := receipt.NewSigner(key)
	body := []byte(`{"outputId":"r:loom_search:1","status":"ok"}`)
	rec, err := receipt.CallRecord(receipt.Meta{RunID: "r", Seq: 1, EventID: "e1", At: time.Now()}, store.Call{OutputID: "r:loom_search:1", Tool: "loom_search", Status: "ok"}, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	d, err := receipt.Sign(signer, receipt.Facts{Run: store.Run{ID: "r"}, Reason: receipt.ReasonRequested, SignedAt: time.Now()}, [][]byte{rec})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(d)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file, pubFile := write("receipt.json", doc), write("pub.pem", receipt.PublicKeyPEM(pub))
	good, other := write("body", body), write("other", []byte(`{}`))
	d.Receipt = nil
	unsignedDoc, _ := json.Marshal(d)
	unsigned := write("unsigned.json", unsignedDoc)

	for _, tc := range []struct {
		name  string
		args  []string
		stdin []byte
		usage bool   // exit 2
		want  string // in the error ("" none) or, with no error, in stdout
	}{
		{"good", []string{file, "--key", pubFile, "--response", "1=" + good}, nil, false, "verifies"},
		{"flags first", []string{"--key", pubFile, file}, nil, false, "verifies"},
		{"stdin", []string{"-", "--key", pubFile}, doc, false, "verifies"},
		{"another response", []string{file, "--key", pubFile, "--response", "1=" + other}, nil, false, "chain link 1: the response kept for it"},
		{"unsigned", []string{unsigned, "--key", pubFile}, nil, false, "no signed receipt"},
		{"chain only", []string{unsigned, "--chain-only"}, nil, false, "NOT signed"},
		{"no key", []string{file}, nil, true, "--key is required"},
		{"no file", []string{"--key", pubFile}, nil, true, "FILE is required"},
		{"bad response flag", []string{file, "--key", pubFile, "--response", "x"}, nil, true, "--response"},
		{"not a document", []string{pubFile, "--key", pubFile}, nil, true, "not a receipt document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := verifyReceipt(context.Background(), tc.args, bytes.NewReader(tc.stdin), &out, &errOut)
			_, isUsage := errors.AsType[*usageError](err)
			switch {
			case tc.usage != isUsage:
				t.Fatalf("err %v: usage %v, want %v", err, isUsage, tc.usage)
			case err != nil && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err %v, want %q", err, tc.want)
			case err == nil && (tc.want == "" || !strings.Contains(out.String(), tc.want)):
				t.Fatalf("out %q, want %q", out.String(), tc.want)
			case err == nil && strings.Contains(tc.want, "chain link"):
				t.Fatal("no error")
			}
		})
	}
}
