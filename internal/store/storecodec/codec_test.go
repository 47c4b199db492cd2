package storecodec

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// sampleCall is a call record with every field set: admitted and withheld
// entries, nil and empty lists apart, a failure.
func sampleCall() store.Call {
	code := 3
	return store.Call{
		OutputID: "out-1", Tool: "loom_search", Status: "ok", Code: "", HostCode: "h",
		Admitted: 2, Withheld: 1, Omitted: 4, Truncated: true,
		Observed:  ifc.Confidentiality{[]byte(`["a"]`), []byte(`["b","c"]`)},
		ExitCode:  &code,
		Duration:  1500 * time.Millisecond,
		StartedAt: time.Date(2026, 12, 7, 18, 0, 0, 123456789, time.UTC),
		Entries: []store.CallEntry{
			{Status: "admitted", LabelSource: "row", Label: ifc.Disclosed{Confidentiality: [][]string{{"x"}, {}}, Integrity: []string{}}, Handle: "cfh:v:AAAAA"},
			{Status: "withheld", ReasonCode: "cfc_ceiling_exceeded", Label: ifc.Disclosed{Confidentiality: nil, Integrity: nil}},
			{Status: "admitted", LabelSource: "envelope", Label: ifc.Disclosed{Confidentiality: [][]string{{"y", "z"}}}, Handle: "cfh:v:BBBBB", Truncated: true},
		},
		TraceID: "0af7651916cd43dd8448eb211c80319c",
		Failure: &store.Failure{Reason: "exit_nonzero", Detail: "d", StderrTail: "t", Argv: []string{"loom", "search"}},
	}
}

func TestCallRoundTrip(t *testing.T) {
	for _, c := range []store.Call{sampleCall(), {OutputID: "bare"}, {Entries: []store.CallEntry{}}} {
		got, err := DecodeCall(EncodeCall(c))
		if err != nil {
			t.Fatal(err)
		}
		if !got.StartedAt.Equal(c.StartedAt) {
			t.Errorf("StartedAt %v, want %v", got.StartedAt, c.StartedAt)
		}
		got.StartedAt = c.StartedAt
		if !reflect.DeepEqual(got, c) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, c)
		}
	}
}

// TestCallSlots holds the memory store's record to EncodeCall's: the
// admitted entries' suffixes written into the slots give the record of
// the call with those handles, byte for byte; the Redis store's cut
// record is the same less the suffixes.
func TestCallSlots(t *testing.T) {
	c := sampleCall()
	for i := range c.Entries {
		c.Entries[i].Handle = "" // what the core hands the store
	}
	rec, slots := AppendCallSlots([]byte("before"), c)
	if string(rec[:6]) != "before" {
		t.Fatalf("AppendCallSlots wrote over dst: %q", rec[:6])
	}
	rec = rec[6:]
	cut, cuts := EncodeCallCut(c)
	if len(slots) != 2 || len(cuts) != 2 {
		t.Fatalf("slots %v, cuts %v: want one per admitted entry", slots, cuts)
	}
	tokens := []string{store.ValueTokenPrefix + "QWERT", store.ValueTokenPrefix + "ZXCVB"}
	spliced := []byte{}
	prev := 0
	for i, tok := range tokens {
		copy(rec[slots[i]:slots[i]+store.TokenWidth], tok[len(tok)-store.TokenWidth:])
		spliced = append(append(spliced, cut[prev:cuts[i]]...), tok[len(tok)-store.TokenWidth:]...)
		prev = cuts[i]
	}
	spliced = append(spliced, cut[prev:]...)
	h := 0
	for i := range c.Entries {
		if c.Entries[i].Status == "admitted" {
			c.Entries[i].Handle = tokens[h]
			h++
		}
	}
	want := EncodeCall(c)
	if string(rec) != string(want) {
		t.Errorf("slots filled:\n got %q\nwant %q", rec, want)
	}
	if string(spliced) != string(want) {
		t.Errorf("cut record spliced:\n got %q\nwant %q", spliced, want)
	}
}

// TestCorrupt: every proper prefix of a record, and the record with a
// byte more, is refused with ErrCorrupt, never misread and never a panic,
// but for the two prefixes that end where an older record ended: before
// the trace id, and before the failure.
func TestCorrupt(t *testing.T) {
	full := sampleCall()
	rec := EncodeCall(full)
	older := []store.Call{full, full}
	older[0].TraceID, older[0].Failure = "", nil
	older[1].Failure = nil
	read := 0
	for n := range len(rec) {
		c, err := DecodeCall(rec[:n])
		if err == nil && read < len(older) && reflect.DeepEqual(c, older[read]) {
			read++
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeCall(first %d of %d bytes) = %#v, %v; want ErrCorrupt", n, len(rec), c, err)
		}
	}
	if read != len(older) {
		t.Errorf("%d prefixes read as an older record, want %d", read, len(older))
	}
	if _, err := DecodeCall(append(rec, 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeCall(a byte more) = %v, want ErrCorrupt", err)
	}
}

func FuzzDecodeCall(f *testing.F) {
	f.Add(EncodeCall(sampleCall()))
	f.Add([]byte{codecVersion})
	f.Fuzz(func(t *testing.T, rec []byte) {
		c, err := DecodeCall(rec)
		if err != nil {
			return
		}
		// What decodes encodes back to a record that decodes to the same.
		again, err := DecodeCall(EncodeCall(c))
		if err != nil {
			t.Fatalf("re-encoded record: %v", err)
		}
		if !again.StartedAt.Equal(c.StartedAt) {
			t.Fatalf("StartedAt %v, then %v", c.StartedAt, again.StartedAt)
		}
		again.StartedAt = c.StartedAt
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("decode, encode, decode:\n got %#v\nwant %#v", again, c)
		}
	})
}
