package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// SchemaVersion is the version of the records and payloads this package
// writes and reads.
const SchemaVersion = 1

// Record kinds.
const (
	KindCall    = "call"
	KindResult  = "result"
	KindReceipt = "receipt"
)

// Genesis is the prev of a chain's first record.
var Genesis [sha256.Size]byte

// Hash is the hash of a record or payload: the SHA-256 of its bytes.
func Hash(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }

// Digest is "sha256:" and the lowercase hex SHA-256 of b, as records name
// the bytes they stand for.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Meta is what every record carries besides its facts.
type Meta struct {
	RunID   string
	Seq     int64
	EventID string
	Prev    [sha256.Size]byte
	At      time.Time
}

func (m Meta) object(kind string) *object {
	o := &object{}
	o.int("schemaVersion", SchemaVersion)
	o.str("kind", kind)
	o.str("runId", m.RunID)
	o.int("seq", m.Seq)
	o.str("eventId", m.EventID)
	o.str("prev", hex.EncodeToString(m.Prev[:]))
	o.str("at", stamp(m.At))
	return o
}

// stamp writes a time in UTC, RFC 3339 with microseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// CallRecord is the canonical record of call c, whose answer to the agent
// was response (nil: the call answered an error, and the record has no
// responseDigest).
func CallRecord(m Meta, c store.Call, response []byte) ([]byte, error) {
	o := m.object(KindCall)
	o.str("tool", c.Tool)
	o.strOpt("outputId", c.OutputID)
	o.str("status", c.Status)
	o.strOpt("code", c.Code)
	o.strOpt("hostCode", c.HostCode)
	o.int("admitted", int64(c.Admitted))
	o.int("withheld", int64(c.Withheld))
	o.int("omitted", int64(c.Omitted))
	o.bool("truncated", c.Truncated)
	if c.Observed != nil {
		b, _ := c.Observed.MarshalJSON()
		if err := o.json("observedLabel", b); err != nil {
			return nil, err
		}
	}
	if c.ExitCode != nil {
		o.int("exitCode", int64(*c.ExitCode))
	}
	o.str("startedAt", stamp(c.StartedAt))
	o.int("durationUs", c.Duration.Microseconds())
	if response != nil {
		o.str("responseDigest", Digest(response))
	}
	if len(c.Entries) > 0 {
		es := []byte{'['}
		for i, e := range c.Entries {
			if i > 0 {
				es = append(es, ',')
			}
			eo := &object{}
			eo.str("status", e.Status)
			eo.strOpt("reasonCode", e.ReasonCode)
			eo.strOpt("labelSource", e.LabelSource)
			eo.strOpt("handle", e.Handle)
			if e.Status == "admitted" {
				b, _ := e.Label.MarshalJSON()
				if err := eo.json("label", b); err != nil {
					return nil, err
				}
				eo.bool("truncated", e.Truncated)
			}
			es = append(es, eo.bytes()...)
		}
		o.raw("entries", append(es, ']'))
	}
	return o.bytes(), nil
}

// ResultRecord is the canonical record of the run's result write.
func ResultRecord(m Meta, r store.Result) ([]byte, error) {
	o := m.object(KindResult)
	o.str("valueDigest", Digest(r.Value))
	o.int("documents", int64(len(r.Documents)))
	b, _ := r.Label.MarshalJSON()
	if err := o.json("label", b); err != nil {
		return nil, err
	}
	b, _ = r.Receipt.MarshalJSON()
	if err := o.json("receiptLabel", b); err != nil {
		return nil, err
	}
	return o.bytes(), nil
}

// Fields is a record as a verifier reads it: the members every record has,
// and those a receipt and a log line check against.
type Fields struct {
	SchemaVersion  int             `json:"schemaVersion"`
	Kind           string          `json:"kind"`
	RunID          string          `json:"runId"`
	Seq            int64           `json:"seq"`
	EventID        string          `json:"eventId"`
	Prev           string          `json:"prev"`
	At             string          `json:"at"`
	Tool           string          `json:"tool"`
	OutputID       string          `json:"outputId"`
	Status         string          `json:"status"`
	ResponseDigest string          `json:"responseDigest"`
	Observed       json.RawMessage `json:"observedLabel"`
	ValueDigest    string          `json:"valueDigest"`
	Label          json.RawMessage `json:"label"`
}

// ParseRecord reads a record's bytes, which must be canonical and of
// SchemaVersion.
func ParseRecord(b []byte) (Fields, error) {
	var f Fields
	if !IsCanonical(b) {
		return f, ErrNotCanonical
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("receipt: record: %w", err)
	}
	if f.SchemaVersion != SchemaVersion {
		return f, fmt.Errorf("receipt: record: schemaVersion %d, not %d", f.SchemaVersion, SchemaVersion)
	}
	if f.Kind != KindCall && f.Kind != KindResult {
		return f, errors.New("receipt: record: kind is neither call nor result")
	}
	return f, nil
}
