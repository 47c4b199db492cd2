package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/receipt"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/version"
)

// receiptOptions are the run receipt's flags (docs/operators.md, Run
// receipts).
type receiptOptions struct {
	keyFile, verifyKeys string
	chain               bool
}

// receiptKeyFile is the signing key's file (--receipt-key), read under
// the token file rule.
var receiptKeyFile = secretFile{flag: "--receipt-key", what: "the receipt signing key", make: "openssl genpkey -algorithm ed25519 -out receipt-key.pem"}

// receiptFlags adds the receipt's flags to fs.
func receiptFlags(fs *flag.FlagSet, o *receiptOptions) {
	fs.StringVar(&o.keyFile, "receipt-key", "", "`file` holding the Ed25519 private key (PEM, PKCS#8: openssl genpkey -algorithm ed25519) that signs each run's receipt; read as --host-token-file is (mode 0600, or root-owned 0440, or in $CREDENTIALS_DIRECTORY); turns on --receipt-chain")
	fs.StringVar(&o.verifyKeys, "receipt-verify-keys", "", "`file` of PEM public keys (openssl pkey -pubout) served beside the signing key's at GET /host/v1/receipt-keys, for receipts signed by keys rotated out or by other replicas")
	fs.BoolVar(&o.chain, "receipt-chain", false, "keep each run's hash chain of call records (GET /host/v1/runs/{runId}/receipt) and add schemaVersion, eventId, seq and recordHash to each audit record, without signing")
}

// receiptConfig is the core's Receipts from the flags: nil when neither
// a key nor the chain is asked for. credDir is $CREDENTIALS_DIRECTORY.
func receiptConfig(o receiptOptions, credDir string) (*gateway.Receipts, error) {
	if o.keyFile == "" && !o.chain {
		if o.verifyKeys != "" {
			return nil, usagef("--receipt-verify-keys needs --receipt-key or --receipt-chain")
		}
		return nil, nil
	}
	r := &gateway.Receipts{Version: version.String()}
	if o.keyFile != "" {
		b, err := receiptKeyFile.read(o.keyFile, credDir)
		if err != nil {
			return nil, err
		}
		key, err := receipt.ParsePrivateKey(b)
		clear(b)
		if err != nil {
			return nil, usagef("--receipt-key %s: %v", o.keyFile, err)
		}
		r.Signer = receipt.NewSigner(key)
	}
	if o.verifyKeys != "" {
		b, err := os.ReadFile(o.verifyKeys)
		if err != nil {
			return nil, usagef("--receipt-verify-keys: cannot read %s: %v", o.verifyKeys, errors.Unwrap(err))
		}
		if r.Verify, err = receipt.ParsePublicKeys(b); err != nil {
			return nil, usagef("--receipt-verify-keys %s: %v", o.verifyKeys, err)
		}
	}
	return r, nil
}

// chainsOf gives the core's Receipts the store's chains: the store
// itself, not the wrapper that counts its failures.
func chainsOf(r *gateway.Receipts, st any) {
	if r != nil {
		r.Chains, _ = st.(store.Chains)
	}
}

// verifyReceiptUsage is the first line of verify-receipt's --help.
const verifyReceiptUsage = "Usage: gateway verify-receipt FILE --key PUB [--key PUB]... [--response SEQ=FILE]...\n\n" +
	"Checks a run's receipt as GET /host/v1/runs/{runId}/receipt answered it (FILE, - for stdin):\n" +
	"the Ed25519 signature with the key its keyId names among the --key files (PEM public keys),\n" +
	"the chain link by link, that the chain is the one the receipt signed, and, for each --response,\n" +
	"that the record of that seq digests the response bytes kept in the file. Exit 0: it verifies;\n" +
	"1: it does not, and the first bad link is named (docs/SECURITY.md, Run receipts).\n\nFlags:\n"

// verifyReceipt is `gateway verify-receipt`: args are the arguments after
// the subcommand's name.
func verifyReceipt(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var keyFiles, responses multiFlag
	var unsigned bool
	fs := flag.NewFlagSet("verify-receipt", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Var(&keyFiles, "key", "`file` of PEM public keys (openssl pkey -pubout) the receipt may be signed with (repeatable; GET /host/v1/receipt-keys serves them)")
	fs.Var(&responses, "response", "`seq=file`: the response bytes the agent was sent for the chain's record seq, to check against its responseDigest (repeatable)")
	fs.BoolVar(&unsigned, "chain-only", false, "check the chain of a document without a signed receipt (a gateway with --receipt-chain and no key); proves nothing against a writer of the store")
	// The file may come before the flags, as the usage line puts it.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") || len(args) > 0 && args[0] == "-" {
		file, args = args[0], args[1:]
	}
	if err := parseSubcommand(fs, args, stderr, verifyReceiptUsage); err != nil {
		return err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("verify-receipt: unexpected argument %q", fs.Arg(0))
	}
	if file == "" {
		return usagef("verify-receipt: the receipt FILE is required (- for stdin)")
	}
	if len(keyFiles) == 0 && !unsigned {
		return usagef("verify-receipt: --key is required: the public key(s) the receipt may be signed with")
	}
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return usagef("verify-receipt: cannot read %s: %v", file, err)
	}
	var d receipt.Document
	if err := json.Unmarshal(raw, &d); err != nil {
		return usagef("verify-receipt: %s is not a receipt document: %v", file, err)
	}
	var pubs []ed25519.PublicKey
	for _, f := range keyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return usagef("verify-receipt: --key: cannot read %s: %v", f, err)
		}
		ks, err := receipt.ParsePublicKeys(b)
		if err != nil {
			return usagef("verify-receipt: --key %s: %v", f, err)
		}
		pubs = append(pubs, ks...)
	}
	kept := map[int64][]byte{}
	for _, r := range responses {
		seqText, name, ok := strings.Cut(r, "=")
		seq, err := strconv.ParseInt(seqText, 10, 64)
		if !ok || err != nil || seq < 1 {
			return usagef("verify-receipt: --response %q: want seq=file, seq from 1", r)
		}
		if kept[seq], err = os.ReadFile(name); err != nil {
			return usagef("verify-receipt: --response: cannot read %s: %v", name, err)
		}
	}
	if unsigned && len(keyFiles) == 0 {
		tip, err := receipt.VerifyChain(d.RunID, d.Chain, kept)
		if err != nil {
			return fmt.Errorf("verify-receipt: run %s: %w", d.RunID, err)
		}
		fmt.Fprintf(stdout, "chain of run %s: %d records, tip %x; NOT signed: this proves only that the chain is whole, not who wrote it\n", d.RunID, len(d.Chain), tip)
		return nil
	}
	p, err := receipt.Verify(d, receipt.NewKeyring(pubs...), kept)
	if err != nil {
		return fmt.Errorf("verify-receipt: run %s: %w", d.RunID, err)
	}
	fmt.Fprintf(stdout, "receipt of run %s verifies: signed by key %s over a chain of %d records, tip %s; %d responses checked\n", p.RunID, p.KeyID, p.ChainLength, p.ChainTip, len(kept))
	return nil
}
