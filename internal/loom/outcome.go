package loom

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Facts are what Decide reads of a payload: whether it is an object, and
// the last value of each of its members ok, code, hasProfile and
// schemaVersion (nil when absent).
type Facts struct {
	Object                              bool
	OK, Code, HasProfile, SchemaVersion jsontext.Value
}

// set sets the fact of index i in factNames to v; i < 0 sets nothing.
func (f *Facts) set(i int, v jsontext.Value) {
	switch i {
	case 0:
		f.OK = v
	case 1:
		f.Code = v
	case 2:
		f.HasProfile = v
	case 3:
		f.SchemaVersion = v
	}
}

// ReadFacts reads the facts of payload, which is whole and trimmed of
// JSON whitespace, in one validating pass over its bytes, which it does not
// copy, and reports whether it is one JSON value.
func ReadFacts(payload []byte) (Facts, bool) {
	if len(payload) == 0 || payload[0] != '{' {
		return Facts{}, len(payload) > 0 && jsjson.Valid(payload)
	}
	f := Facts{Object: true}
	_, err := jsjson.Walk(payload, '{', func(name []byte, v jsontext.Value) {
		f.set(factIndex(string(jsjson.MemberName(name))), v)
	})
	return f, err == nil
}

// Outcome is what a call's exit code and the facts of its stdout decide:
// nil when the call answers its payload (what kept holds, for the
// measurement to read), else the error the call answers. ended, when not
// nil, is why the call's stage ended before its output could be measured
// (its deadline passed, or the call was cancelled). The first that holds
// answers:
//
//  1. kept.Refused: ErrMalformedPayload (one JSON value past what the
//     reading holds of a piece of it, which is read no further);
//  2. Decide's error, over the invocation's person lookup, the exit code
//     and kept's facts;
//  3. ended;
//  4. a payload of another shape than its tool's: ErrMalformedPayload.
//
// Each answer is one return below: a reason for the host (which rule,
// which exit) can wrap the error there without changing what it is
// (errors.Is and errors.As read through a wrap, and the gateway classifies
// with them).
func Outcome(inv Invocation, exit int, kept *Condensed, ended error) error {
	if kept.Refused {
		return ErrMalformedPayload
	}
	if err := Decide(inv.Tool, inv.PersonLookup, kept.Payload != nil, exit, kept.Facts); err != nil {
		return err
	}
	if ended != nil {
		return ended
	}
	if !kept.Shaped {
		return ErrMalformedPayload
	}
	return nil
}

// Decide is SEMANTICS (b) steps 2 to 5 over what a reading of stdout
// learned: whether it is one JSON value (valid), the exit code, and the
// payload's facts.
//
//  2. stdout that is not one JSON document (empty, NDJSON, trailing
//     garbage, half a document): ErrNotFound for a person lookup that
//     exited 1, ErrContested for one that exited 3, else ErrNotJSON.
//  3. an object whose ok member is exactly false: *HostRefusedError,
//     whatever the exit code.
//  4. exit code not 0: *ExitError, except Profile exiting 1 with an object
//     whose hasProfile is exactly false (loom's fallback tier).
//  5. Search only: an own schemaVersion that is not the number 1:
//     ErrSchemaVersion (absent reads as 1).
func Decide(tool Tool, personLookup, valid bool, exit int, f Facts) error {
	if !valid {
		switch {
		case personLookup && exit == 1:
			return ErrNotFound
		case personLookup && exit == 3:
			return ErrContested
		}
		return ErrNotJSON
	}
	if f.Object && f.OK.Kind() == 'f' {
		e := &HostRefusedError{}
		if c, ok := hostCode(f.Code); ok {
			e.HostCode, e.HasHostCode = c, true
		}
		return e
	}
	if exit != 0 {
		fallback := tool == Profile && exit == 1 && f.Object && f.HasProfile.Kind() == 'f'
		if !fallback {
			return &ExitError{Code: exit}
		}
	}
	if tool == Search && f.SchemaVersion != nil && !isNumberOne(f.SchemaVersion) {
		return ErrSchemaVersion
	}
	return nil
}

// MaxHostCode is the longest host code the gateway passes on.
const MaxHostCode = 64

// hostCode returns loom's code member as the host code of a
// host_refused answer when it is a short code: a JSON string of 1 to
// MaxHostCode characters, each a letter, digit or one of "_.:-". Anything
// else (another type, an empty, long or free-text string) is dropped: no
// host text reaches a problem, the call log or a log line. A string too
// long to be such a code even fully escaped is dropped unread.
func hostCode(v jsontext.Value) (string, bool) {
	if v.Kind() != '"' || len(v) > 6*MaxHostCode+2 {
		return "", false
	}
	c, err := jsjson.UnquoteValue(v)
	if err != nil || c == "" || len(c) > MaxHostCode {
		return "", false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == ':' || b == '-') {
			return "", false
		}
	}
	return c, true
}

// isNumberOne reports whether v is a JSON number equal to 1 as a float64
// (1, 1.0, 1e0, 0.1e1 are; "1", true, null, 2 are not).
func isNumberOne(v jsontext.Value) bool {
	if v.Kind() != '0' {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && f == 1
}
