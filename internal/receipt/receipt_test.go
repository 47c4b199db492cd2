package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

var t0 = time.Date(2026, 12, 7, 5, 0, 0, 123456000, time.UTC)

// chainOf builds a chain of n call records and a result record for run,
// and the response bytes of each call.
func chainOf(t *testing.T, run string, n int) ([][]byte, map[int64][]byte) {
	t.Helper()
	var recs [][]byte
	resp := map[int64][]byte{}
	prev := Genesis
	for i := 1; i <= n+1; i++ {
		m := Meta{RunID: run, Seq: int64(i), EventID: fmt.Sprintf("ev-%s-%d", run, i), Prev: prev, At: t0.Add(time.Duration(i) * time.Second)}
		var rec []byte
		var err error
		if i <= n {
			body := fmt.Appendf(nil, `{"outputId":"%s:search:%d","status":"ok"}`, run, i)
			resp[int64(i)] = body
			code := 0
			rec, err = CallRecord(m, store.Call{
				OutputID: fmt.Sprintf("%s:search:%d", run, i), Tool: "search", Status: "ok",
				Admitted: 1, Withheld: 1, Observed: ifc.Confidentiality{ifc.Clause(`"secret"`)}, ExitCode: &code,
				Duration: 1500 * time.Microsecond, StartedAt: t0,
				Entries: []store.CallEntry{
					{Status: "admitted", LabelSource: "row", Label: ifc.Disclosed{Confidentiality: [][]string{{"secret"}}}, Handle: "cfh:v:x"},
					{Status: "withheld", ReasonCode: "above_ceiling"},
				},
			}, nil, body)
		} else {
			rec, err = ResultRecord(m, store.Result{Value: jsontext.Value(`{"a":1}`)})
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = Hash(rec)
	}
	return recs, resp
}

func newKey(t *testing.T) *Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return NewSigner(k)
}

