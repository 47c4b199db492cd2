package loom

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
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
		_, err := walk(payload, '{', func(name []byte, v jsontext.Value) {
			switch string(memberName(name)) {
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
		valid = len(payload) > 0 && validPayload(payload)
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
		if code.Kind() == '"' {
			if s, err := unquote(code); err == nil {
				e.HostCode, e.HasHostCode = s, true
			}
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

// isNumberOne reports whether v is a JSON number equal to 1 as a float64
// (1, 1.0, 1e0, 0.1e1 are; "1", true, null, 2 are not).
func isNumberOne(v jsontext.Value) bool {
	if v.Kind() != '0' {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && f == 1
}
