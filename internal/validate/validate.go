// Package validate checks a request against the contract with
// kin-openapi, the contract's one authority: parameters through
// openapi3filter, the JSON body through the operation's compiled schema
// (openapi3.Schema.VisitJSON), read once. A refusal is a
// *problem.InputError with one fault per violation found, each with a
// reason of the contract's vocabulary, and a detail naming the first in
// words. No fault holds a value that was sent.
package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/problem"
)

// Validator holds the compiled operations of one listener's part of the
// contract, by method and path template.
type Validator struct {
	spec *openapi3.T
	ops  map[string]*operation
}

type operation struct {
	route    *routers.Route
	params   bool             // the operation has parameters to check
	body     *openapi3.Schema // the JSON body's schema; nil: no body
	required bool             // the body is required
}

// New compiles the operations of spec. Authentication is each listener's
// own, done before validation, so the spec's security requirements are
// dropped here.
func New(spec *openapi3.T) *Validator {
	spec.Security = nil
	c := &Validator{spec: spec, ops: map[string]*operation{}}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			op.Security = &openapi3.SecurityRequirements{}
			o := &operation{
				route:  &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: op},
				params: len(item.Parameters)+len(op.Parameters) > 0,
			}
			if rb := op.RequestBody; rb != nil && rb.Value != nil {
				if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
					o.body, o.required = mt.Schema.Value, rb.Value.Required
				}
			}
			c.ops[method+" "+path] = o
		}
	}
	return c
}

// Has reports whether the contract has the operation.
func (c *Validator) Has(method, path string) bool { return c.ops[method+" "+path] != nil }

// Request checks r, routed to the operation method+path with the path
// parameters given, and body, the request's body already read (nil:
// none). It returns nil, or a *problem.InputError.
func (c *Validator) Request(r *http.Request, method, path string, pathParams map[string]string, body []byte) error {
	op := c.ops[method+" "+path]
	if op == nil {
		return &problem.InputError{}
	}
	if op.params {
		in := &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: pathParams,
			Route:      op.route,
			Options: &openapi3filter.Options{
				ExcludeRequestBody:  true,
				SkipSettingDefaults: true,
				AuthenticationFunc:  func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
			},
		}
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			return paramError(err)
		}
	}
	return op.check(body)
}

// Body checks body against the JSON body of the operation method+path.
func (c *Validator) Body(method, path string, body []byte) error {
	op := c.ops[method+" "+path]
	if op == nil {
		return &problem.InputError{}
	}
	return op.check(body)
}

// check validates the body against the operation's schema.
func (op *operation) check(body []byte) error {
	if op.body == nil {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if op.required {
			return problem.Invalid("", problem.EmptyBody, "The operation takes a JSON body; none was sent.")
		}
		return nil
	}
	if err := JSON(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return problem.Invalid("", problem.NotJson, detailNotJSON)
	}
	err := op.body.VisitJSON(value, openapi3.VisitAsRequest(), openapi3.MultiErrors())
	if err == nil {
		return nil
	}
	return bodyError(err, body, op.body)
}

const detailNotJSON = "The body is not one JSON value."

// JSON accepts exactly one JSON value with nothing but white space after
// it, and refuses in it what JSON.parse would take but the gateway does
// not (docs/DEVIATIONS.md): a duplicate object key, invalid UTF-8, and an
// escaped lone surrogate ("\ud800", which no UTF-8 string can carry).
// Those are refused at the member they are in, named as a pointer (never
// the text). A syntax error (truncated JSON, an invalid token, data after
// the value, nesting deeper than 10,000 levels) names nothing: no member
// is at fault, the body as a whole is not JSON.
func JSON(body []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	_, err := dec.ReadValue()
	if err == nil {
		if _, err := dec.ReadToken(); err != io.EOF {
			return problem.Invalid("", problem.NotJson, detailNotJSON)
		}
		return nil
	}
	se, ok := errors.AsType[*jsontext.SyntacticError](err)
	if !ok || !jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
		return problem.Invalid("", problem.NotJson, detailNotJSON)
	}
	ptr := problem.Pointer(slices.Collect(se.JSONPointer.Tokens())...)
	// A valid-but-for-these body: a duplicate name, or text that is not UTF-8.
	if jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(false)) {
		return problem.Invalid(ptr, problem.DuplicateKey, name(ptr)+" is given more than once.")
	}
	return problem.Invalid(ptr, problem.InvalidUtf8, name(ptr)+" holds text that is not valid UTF-8 (or escapes a lone surrogate).")
}