func signed(t *testing.T, s *Signer, run string, recs [][]byte) Document {
	t.Helper()
	d, err := Sign(s, Facts{Run: store.Run{ID: run, CreatedAt: t0, Ceiling: ifc.CeilingOf(ifc.Confidentiality{ifc.Clause(`"secret"`)})},
		Reason: ReasonRequested, SignedAt: t0.Add(time.Hour), Version: "test"}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRecordVector holds the record encoding to the bytes checked in:
// a change of the canonical form or of a record's members shows here.
func TestRecordVector(t *testing.T) {
	recs, _ := chainOf(t, "run-7", 1)
	want, err := os.ReadFile("testdata/record-call.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(recs[0], bytes.TrimSuffix(want, []byte("\n"))) {
		t.Fatalf("call record:\n got %s\nwant %s", recs[0], want)
	}
	h := Hash(recs[0])
	wantHash, _ := os.ReadFile("testdata/record-call.sha256")
	if got := hex.EncodeToString(h[:]); got != strings.TrimSpace(string(wantHash)) {
		t.Fatalf("hash %s, want %s", got, wantHash)
	}
}

func TestVerifyUntouched(t *testing.T) {
	s := newKey(t)
	recs, resp := chainOf(t, "run-7", 4)
	d := signed(t, s, "run-7", recs)
	p, err := Verify(d, NewKeyring(s.Public()), resp)
	if err != nil {
		t.Fatal(err)
	}
	if p.ChainLength != 5 || p.RunID != "run-7" {
		t.Fatalf("payload %+v", p)
	}
	// Rotation: the keyring holds an older key too.
	old := newKey(t)
	if _, err := Verify(d, NewKeyring(old.Public(), s.Public()), nil); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyTampered: every change a writer of the store or of the
// document could make is found, and the message names the first bad link.
func TestVerifyTampered(t *testing.T) {
	s := newKey(t)
	recs, resp := chainOf(t, "run-7", 4)
	other, _ := chainOf(t, "run-8", 4)
	keys := NewKeyring(s.Public())
	clone := func(d Document) Document {
		d.Chain = append([]Link(nil), d.Chain...)
		return d
	}
	base := signed(t, s, "run-7", recs)
	for _, tc := range []struct {
		name string
		edit func(d Document) Document
		resp map[int64][]byte
		want string
	}{
		{"one byte of a record", func(d Document) Document {
			d = clone(d)
			r := bytes.Replace(d.Chain[2].Record, []byte(`"withheld":1`), []byte(`"withheld":0`), 1)
			d.Chain[2] = LinkOf(3, r)
			return d
		}, nil, "chain link 4: prev"},
		{"one byte of a record, its link kept", func(d Document) Document {
			d = clone(d)
			d.Chain[1].Record = bytes.Replace(d.Chain[1].Record, []byte(`"admitted":1`), []byte(`"admitted":2`), 1)
			return d
		}, nil, "chain link 2: the link's hash"},
		{"a record dropped", func(d Document) Document {
			d = clone(d)
			d.Chain = append(d.Chain[:1], d.Chain[2:]...)
			return d
		}, nil, "chain link 2: the record says seq 3"},
		{"two records swapped", func(d Document) Document {
			d = clone(d)
			d.Chain[1], d.Chain[2] = d.Chain[2], d.Chain[1]
			return d
		}, nil, "chain link 2: the record says seq 3"},
		{"cut short", func(d Document) Document {
			d = clone(d)
			d.Chain = d.Chain[:3]
			return d
		}, nil, "chain link 4: the receipt signed a chain of 5 records, the document holds 3"},
		{"another run's record", func(d Document) Document {
			d = clone(d)
			d.Chain[3] = LinkOf(4, other[3])
			return d
		}, nil, `chain link 4: the record is of run "run-8"`},
		{"the chain rebuilt whole, re-hashed", func(d Document) Document {
			d = clone(d)
			forged, _ := chainOf(t, "run-7", 5)
			d.Chain = nil
			for i, r := range forged[:5] {
				d.Chain = append(d.Chain, LinkOf(int64(i+1), r))
			}
			return d
		}, nil, "chain link 5: the chain's tip"},
		{"an unknown key", func(d Document) Document { return signed(t, newKey(t), "run-7", recs) }, nil, "which is not among the 1 keys given"},
		{"a signature of another payload", func(d Document) Document {
			r := *d.Receipt
			r.Payload = bytes.Replace(r.Payload, []byte(`"chainLength":5`), []byte(`"chainLength":4`), 1)
			d.Receipt = &r
			return d
		}, nil, "the signature is not key"},
		{"another run's receipt", func(d Document) Document {
			e := signed(t, s, "run-8", other)
			d.Receipt = e.Receipt
			return d
		}, nil, `signed for run "run-8"`},
		{"a response not the one sent", func(d Document) Document { return d }, map[int64][]byte{2: []byte(`{"outputId":"x"}`)}, "chain link 2: the response kept for it has digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.edit(base), keys, tc.resp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := Verify(base, keys, resp); err != nil {
		t.Fatalf("the untouched document after the cases: %v", err)
	}
	unsigned, _ := Sign(nil, Facts{Run: store.Run{ID: "run-7"}}, recs)
	if _, err := Verify(unsigned, keys, nil); err != ErrUnsigned {
		t.Fatalf("unsigned: %v", err)
	}
}

func TestKeysPEM(t *testing.T) {
	s := newKey(t)
	pubs, err := ParsePublicKeys(append(PublicKeyPEM(newKey(t).Public()), PublicKeyPEM(s.Public())...))
	if err != nil || len(pubs) != 2 || KeyID(pubs[1]) != s.KeyID() {
		t.Fatalf("ParsePublicKeys: %v %d", err, len(pubs))
	}
	if _, err := ParsePrivateKey(PublicKeyPEM(s.Public())); err == nil {
		t.Fatal("a public key read as a private one")
	}
}

// TestCallRecordCanonical: a call record with every optional member, and
// strings that need escaping, is its own canonical form (the record is
// written member by member, in the order the canonical form sorts them).
func TestCallRecordCanonical(t *testing.T) {
	code := 3
	for _, c := range []store.Call{
		{Tool: "loom_search", Status: "error", Code: "command_failed", HostCode: "exit_status", ExitCode: &code, StartedAt: t0},
		{OutputID: "r:loom_search:9", Tool: "t\"o\\ol\u2028é\x01", Status: "ok", Admitted: 1, Withheld: 2, Omitted: 3, Truncated: true,
			Observed: ifc.Confidentiality{ifc.Clause(`{"type":"b","z":1.50,"a":"é"}`), ifc.Clause(`"x"`)}, ExitCode: &code, Duration: time.Second, StartedAt: t0,
			Entries: []store.CallEntry{
				{Status: "admitted", LabelSource: "query", Label: ifc.Disclosed{Confidentiality: [][]string{{"a", "b\n"}, {}}, Integrity: []string{"i"}}, Handle: "cfh:v:abcde", Truncated: true},
				{Status: "withheld", ReasonCode: "cfc_ceiling_exceeded"},
				{Status: "admitted"},
			}},
	} {
		rec, err := CallRecord(Meta{RunID: "r\u00e9", Seq: 7, EventID: "e", At: t0}, c, nil, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if want, err := Canonical(rec); err != nil || !bytes.Equal(rec, want) {
			t.Fatalf("record not canonical (%v):\n got %s\nwant %s", err, rec, want)
		}
		if _, err := ParseRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
}
