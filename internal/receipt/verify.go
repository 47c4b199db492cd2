package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// PayloadFields is a receipt payload as a verifier reads it.
type PayloadFields struct {
	SchemaVersion int    `json:"schemaVersion"`
	Kind          string `json:"kind"`
	RunID         string `json:"runId"`
	KeyID         string `json:"keyId"`
	ChainLength   int64  `json:"chainLength"`
	ChainTip      string `json:"chainTip"`
}

// VerifyChain checks a run's chain link by link: each record canonical, of
// the run and SchemaVersion, numbered from 1 with no gap, its prev the
// hash of the record before it (Genesis for the first), the Link's seq
// and hash its own; and, for each seq in responses (the response bytes
// the host kept), that the record's responseDigest is theirs. Its error
// names the first bad link. It returns the chain's tip.
func VerifyChain(runID string, chain []Link, responses map[int64][]byte) ([32]byte, error) {
	prev := Genesis
	seen := map[string]int64{}
	for i, l := range chain {
		seq := int64(i + 1)
		bad := func(format string, a ...any) error {
			return fmt.Errorf("chain link %d: %s", seq, fmt.Sprintf(format, a...))
		}
		f, err := ParseRecord(l.Record)
		if err != nil {
			return prev, bad("%v", err)
		}
		if f.RunID != runID {
			return prev, bad("the record is of run %q, not %q", f.RunID, runID)
		}
		if f.Seq != seq || l.Seq != seq {
			return prev, bad("the record says seq %d (the link %d): records are missing, reordered or repeated", f.Seq, l.Seq)
		}
		if f.Prev != hex.EncodeToString(prev[:]) {
			return prev, bad("prev %s is not the hash of the record before it (%x): the chain was changed before this link", f.Prev, prev)
		}
		if f.EventID == "" {
			return prev, bad("no eventId")
		}
		if at, ok := seen[f.EventID]; ok {
			return prev, bad("eventId %s repeats link %d", f.EventID, at)
		}
		seen[f.EventID] = seq
		h := Hash(l.Record)
		if l.Hash != hex.EncodeToString(h[:]) {
			return prev, bad("the link's hash %s is not its record's (%x)", l.Hash, h)
		}
		if body, ok := responses[seq]; ok {
			if f.ResponseDigest == "" {
				return prev, bad("the record has no responseDigest (an error's record), but a response was given for it")
			}
			if d := Digest(body); d != f.ResponseDigest {
				return prev, bad("the response kept for it has digest %s, the record says %s", d, f.ResponseDigest)
			}
		}
		prev = h
	}
	return prev, nil
}

// ErrUnsigned is Verify's answer to a Document without a receipt.
var ErrUnsigned = errors.New("receipt: the document holds no signed receipt (the gateway has no signing key)")

// Verify checks a Document: the receipt's signature with the key its
// keyId names in keys (ErrUnsigned without one), its payload canonical and
// of the document's run, the chain (VerifyChain), and that the chain's
// length and tip are the ones the receipt signed, so that a chain cut
// short, extended or changed anywhere fails. It returns the payload.
func Verify(d Document, keys Keyring, responses map[int64][]byte) (PayloadFields, error) {
	var p PayloadFields
	if d.Receipt == nil {
		return p, ErrUnsigned
	}
	pub, ok := keys[d.Receipt.KeyID]
	if !ok {
		return p, fmt.Errorf("receipt: signed with key %q, which is not among the %d keys given", d.Receipt.KeyID, len(keys))
	}
	if !ed25519.Verify(pub, d.Receipt.Payload, d.Receipt.Signature) {
		return p, fmt.Errorf("receipt: the signature is not key %s's over the payload", d.Receipt.KeyID)
	}
	if !IsCanonical(d.Receipt.Payload) {
		return p, fmt.Errorf("receipt: payload: %w", ErrNotCanonical)
	}
	dec := json.NewDecoder(bytes.NewReader(d.Receipt.Payload))
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("receipt: payload: %w", err)
	}
	switch {
	case p.SchemaVersion != SchemaVersion || p.Kind != KindReceipt:
		return p, fmt.Errorf("receipt: payload: kind %q schemaVersion %d, not a receipt of version %d", p.Kind, p.SchemaVersion, SchemaVersion)
	case p.KeyID != d.Receipt.KeyID:
		return p, fmt.Errorf("receipt: payload names key %s, the document %s", p.KeyID, d.Receipt.KeyID)
	case p.RunID != d.RunID:
		return p, fmt.Errorf("receipt: signed for run %q, the document is of run %q", p.RunID, d.RunID)
	}
	tip, err := VerifyChain(d.RunID, d.Chain, responses)
	if err != nil {
		return p, err
	}
	if int64(len(d.Chain)) != p.ChainLength {
		return p, fmt.Errorf("chain link %d: the receipt signed a chain of %d records, the document holds %d", min(int64(len(d.Chain)), p.ChainLength)+1, p.ChainLength, len(d.Chain))
	}
	if hex.EncodeToString(tip[:]) != p.ChainTip {
		return p, fmt.Errorf("chain link %d: the chain's tip %x is not the one the receipt signed (%s)", len(d.Chain), tip, p.ChainTip)
	}
	return p, nil
}
