package loom

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
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
// whitespace, exactly one JSON value. personLookup is PersonLookup(tool,
// input).
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
//
// Where a member name repeats, the last occurrence is the one read, as in
// JavaScript. ErrNotJSON and *ExitError match ErrCommandFailed.
func Interpret(tool Tool, personLookup bool, out Output) ([]byte, error) {
	payload := bytes.Trim(decodeUTF8(out.Stdout), " \t\r\n")
	isObject := len(payload) > 0 && payload[0] == '{'
	var ok, code, hasProfile, schemaVersion jsontext.Value
	hasSchemaVersion := false
	var valid bool
	if isObject {
		// One validating pass over the payload's bytes, which it does not
		// copy; the last of repeated names wins, as in JavaScript.
		_, err := jsjson.Walk(payload, '{', func(name []byte, v jsontext.Value) {
			switch string(jsjson.MemberName(name)) {
			case "ok":
				ok = v
			case "code":
				code = v
			case "hasProfile":
				hasProfile = v
			case "schemaVersion":
				schemaVersion, hasSchemaVersion = v, true
			}
		})
		valid = err == nil
	} else {
		valid = len(payload) > 0 && jsjson.Valid(payload)
	}
	if !valid {
		switch {
		case personLookup && out.ExitCode == 1:
			return nil, ErrNotFound
		case personLookup && out.ExitCode == 3:
			return nil, ErrContested
		}
		return nil, ErrNotJSON
	}

	if isObject && ok.Kind() == 'f' {
		e := &HostRefusedError{}
		if c, ok := hostCode(code); ok {
			e.HostCode, e.HasHostCode = c, true
		}
		return nil, e
	}
	if out.ExitCode != 0 {
		fallback := tool == Profile && out.ExitCode == 1 && isObject && hasProfile.Kind() == 'f'
		if !fallback {
			return nil, &ExitError{Code: out.ExitCode}
		}
	}
	if tool == Search && hasSchemaVersion && !isNumberOne(schemaVersion) {
		return nil, ErrSchemaVersion
	}
	return payload, nil
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