// paramError maps a refused parameter: its name is the pointer.
func paramError(err error) error {
	re, ok := errors.AsType[*openapi3filter.RequestError](err)
	if !ok || re.Parameter == nil {
		return &problem.InputError{}
	}
	p := re.Parameter.Name
	f := problem.Fault{Pointer: p, Reason: problem.WrongType}
	var schema *openapi3.Schema
	if se, ok := errors.AsType[*openapi3.SchemaError](err); ok {
		f, schema = fault(se, nil), se.Schema
		f.Pointer = p
	} else if errors.Is(err, openapi3filter.ErrInvalidRequired) {
		f.Reason = problem.Required
	}
	return &problem.InputError{Faults: []problem.Fault{f}, Detail: describe(f, schema, "Parameter "+p)}
}

// bodyError maps the schema errors of a body: one fault per error, the
// first fault being the unknown key SEMANTICS (c) orders first (see
// unknownKeyPointer), else kin-openapi's first error.
func bodyError(err error, body []byte, root *openapi3.Schema) error {
	var errs []*openapi3.SchemaError
	flatten(err, &errs)
	if len(errs) == 0 {
		return problem.Invalid("", problem.WrongType, "The body does not have the shape the operation takes.")
	}
	type found struct {
		f problem.Fault
		s *openapi3.Schema
	}
	var faults []found
	add := func(f problem.Fault, s *openapi3.Schema) {
		for _, g := range faults {
			if g.f.Pointer == f.Pointer && g.f.Reason == f.Reason {
				return
			}
		}
		faults = append(faults, found{f, s})
	}
	first := errs[0]
	if ptr, obj, ok := unknownKeyPointer(body, root, first.Schema, first.JSONPointer()); ok {
		add(problem.Fault{Pointer: ptr, Reason: problem.UnknownField, Choices: declared(obj)}, obj)
	}
	for _, se := range errs {
		if se.SchemaField == "properties" {
			// Unknown members: one fault per member, in Object.keys order.
			path := se.JSONPointer()
			for _, k := range unknownKeys(valueAt(body, path), se.Schema) {
				add(problem.Fault{Pointer: problem.Pointer(append(slices.Clip(path), k)...), Reason: problem.UnknownField, Choices: declared(se.Schema)}, se.Schema)
			}
			continue
		}
		add(fault(se, body), se.Schema)
	}
	e := &problem.InputError{}
	for _, f := range faults {
		e.Faults = append(e.Faults, f.f)
	}
	e.Detail = describe(faults[0].f, faults[0].s, name(faults[0].f.Pointer))
	return e
}

// flatten collects the schema errors of err, kin-openapi's order kept.
func flatten(err error, out *[]*openapi3.SchemaError) {
	if me, ok := err.(openapi3.MultiError); ok {
		for _, e := range me {
			flatten(e, out)
		}
		return
	}
	if se, ok := errors.AsType[*openapi3.SchemaError](err); ok {
		*out = append(*out, se)
	}
}

// fault is the fault of one schema error. body, when given, is read for
// the refused value's kind (null or not).
func fault(se *openapi3.SchemaError, body []byte) problem.Fault {
	path := se.JSONPointer()
	f := problem.Fault{Pointer: problem.Pointer(path...)}
	s := se.Schema
	switch se.SchemaField {
	case "required":
		f.Reason = problem.Required
	case "type", "nullable":
		f.Reason = problem.WrongType
		if se.Value == nil {
			f.Reason = problem.NullNotAllowed
		}
	case "minLength", "minItems", "minProperties":
		f.Reason = problem.TooShort
	case "maxLength", "maxItems", "maxProperties":
		f.Reason = problem.TooLong
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		f.Reason = problem.OutOfRange
	case "format":
		f.Reason = problem.PatternMismatch
		if s != nil && (s.Type.Is("integer") || s.Type.Is("number")) {
			f.Reason = problem.OutOfRange
		}
	case "enum":
		f.Reason = problem.NotInChoices
		if s != nil {
			for _, e := range s.Enum {
				if str, ok := e.(string); ok {
					f.Choices = append(f.Choices, str)
				}
			}
		}
	case "pattern":
		f.Reason = problem.PatternMismatch
		if s != nil && s.Extensions["x-input-fault"] == string(problem.NotADate) {
			f.Reason = problem.NotADate
		}
	default:
		f.Reason = problem.WrongType
		if se.Value == nil {
			f.Reason = problem.NullNotAllowed
		}
	}
	return f
}

// declared lists the members an object schema takes, sorted.
func declared(s *openapi3.Schema) []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// name is how a detail names the member at pointer p.
func name(p string) string {
	if p == "" {
		return "The input"
	}
	if len(p) > 64 { // the pointer names it; the detail stays short
		return "A member"
	}
	return "The member " + p
}

