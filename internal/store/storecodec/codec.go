// Package storecodec is the binary form of the store's records: calls,
// referents, results and label lists. The Redis store keeps every record
// of a run in it; the memory store keeps each run's call log in it, so
// that the log is bytes without pointers, which the garbage collector
// does not walk (BENCHMARKS.md, section 11), and a fraction of the size
// of the records it holds.
package storecodec

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Records are compact and binary, not JSON: row values, clauses and atoms
// are stored byte for byte as the gateway produced them (a JSON round trip
// may re-escape or re-space them), and a record is a fraction of the size.
//
// A record is a version byte followed by fields. A string or byte field is a
// uvarint length and the bytes; an integer is a varint; a bool is one byte;
// a time is a length-prefixed time.MarshalBinary; a list is a uvarint n+1
// (0 for nil) and n elements, so nil and empty lists stay apart where the
// contract tells them apart (Run.Tools).

// codecVersion starts every record; a record of another version is refused
// (ErrCorrupt) rather than misread.
const codecVersion = 1

// ErrCorrupt reports a stored record that does not decode.
var ErrCorrupt = errors.New("store: corrupt record")

type encoder struct{ b []byte }

func newEncoder() *encoder { return &encoder{b: []byte{codecVersion}} }

func (e *encoder) uvarint(u uint64) { e.b = binary.AppendUvarint(e.b, u) }
func (e *encoder) varint(i int64)   { e.b = binary.AppendVarint(e.b, i) }
func (e *encoder) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) time(t time.Time) {
	p, err := t.MarshalBinary()
	if err != nil { // a zone offset that is not whole minutes: keep the instant
		p, _ = t.UTC().MarshalBinary()
	}
	e.bytes(p)
}

// listLen writes the length of a list, 0 for nil.
func (e *encoder) listLen(n int, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(n) + 1)
}

func (e *encoder) conf(c ifc.Confidentiality) {
	e.listLen(len(c), c == nil)
	for _, x := range c {
		e.bytes(x)
	}
}

func (e *encoder) atoms(as []ifc.Atom) {
	e.listLen(len(as), as == nil)
	for _, a := range as {
		e.bytes(a)
	}
}

func (e *encoder) strs(ss []string) {
	e.listLen(len(ss), ss == nil)
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) label(l ifc.Label) {
	e.conf(l.Confidentiality)
	e.atoms(l.Integrity)
}

// decoder reads a record. Byte fields alias the record, each capped so that
// an append by a caller cannot reach the next field: a caller decodes a
// record of its own (the Redis store's is a fresh copy of the reply, the
// memory store copies the one it keeps), so nothing aliases the store or
// another caller.
// The first malformed field sets err; later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func newDecoder(rec []byte) *decoder {
	d := &decoder{b: rec}
	if len(rec) == 0 || rec[0] != codecVersion {
		d.err = ErrCorrupt
		return d
	}
	d.b = rec[1:]
	return d
}

func (d *decoder) fail() { d.err, d.b = ErrCorrupt, nil }

func (d *decoder) uvarint() uint64 { return number(d, binary.Uvarint) }
func (d *decoder) varint() int64   { return number(d, binary.Varint) }

// number reads one varint with read (binary.Uvarint or binary.Varint).
func number[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int { return int(d.varint()) }

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

func (d *decoder) time() time.Time {
	var t time.Time
	if p := d.bytes(); d.err == nil {
		if err := t.UnmarshalBinary(p); err != nil {
			d.fail()
		}
	}
	return t
}

// listLen returns a list's length and whether it is nil. A length larger
// than the bytes left (each element takes at least one) is corrupt, so a
// bad record cannot make a huge allocation.
func (d *decoder) listLen() (int, bool) {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return 0, true
	}
	if n-1 > uint64(len(d.b)) {
		d.fail()
		return 0, true
	}
	return int(n - 1), false
}

func (d *decoder) conf() ifc.Confidentiality {
	n, isNil := d.listLen()
	if isNil {
		return nil
	}
	c := make(ifc.Confidentiality, n)
	for i := range c {
		c[i] = d.bytes()
	}
	return c
}

func (d *decoder) atoms() []ifc.Atom {
	n, isNil := d.listLen()
	if isNil {
		return nil
	}
	as := make([]ifc.Atom, n)
	for i := range as {
		as[i] = d.bytes()
	}
	return as
}

func (d *decoder) strs() []string {
	n, isNil := d.listLen()
	if isNil {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.str()
	}
	return ss
}

