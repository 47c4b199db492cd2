package handlers

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"unicode/utf16"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/go-json-experiment/json/jsontext"
)

// The validator's shortcut. Contract validation (kin-openapi) is cheap on
// a warm CPU but walks a great deal of code, and a tool call runs it cold,
// right after a loom process has had the cores. So for each operation whose
// parameters and body schema use only the small subset below (every agent
// tool call does), the validator first asks a check compiled from the same
// contract; a request it accepts goes on at once, and anything else (a
// refusal, an operation outside the subset, a query string, an escaped
// path) goes through kin-openapi exactly as before, so every problem is
// still kin-openapi's own. The check may refuse more than kin-openapi does,
// never less: TestFastValidatorSound and FuzzFastValidatorSound hold it to
// that.
//
// The subset: a POST with a required application/json body and only path
// parameters; schemas of type object (properties, required, and
// additionalProperties false), string (minLength, maxLength, pattern,
// string enum), integer (minimum, maximum, format int64), boolean, or a
// schema with no constraint at all. Titles, descriptions, examples,
// defaults (never applied: the validated body is discarded) and extensions
// are ignored. Any other keyword keeps the operation on kin-openapi.

// fastOp is the compiled check of one operation.
type fastOp struct {
	params []fastParam
	body   *fastSchema
}

type fastParam struct {
	name   string
	schema *fastSchema // a string schema
}

// fastSchema is a schema of the subset.
type fastSchema struct {
	kind     byte // 'o' object, 's' string, 'i' integer, 'b' boolean, '*' anything
	props    map[string]*fastSchema
	required []string
	minLen   uint64
	maxLen   *uint64
	pattern  *regexp.Regexp
	enum     []string
	min, max *float64
}

// fastOps compiles the operations of spec that fit the subset, by route
// pattern (chi's, which is the contract's path template).
func fastOps(spec *openapi3.T) map[string]*fastOp {
	ops := map[string]*fastOp{}
	for path, item := range spec.Paths.Map() {
		op := item.Post
		if op == nil {
			continue
		}
		if f, ok := compileOp(item, op); ok {
			ops[path] = f
		}
	}
	return ops
}

func compileOp(item *openapi3.PathItem, op *openapi3.Operation) (*fastOp, bool) {
	f := &fastOp{}
	params := append(openapi3.Parameters{}, item.Parameters...)
	params = append(params, op.Parameters...)
	for _, p := range params {
		if p.Value == nil || p.Value.In != openapi3.ParameterInPath || !p.Value.Required ||
			p.Value.Content != nil || p.Value.Schema == nil || p.Value.Style != "" || p.Value.Explode != nil {
			return nil, false
		}
		s, ok := compileSchema(p.Value.Schema.Value, 0)
		if !ok || s.kind != 's' {
			return nil, false
		}
		f.params = append(f.params, fastParam{name: p.Value.Name, schema: s})
	}
	rb := op.RequestBody
	if rb == nil || rb.Value == nil || !rb.Value.Required || len(rb.Value.Content) != 1 {
		return nil, false
	}
	mt := rb.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || len(mt.Encoding) != 0 {
		return nil, false
	}
	body, ok := compileSchema(mt.Schema.Value, 0)
	if !ok {
		return nil, false
	}
	f.body = body
	return f, true
}

