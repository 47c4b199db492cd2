package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/jsjson"
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
func stamp(t time.Time) string { return string(appendStamp(nil, t)) }

func appendStamp(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000000Z")
}

// CallRecord is the canonical record of call c, whose answer to the agent
// was response (nil: the call answered an error, and the record has no
// responseDigest). handles, when not nil, are the handles of c's admitted
// entries in order, in place of theirs. It is written member by member in the canonical order
// (a call's record is made on every call: no sorting, one buffer);
// TestRecordVector and the verifier's IsCanonical hold the order.
func CallRecord(m Meta, c store.Call, handles []string, response []byte) ([]byte, error) {
	w := seqWriter{buf: make([]byte, 0, 512+128*len(c.Entries))}
	w.buf = append(w.buf, '{')
	w.int("admitted", int64(c.Admitted))
	w.name("at")
	w.buf = append(appendStamp(append(w.buf, '"'), m.At), '"')
	w.strOpt("code", c.Code)
	w.int("durationUs", c.Duration.Microseconds())
	if len(c.Entries) > 0 {
		w.name("entries")
		w.buf = append(w.buf, '[')
		h := 0
		for i, e := range c.Entries {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if e.Status == "admitted" && handles != nil {
				if h >= len(handles) {
					return nil, errors.New("receipt: fewer handles than admitted entries")
				}
				e.Handle = handles[h]
				h++
			}
			ew := seqWriter{buf: append(w.buf, '{')}
			ew.strOpt("handle", e.Handle)
			if e.Status == "admitted" {
				ew.name("label")
				ew.buf = appendDisclosed(ew.buf, e.Label)
			}
			ew.strOpt("labelSource", e.LabelSource)
			ew.strOpt("reasonCode", e.ReasonCode)
			ew.str("status", e.Status)
			if e.Status == "admitted" {
				ew.bool("truncated", e.Truncated)
			}
			w.buf = append(ew.buf, '}')
		}
		w.buf = append(w.buf, ']')
	}
	w.str("eventId", m.EventID)
	if c.ExitCode != nil {
		w.int("exitCode", int64(*c.ExitCode))
	}
	w.strOpt("hostCode", c.HostCode)
	w.str("kind", KindCall)
	if c.Observed != nil {
		b, _ := c.Observed.MarshalJSON()
		cb, err := Canonical(b)
		if err != nil {
			return nil, fmt.Errorf("observedLabel: %w", err)
		}
		w.name("observedLabel")
		w.buf = append(w.buf, cb...)
	}
	w.int("omitted", int64(c.Omitted))
	w.strOpt("outputId", c.OutputID)
	w.name("prev")
	w.buf = hex.AppendEncode(append(w.buf, '"'), m.Prev[:])
	w.buf = append(w.buf, '"')
	if response != nil {
		sum := sha256.Sum256(response)
		w.name("responseDigest")
		w.buf = append(w.buf, `"sha256:`...)
		w.buf = append(hex.AppendEncode(w.buf, sum[:]), '"')
	}
	w.str("runId", m.RunID)
	w.int("schemaVersion", SchemaVersion)
	w.int("seq", m.Seq)
	w.name("startedAt")
	w.buf = append(appendStamp(append(w.buf, '"'), c.StartedAt), '"')
	w.str("status", c.Status)
	w.str("tool", c.Tool)
	w.bool("truncated", c.Truncated)
	w.int("withheld", int64(c.Withheld))
	return append(w.buf, '}'), nil
}

// seqWriter writes a canonical object's members in the order its caller
// gives them, which must be the canonical one; the caller writes the
// braces.
type seqWriter struct {
	buf []byte
	n   int
}

func (w *seqWriter) name(n string) {
	if w.n > 0 {
		w.buf = append(w.buf, ',')
	}
	w.n++
	w.buf = append(jsjson.AppendString(w.buf, n), ':')
}

func (w *seqWriter) str(n, v string) { w.name(n); w.buf = jsjson.AppendString(w.buf, v) }
func (w *seqWriter) int(n string, v int64) {
	w.name(n)
	w.buf = strconv.AppendInt(w.buf, v, 10)
}
func (w *seqWriter) bool(n string, v bool) { w.name(n); w.buf = strconv.AppendBool(w.buf, v) }
func (w *seqWriter) strOpt(n, v string) {
	if v != "" {
		w.str(n, v)
	}
}

// appendDisclosed writes a disclosed label canonically: its two members
// in order, atom types as strings.
func appendDisclosed(dst []byte, d ifc.Disclosed) []byte {
	dst = append(dst, `{"confidentiality":[`...)
	for i, clause := range d.Confidentiality {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		for j, a := range clause {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsjson.AppendString(dst, a)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `],"integrity":[`...)
	for i, a := range d.Integrity {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsjson.AppendString(dst, a)
	}
	return append(dst, ']', '}')
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