func (d *decoder) label() ifc.Label {
	return ifc.Label{Confidentiality: d.conf(), Integrity: d.atoms()}
}

// done returns the decoding error, or ErrCorrupt if bytes are left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return d.err
}

// Records.

// EncodeConf encodes a confidentiality (a run's label, a ceiling).
func EncodeConf(c ifc.Confidentiality) []byte { return one(func(e *encoder) { e.conf(c) }) }

// DecodeConf decodes EncodeConf's record; its clauses alias rec.
func DecodeConf(rec []byte) (ifc.Confidentiality, error) { return readOne(rec, (*decoder).conf) }

// EncodeStrs encodes a list of strings (nil and empty apart).
func EncodeStrs(ss []string) []byte { return one(func(e *encoder) { e.strs(ss) }) }

// DecodeStrs decodes EncodeStrs's record.
func DecodeStrs(rec []byte) ([]string, error) { return readOne(rec, (*decoder).strs) }

// EncodeTime encodes an instant.
func EncodeTime(t time.Time) []byte { return one(func(e *encoder) { e.time(t) }) }

// DecodeTime decodes EncodeTime's record.
func DecodeTime(rec []byte) (time.Time, error) { return readOne(rec, (*decoder).time) }

// one is the record of the one field write writes.
func one(write func(*encoder)) []byte {
	e := newEncoder()
	write(e)
	return e.b
}

// readOne reads the record of one field with read.
func readOne[T any](rec []byte, read func(*decoder) T) (T, error) {
	d := newDecoder(rec)
	v := read(d)
	return v, d.done()
}

// EncodeReferent writes a referent without its token (the token is the
// hash field that holds the record).
func EncodeReferent(r store.Referent) []byte { return AppendReferent(nil, r) }

// AppendReferent appends EncodeReferent(r) to b.
func AppendReferent(b []byte, r store.Referent) []byte {
	e := encoder{b: append(b, codecVersion)}
	e.str(r.Kind)
	e.str(r.Source)
	e.bytes(r.Value)
	e.label(r.Label)
	e.str(r.LabelSource)
	return e.b
}

// DecodeReferent decodes EncodeReferent's record as the referent of
// token; its byte fields alias rec.
func DecodeReferent(rec []byte, token string) (store.Referent, error) {
	d := newDecoder(rec)
	r := store.Referent{Token: token}
	r.Kind = d.str()
	r.Source = d.str()
	r.Value = d.bytes()
	r.Label = d.label()
	r.LabelSource = d.str()
	return r, d.done()
}

// EncodeCall encodes a call record.
func EncodeCall(c store.Call) []byte { return AppendCall(nil, c) }

// AppendCall appends EncodeCall(c) to dst.
func AppendCall(dst []byte, c store.Call) []byte {
	rec, _ := encodeCall(dst, c, tokensWhole)
	return rec
}

// EncodeCallCut is EncodeCall less the token suffix of each admitted
// entry: it returns the record without them and, for each admitted entry
// in order, the bytes of the record before its suffix goes in (each Handle
// a token of store.TokenWidth characters, whatever the entry held). The
// Redis store splices the suffixes in once its script has minted them.
func EncodeCallCut(c store.Call) ([]byte, []int) { return encodeCall(nil, c, tokensCut) }

// AppendCallSlots is EncodeCall with room for the token suffix of each
// admitted entry: it returns the record and, for each admitted entry in
// order, the offset of its suffix's store.TokenWidth bytes, which the
// caller writes once the tokens are minted (each Handle a value token,
// whatever the entry held). The record is appended to dst.
func AppendCallSlots(dst []byte, c store.Call) ([]byte, []int) {
	return encodeCall(dst, c, tokensSlot)
}

// How encodeCall writes the Handle of an admitted entry.
type tokenMode int

const (
	tokensWhole tokenMode = iota // as the entry holds it
	tokensCut                    // the value prefix; the suffix left out
	tokensSlot                   // the value prefix and room for the suffix
)