// compileSchema compiles s when it is of the subset.
func compileSchema(s *openapi3.Schema, depth int) (*fastSchema, bool) {
	if s == nil || depth > 8 {
		return nil, false
	}
	// Everything but the keywords handled here, and the ones that cannot
	// change a verdict, must be unset.
	rest := *s
	rest.Type, rest.Format, rest.Enum, rest.Min, rest.Max = nil, "", nil, nil, nil
	rest.MinLength, rest.MaxLength, rest.Pattern = 0, nil, ""
	rest.Required, rest.Properties, rest.AdditionalProperties = nil, nil, openapi3.AdditionalProperties{}
	rest.Title, rest.Description, rest.Example, rest.Default = "", "", nil, nil
	rest.Extensions, rest.Origin = nil, nil
	if !reflect.DeepEqual(rest, openapi3.Schema{}) {
		return nil, false
	}
	var types []string
	if s.Type != nil {
		types = s.Type.Slice()
	}
	f := &fastSchema{}
	switch {
	case len(types) == 0:
		if s.Format != "" || s.Enum != nil || s.Min != nil || s.Max != nil || s.MinLength != 0 || s.MaxLength != nil ||
			s.Pattern != "" || s.Required != nil || s.Properties != nil || s.AdditionalProperties.Has != nil || s.AdditionalProperties.Schema != nil {
			return nil, false
		}
		f.kind = '*'
		return f, true
	case len(types) > 1:
		return nil, false
	}
	kind := types[0]
	if kind != openapi3.TypeObject && (s.Required != nil || s.Properties != nil || s.AdditionalProperties.Has != nil || s.AdditionalProperties.Schema != nil) ||
		kind != openapi3.TypeString && (s.MinLength != 0 || s.MaxLength != nil || s.Pattern != "" || s.Enum != nil) ||
		kind != openapi3.TypeInteger && (s.Min != nil || s.Max != nil) {
		return nil, false
	}
	switch kind {
	case openapi3.TypeObject:
		if s.Format != "" || s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has || s.AdditionalProperties.Schema != nil {
			return nil, false
		}
		f.kind = 'o'
		f.props = map[string]*fastSchema{}
		for name, ref := range s.Properties {
			if ref == nil {
				return nil, false
			}
			p, ok := compileSchema(ref.Value, depth+1)
			if !ok {
				return nil, false
			}
			f.props[name] = p
		}
		f.required = s.Required
	case openapi3.TypeString:
		if s.Format != "" {
			return nil, false
		}
		f.kind = 's'
		f.minLen, f.maxLen = s.MinLength, s.MaxLength
		if s.Pattern != "" {
			re, err := regexp.Compile(s.Pattern)
			if err != nil {
				return nil, false
			}
			f.pattern = re
		}
		for _, e := range s.Enum {
			v, ok := e.(string)
			if !ok {
				return nil, false
			}
			f.enum = append(f.enum, v)
		}
	case openapi3.TypeInteger:
		if s.Format != "" && s.Format != "int64" {
			return nil, false
		}
		f.kind = 'i'
		f.min, f.max = s.Min, s.Max
	case openapi3.TypeBoolean:
		if s.Format != "" {
			return nil, false
		}
		f.kind = 'b'
	default:
		return nil, false
	}
	return f, true
}

// accepts reports whether r certainly passes the contract for op. It reads
// the body (jsonBodies has read it into memory already) and puts it back.
func (op *fastOp) accepts(r *http.Request) bool {
	if r.URL.RawQuery != "" || r.URL.RawPath != "" || r.Body == nil {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	for _, p := range op.params {
		if !p.schema.acceptsString(chi.URLParam(r, p.name)) {
			return false
		}
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) == 0 {
		return false
	}
	return op.body.acceptsBody(body)
}

// acceptsBody reports whether body is exactly one JSON value that s
// accepts.
func (s *fastSchema) acceptsBody(body []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(false))
	if !s.acceptsValue(dec) {
		return false
	}
	_, err := dec.ReadToken()
	return errors.Is(err, io.EOF)
}

func (s *fastSchema) acceptsValue(dec *jsontext.Decoder) bool {
	switch s.kind {
	case '*':
		// kin-openapi takes any value for a schema without keywords, but
		// null (it is not nullable); it does not look inside the value.
		return dec.PeekKind() != 'n' && dec.SkipValue() == nil
	case 'o':
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return false
		}
		seen := make(map[string]bool, len(s.props))
		for dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return false
			}
			name := tok.String()
			p := s.props[name]
			if p == nil || !p.acceptsValue(dec) {
				return false
			}
			seen[name] = true
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
			return false
		}
		for _, name := range s.required {
			if !seen[name] {
				return false
			}
		}
		return true
	case 's':
		tok, err := dec.ReadToken()
		return err == nil && tok.Kind() == '"' && s.acceptsString(tok.String())
	case 'i':
		v, err := dec.ReadValue()
		if err != nil || v.Kind() != '0' || !plainInteger(v) {
			return false
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil && (s.min == nil || float64(n) >= *s.min) && (s.max == nil || float64(n) <= *s.max)
	case 'b':
		tok, err := dec.ReadToken()
		return err == nil && (tok.Kind() == 't' || tok.Kind() == 'f')
	}
	return false
}

// plainInteger reports whether v is an integer literal of at most 15
// digits, which a float64 holds exactly: no fraction, no exponent, no -0.
func plainInteger(v []byte) bool {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return !(v[0] == '-' && digits[0] == '0')
}

// acceptsString applies a string schema's keywords as kin-openapi does
// (lengths counted its way).
func (s *fastSchema) acceptsString(v string) bool {
	if s.kind != 's' {
		return false
	}
	if s.minLen != 0 || s.maxLen != nil {
		length := uint64(0)
		for _, r := range v {
			if utf16.IsSurrogate(r) {
				length += 2
			} else {
				length++
			}
		}
		if length < s.minLen || s.maxLen != nil && length > *s.maxLen {
			return false
		}
	}
	if s.enum != nil {
		found := false
		for _, e := range s.enum {
			found = found || e == v
		}
		if !found {
			return false
		}
	}
	return s.pattern == nil || s.pattern.MatchString(v)
}