// describe says fault f, found under schema s, in words: what is wrong
// with subject and what it takes.
func describe(f problem.Fault, s *openapi3.Schema, subject string) string {
	switch f.Reason {
	case problem.UnknownField:
		if len(f.Choices) == 0 {
			return subject + " is not one this input takes; it takes no members."
		}
		return subject + " is not one this input takes; it takes " + strings.Join(f.Choices, ", ") + "."
	case problem.Required:
		return subject + " is required."
	case problem.NullNotAllowed:
		return subject + " must not be null."
	case problem.WrongType:
		if s != nil && s.Type != nil && len(*s.Type) == 1 {
			return subject + " must be " + article((*s.Type)[0]) + "."
		}
		return subject + " does not have the type this input takes."
	case problem.TooShort:
		if s != nil && s.MinLength > 0 {
			return fmt.Sprintf("%s must be at least %d characters long.", subject, s.MinLength)
		}
		if s != nil && s.MinItems > 0 {
			return fmt.Sprintf("%s must have at least %d items.", subject, s.MinItems)
		}
		return subject + " is too short."
	case problem.TooLong:
		if s != nil && s.MaxLength != nil {
			return fmt.Sprintf("%s must be at most %d characters long.", subject, *s.MaxLength)
		}
		if s != nil && s.MaxItems != nil {
			return fmt.Sprintf("%s must have at most %d items.", subject, *s.MaxItems)
		}
		return subject + " is too long."
	case problem.OutOfRange:
		switch {
		case s != nil && s.Min != nil && s.Max != nil:
			return fmt.Sprintf("%s must be from %s to %s.", subject, number(*s.Min), number(*s.Max))
		case s != nil && s.Min != nil:
			return fmt.Sprintf("%s must be at least %s.", subject, number(*s.Min))
		case s != nil && s.Max != nil:
			return fmt.Sprintf("%s must be at most %s.", subject, number(*s.Max))
		}
		return subject + " is out of range."
	case problem.NotInChoices:
		return subject + " must be one of " + strings.Join(f.Choices, ", ") + "."
	case problem.NotADate:
		return subject + " must be a date written YYYY-MM-DD."
	case problem.PatternMismatch:
		if s != nil && s.Description != "" && len(s.Description) <= 200 {
			return subject + " does not have the form it takes: " + s.Description
		}
		return subject + " does not have the form it takes."
	}
	return subject + " is not what this input takes."
}

func article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

// unknownKeyPointer finds the object whose unknown keys come first for a
// refusal at path (kin-openapi's pointer of the refused value): on the way
// from the body's root down to the refused value, the first object that
// holds a key its schema does not declare (additionalProperties: false),
// and returns the pointer of that object's first such key in JavaScript's
// Object.keys order, the order of the argument builder (jsjson.ObjectKeys),
// with that object's schema. So an object's unknown keys come before any
// other violation inside it, as SEMANTICS (c) orders the builder's checks,
// whatever kin-openapi met first. Where the schemas along the path cannot
// be followed (through anyOf, say), refused, the schema kin-openapi
// refused the value under, is asked about the value at path itself.
func unknownKeyPointer(body []byte, root, refused *openapi3.Schema, path []string) (string, *openapi3.Schema, bool) {
	v, s := jsontext.Value(body), root
	for i := 0; ; i++ {
		if k := unknownKeys(v, s); len(k) > 0 {
			return problem.Pointer(append(path[:i:i], k[0])...), s, true
		}
		if i == len(path) || v == nil {
			break
		}
		v, s = childValue(v, path[i]), childSchema(s, path[i])
	}
	if k := unknownKeys(v, refused); len(k) > 0 {
		return problem.Pointer(append(path[:len(path):len(path)], k[0])...), refused, true
	}
	return "", nil, false
}

// unknownKeys returns the keys of the JSON object v, in Object.keys order,
// that s does not declare when s refuses undeclared keys.
func unknownKeys(v jsontext.Value, s *openapi3.Schema) []string {
	if s == nil || v.Kind() != '{' || s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
		return nil
	}
	keys, err := jsjson.ObjectKeys(v)
	if err != nil {
		return nil
	}
	var unknown []string
	for _, k := range keys {
		if _, ok := s.Properties[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	return unknown
}

// valueAt is the value at path in the JSON text v, nil when there is none.
func valueAt(v jsontext.Value, path []string) jsontext.Value {
	for _, seg := range path {
		if v = childValue(v, seg); v == nil {
			return nil
		}
	}
	return v
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

// number writes a bound as a person reads it: 2592000, not %v's 2.592e+06.
func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
