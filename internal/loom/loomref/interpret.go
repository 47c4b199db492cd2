package loomref

import (
	"bytes"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/loom"
)

// payloadOptions are the JSON rules stdout is read with: JavaScript's
// JSON.parse accepts duplicate names (the last wins) and escaped lone
// surrogates, so a payload with either is still one JSON document.
var payloadOptions = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
}

// Interpret reads a finished command's Output as SEMANTICS (b) steps 2 to 5
// do, in that order, and returns the payload: stdout decoded as UTF-8
// (invalid sequences replaced, one leading BOM dropped) and trimmed of JSON
// whitespace, exactly one JSON value. personLookup is
// loom.PersonLookup(tool, input). It reads stdout whole, then decides with
// loom.Decide over loom.ReadFacts of the payload.
//
// Where a member name repeats, the last occurrence is the one read, as in
// JavaScript. loom.ErrNotJSON and *loom.ExitError match
// loom.ErrCommandFailed.
func Interpret(tool loom.Tool, personLookup bool, out loom.Output) ([]byte, error) {
	payload := bytes.Trim(DecodeUTF8(out.Stdout), " \t\r\n")
	f, valid := loom.ReadFacts(payload)
	if err := loom.Decide(tool, personLookup, valid, out.ExitCode, f); err != nil {
		return nil, err
	}
	return payload, nil
}

// DecodeUTF8 decodes b as the WHATWG UTF-8 decoder does with its default
// settings (what TextDecoder and Node's Buffer#toString produce): one
// leading byte order mark is dropped, and every maximal subpart of an
// ill-formed sequence becomes one U+FFFD. Valid input without a BOM is
// returned as is. It is the reference's own decoder, written apart from
// the one Condense decodes each piece of stdout with.
func DecodeUTF8(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return out
}

// maximalSubpart returns the length of the maximal subpart of the
// ill-formed sequence at the start of b (Unicode 3.9, table 3-7): the lead
// byte plus the continuation bytes that are still valid for it. It is at
// least 1.
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	var need int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
