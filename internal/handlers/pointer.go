package handlers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/loom"
)

// A problem's pointer is built from member names the agent chose, so it is
// bounded: a name longer than maxPointerName bytes, or a segment that would
// take the pointer past maxPointerBytes, ends it there, and the pointer
// names the nearest enclosing value that fits ("" and so no pointer at all:
// the body as a whole). No problem is large because of what was sent.
const (
	maxPointerName  = 128
	maxPointerBytes = 512
)

// RFC 6901 escaping of a pointer segment.
var (
	escapeSegment   = strings.NewReplacer("~", "~0", "/", "~1")
	unescapeSegment = strings.NewReplacer("~1", "/", "~0", "~")
)

// jsonPointer writes path as an RFC 6901 pointer within the bounds above.
func jsonPointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		if len(seg) > maxPointerName {
			break
		}
		esc := escapeSegment.Replace(seg)
		if b.Len()+1+len(esc) > maxPointerBytes {
			break
		}
		b.WriteByte('/')
		b.WriteString(esc)
	}
	return b.String()
}

// boundPointer applies the bounds to a pointer already written: p is an
// RFC 6901 pointer, or a parameter name (no leading '/'), which is kept
// only when it is a name that fits.
func boundPointer(p string) string {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		if len(p) > maxPointerName {
			return ""
		}
		return p
	}
	if len(p) <= maxPointerName { // the common case: nothing to cut
		return p
	}
	path := strings.Split(rest, "/")
	for i, seg := range path {
		path[i] = unescapeSegment.Replace(seg)
	}
	return jsonPointer(path)
}

// bodyKey holds, in a request's context, the body kin-openapi validates.
type bodyKey struct{}

// withBody keeps a copy of a POST body (jsonBodies has read it into
// memory) in the request's context, for validationError: kin-openapi's
// errors hold objects as Go maps, whose key order is gone.
func withBody(r *http.Request) *http.Request {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return r
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
}

// unknownKeyPointer finds the object whose unknown keys come first for a
// refusal at path (kin-openapi's pointer of the refused value): on the way
// from the body's root down to the refused value, the first object that
// holds a key its schema does not declare (additionalProperties: false),
// and returns the pointer of that object's first such key in JavaScript's
// Object.keys order, the order of the argument builder (loom.ObjectKeys).
// So an object's unknown keys come before any other violation inside it,
// as SEMANTICS (c) orders the builder's checks, whatever kin-openapi met
// first. Where the schemas along the path cannot be followed (through
// anyOf, say), refused, the schema kin-openapi refused the value under,
// is asked about the value at path itself.
func unknownKeyPointer(body []byte, root, refused *openapi3.Schema, path []string) (string, bool) {
	v, s := jsontext.Value(body), root
	for i := 0; ; i++ {
		if k, ok := unknownKeyOf(v, s); ok {
			return jsonPointer(append(path[:i:i], k)), true
		}
		if i == len(path) || v == nil {
			break
		}
		v, s = childValue(v, path[i]), childSchema(s, path[i])
	}
	if k, ok := unknownKeyOf(v, refused); ok {
		return jsonPointer(append(path[:len(path):len(path)], k)), true
	}
	return "", false
}

// unknownKeyOf returns the first key of the JSON object v, in
// Object.keys order, that s does not declare when s refuses undeclared
// keys.
func unknownKeyOf(v jsontext.Value, s *openapi3.Schema) (string, bool) {
	if s == nil || v.Kind() != '{' || s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
		return "", false
	}
	keys, err := loom.ObjectKeys(v)
	if err != nil {
		return "", false
	}
	for _, k := range keys {
		if _, declared := s.Properties[k]; !declared {
			return k, true
		}
	}
	return "", false
}

// childSchema is the schema of member or element seg of a value of s, nil
// when s does not say it plainly.
func childSchema(s *openapi3.Schema, seg string) *openapi3.Schema {
	if s == nil || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || len(s.AllOf) > 0 || s.Not != nil {
		return nil
	}
	if p := s.Properties[seg]; p != nil {
		return p.Value
	}
	if s.Items != nil {
		return s.Items.Value
	}
	return nil
}

// childValue returns member seg of the JSON object v, or element seg of
// the array v; nil when there is none.
func childValue(v jsontext.Value, seg string) jsontext.Value {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil
	}
	switch tok.Kind() {
	case '{':
		for dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil
			}
			name := tok.String() // before the next read voids tok
			val, err := dec.ReadValue()
			if err != nil {
				return nil
			}
			if name == seg {
				return val.Clone()
			}
		}
	case '[':
		n, err := strconv.Atoi(seg)
		if err != nil || n < 0 {
			return nil
		}
		for i := 0; dec.PeekKind() != ']'; i++ {
			val, err := dec.ReadValue()
			if err != nil {
				return nil
			}
			if i == n {
				return val.Clone()
			}
		}
	}
	return nil
}

// bodySchema is the JSON body schema of the operation re was refused by.
func bodySchema(re *openapi3filter.RequestError) *openapi3.Schema {
	if re.RequestBody == nil {
		return nil
	}
	mt := re.RequestBody.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}