// encodeCall appends c's record to dst (nil: a buffer of its own) and
// returns the offsets mode asks for, from the record's start.
func encodeCall(dst []byte, c store.Call, mode tokenMode) ([]byte, []int) {
	var cuts []int
	if mode != tokensWhole {
		cuts = make([]int, 0, len(c.Entries))
	}
	if dst == nil {
		dst = make([]byte, 0, 256+64*len(c.Entries))
	}
	start := len(dst)
	e := encoder{b: append(dst, codecVersion)}
	e.str(c.OutputID)
	e.str(c.Tool)
	e.str(c.Status)
	e.str(c.Code)
	e.str(c.HostCode)
	e.varint(int64(c.Admitted))
	e.varint(int64(c.Withheld))
	e.varint(int64(c.Omitted))
	e.bool(c.Truncated)
	e.conf(c.Observed)
	e.bool(c.ExitCode != nil)
	if c.ExitCode != nil {
		e.varint(int64(*c.ExitCode))
	}
	e.varint(int64(c.Duration))
	e.time(c.StartedAt)
	e.listLen(len(c.Entries), c.Entries == nil)
	for _, x := range c.Entries {
		e.str(x.Status)
		e.str(x.ReasonCode)
		e.str(x.LabelSource)
		e.listLen(len(x.Label.Confidentiality), x.Label.Confidentiality == nil)
		for _, alts := range x.Label.Confidentiality {
			e.strs(alts)
		}
		e.strs(x.Label.Integrity)
		if mode != tokensWhole && x.Status == "admitted" {
			e.uvarint(uint64(len(store.ValueTokenPrefix) + store.TokenWidth))
			e.b = append(e.b, store.ValueTokenPrefix...)
			cuts = append(cuts, len(e.b)-start)
			if mode == tokensSlot {
				e.b = append(e.b, make([]byte, store.TokenWidth)...)
			}
		} else {
			e.str(x.Handle)
		}
		e.bool(x.Truncated)
	}
	if c.TraceID != "" || c.Failure != nil { // a record without it reads as before
		e.str(c.TraceID)
	}
	if f := c.Failure; f != nil { // after the trace id, which it needs
		e.str(f.Reason)
		e.str(f.Detail)
		e.str(f.StderrTail)
		e.strs(f.Argv)
	}
	return e.b, cuts
}

// DecodeCall decodes a call record; its byte fields alias rec.
func DecodeCall(rec []byte) (store.Call, error) {
	d := newDecoder(rec)
	var c store.Call
	c.OutputID = d.str()
	c.Tool = d.str()
	c.Status = d.str()
	c.Code = d.str()
	c.HostCode = d.str()
	c.Admitted = d.int()
	c.Withheld = d.int()
	c.Omitted = d.int()
	c.Truncated = d.bool()
	c.Observed = d.conf()
	if d.bool() {
		code := d.int()
		c.ExitCode = &code
	}
	c.Duration = time.Duration(d.varint())
	c.StartedAt = d.time()
	if n, isNil := d.listLen(); !isNil {
		c.Entries = make([]store.CallEntry, n)
		for i := range c.Entries {
			x := &c.Entries[i]
			x.Status = d.str()
			x.ReasonCode = d.str()
			x.LabelSource = d.str()
			if m, isNil := d.listLen(); !isNil {
				x.Label.Confidentiality = make([][]string, m)
				for j := range x.Label.Confidentiality {
					x.Label.Confidentiality[j] = d.strs()
				}
			}
			x.Label.Integrity = d.strs()
			x.Handle = d.str()
			x.Truncated = d.bool()
		}
	}
	if d.err == nil && len(d.b) > 0 {
		c.TraceID = d.str()
	}
	if d.err == nil && len(d.b) > 0 {
		c.Failure = &store.Failure{Reason: d.str(), Detail: d.str(), StderrTail: d.str(), Argv: d.strs()}
	}
	return c, d.done()
}

// EncodeResult encodes a run's result.
func EncodeResult(r store.Result) []byte {
	e := newEncoder()
	e.bytes(r.Value)
	e.listLen(len(r.Documents), r.Documents == nil)
	for _, doc := range r.Documents {
		e.str(doc.ID)
		e.str(doc.Source)
		e.bytes(doc.Value)
		e.label(doc.Label)
	}
	e.label(r.Receipt)
	e.label(r.Label)
	e.time(r.WrittenAt)
	return e.b
}

// DecodeResult decodes EncodeResult's record; its byte fields alias rec.
func DecodeResult(rec []byte) (store.Result, error) {
	d := newDecoder(rec)
	var r store.Result
	r.Value = d.bytes()
	if n, isNil := d.listLen(); !isNil {
		r.Documents = make([]store.Document, n)
		for i := range r.Documents {
			doc := &r.Documents[i]
			doc.ID = d.str()
			doc.Source = d.str()
			doc.Value = d.bytes()
			doc.Label = d.label()
		}
	}
	r.Receipt = d.label()
	r.Label = d.label()
	r.WrittenAt = d.time()
	return r, d.done()
}
