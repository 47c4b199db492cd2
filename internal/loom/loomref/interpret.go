package loomref

import (
	"bytes"
	"time"
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

// Output is what a command that ran to an exit left, its stdout whole:
// the plain reading the tests hold loom.Condense to reads it, and the
// fakes of package loomtest answer with it. The gateway never holds
// stdout whole (loom.Output is what Condense learned of it).
type Output struct {
	Stdout   []byte
	ExitCode int
	Duration time.Duration
	// Stderr is what the command wrote to stderr. Interpret never reads
	// it; the test fakes (package loomtest) pass it on as the runner's
	// tail of it (loom.Output.Stderr).
	Stderr []byte
}

// Interpret reads a finished command's Output as SEMANTICS (b) steps 2 to 5
// do, in that order, and returns the payload: stdout decoded as UTF-8
// (invalid sequences replaced, one leading BOM dropped) and trimmed of JSON
// whitespace, exactly one JSON value. personLookup is
// the call's loom.Invocation.PersonLookup. It reads stdout whole, then decides with
// loom.Decide over loom.ReadFacts of the payload.
//
// Where a member name repeats, the last occurrence is the one read, as in
// JavaScript. loom.ErrNotJSON and *loom.ExitError match
// loom.ErrCommandFailed.
func Interpret(tool loom.Tool, personLookup bool, out Output) ([]byte, error) {
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
// ill-formed sequence becomes one U+FFFD. It is the reference's own
// decoder, the Encoding Standard's algorithm step by step (bytes needed,
// bytes seen, the lower and upper boundary, a byte that does not fit
// read again), written apart from the table of maximal subparts Condense
// decodes each piece of stdout with.
func DecodeUTF8(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	out := make([]byte, 0, len(b))
	var needed, seen int
	var cp rune
	lower, upper := byte(0x80), byte(0xBF)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if needed == 0 {
			switch {
			case c <= 0x7F:
				out = append(out, c)
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				}
				if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0xF)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				}
				if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x7)
			default:
				out = utf8.AppendRune(out, utf8.RuneError)
			}
			continue
		}
		if c < lower || c > upper {
			needed, seen, cp = 0, 0, 0
			lower, upper = 0x80, 0xBF
			out = utf8.AppendRune(out, utf8.RuneError)
			i-- // the byte is read again
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		if seen++; seen != needed {
			continue
		}
		out = utf8.AppendRune(out, cp)
		needed, seen, cp = 0, 0, 0
	}
	if needed != 0 {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return out
}
