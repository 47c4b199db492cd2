package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Why a receipt was signed.
const (
	ReasonDeleted   = "deleted"
	ReasonExpired   = "expired"
	ReasonRequested = "requested"
)

// Link is one record of a chain as a Document carries it: its bytes, and
// for the reader its seq and hash (a verifier recomputes both).
type Link struct {
	Seq    int64  `json:"seq"`
	Hash   string `json:"hash"`
	Record []byte `json:"record"` // base64 in JSON
}

// Signed is a signed receipt: the payload's bytes, the Ed25519 signature
// over them, and the signing key's id.
type Signed struct {
	Payload   []byte `json:"payload"`
	Signature []byte `json:"signature"`
	KeyID     string `json:"keyId"`
}

// Document is what the host reads and keeps of a run: its chain and, when
// the gateway has a signing key, the signed receipt.
type Document struct {
	RunID   string  `json:"runId"`
	Chain   []Link  `json:"chain"`
	Receipt *Signed `json:"receipt,omitempty"`
}

// Facts are what a receipt says of a run besides its chain.
type Facts struct {
	Run store.Run
	// Result is the run's result, nil when none is written.
	Result   *store.Result
	Reason   string
	SignedAt time.Time
	Version  string
}

// LinkOf is the Link of record bytes at seq.
func LinkOf(seq int64, record []byte) Link {
	sum := sha256.Sum256(record)
	return Link{Seq: seq, Hash: hex.EncodeToString(sum[:]), Record: record}
}

// Observed is the join of the observed labels of a chain's call records
// (ifc.JoinModelContext), what the agent was shown; nil for none.
func Observed(records [][]byte) (ifc.Confidentiality, error) {
	var joined ifc.Confidentiality
	for _, r := range records {
		f, err := ParseRecord(r)
		if err != nil {
			return nil, err
		}
		if f.Kind != KindCall || len(f.Observed) == 0 {
			continue
		}
		var c ifc.Confidentiality
		if err := c.UnmarshalJSON(f.Observed); err != nil {
			return nil, err
		}
		joined = ifc.JoinModelContext(joined, c)
	}
	return joined, nil
}

// Payload is the canonical receipt payload of a run whose chain is
// records, to be signed with the key of id keyID.
func Payload(f Facts, records [][]byte, keyID string) ([]byte, error) {
	o := &object{}
	o.int("schemaVersion", SchemaVersion)
	o.str("kind", KindReceipt)
	o.str("runId", f.Run.ID)
	o.str("reason", f.Reason)
	o.str("createdAt", stamp(f.Run.CreatedAt))
	if !f.Run.ExpiresAt.IsZero() {
		o.str("expiresAt", stamp(f.Run.ExpiresAt))
	}
	o.str("signedAt", stamp(f.SignedAt))
	o.str("gatewayVersion", f.Version)
	o.str("keyId", keyID)
	ceiling, _ := f.Run.Ceiling.MarshalJSON()
	if err := o.json("ceiling", ceiling); err != nil {
		return nil, err
	}
	b, _ := f.Run.ModelContext.MarshalJSON()
	if err := o.json("modelContextLabel", b); err != nil {
		return nil, err
	}
	obs, err := Observed(records)
	if err != nil {
		return nil, err
	}
	b, _ = obs.MarshalJSON()
	if err := o.json("observedLabel", b); err != nil {
		return nil, err
	}
	o.int("chainLength", int64(len(records)))
	tip := Genesis
	if len(records) > 0 {
		tip = Hash(records[len(records)-1])
	}
	o.str("chainTip", hex.EncodeToString(tip[:]))
	if f.Result != nil {
		ro := &object{}
		ro.str("valueDigest", Digest(f.Result.Value))
		ro.int("documents", int64(len(f.Result.Documents)))
		b, _ := f.Result.Label.MarshalJSON()
		if err := ro.json("label", b); err != nil {
			return nil, err
		}
		b, _ = f.Result.Receipt.MarshalJSON()
		if err := ro.json("receiptLabel", b); err != nil {
			return nil, err
		}
		o.raw("result", ro.bytes())
	}
	return o.bytes(), nil
}

// Sign makes the run's Document: its chain and, with s not nil, the
// receipt s signs.
func Sign(s *Signer, f Facts, records [][]byte) (Document, error) {
	d := Document{RunID: f.Run.ID, Chain: make([]Link, len(records))}
	for i, r := range records {
		d.Chain[i] = LinkOf(int64(i+1), r)
	}
	if s == nil {
		return d, nil
	}
	p, err := Payload(f, records, s.KeyID())
	if err != nil {
		return Document{}, err
	}
	d.Receipt = &Signed{Payload: p, Signature: s.Sign(p), KeyID: s.KeyID()}
	return d, nil
}
