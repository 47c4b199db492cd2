// Package result is the gateway's result writer (SEMANTICS (j) as Gateway
// decision 11 adapts it): it resolves the handle tokens in an agent's
// structured result against the run's handle table, turns the cited
// referents into documents and their positions into links, and labels the
// result with everything the run observed. It is pure: it reads no store
// and keeps no state.
package result

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Errors returned by Write. Callers branch with errors.Is.
var (
	// ErrUnheldHandle reports a token-shaped text the run does not hold:
	// any cfh:a: token, any cfh:v: token that is not held, and any run of
	// more than 5 alphabet characters after either prefix.
	ErrUnheldHandle = errors.New("result: unheld handle")
	// ErrInvalidValue reports a value that is not exactly one JSON value:
	// empty input, a syntax error, trailing data or a repeated member name.
	ErrInvalidValue = errors.New("result: invalid value")
	// ErrTooDeep reports a value, or a resolved value, that nests arrays
	// and objects more than 10,000 deep (the limit of encoding/json and
	// jsontext, so no value that passed the HTTP layer hits it).
	ErrTooDeep = errors.New("result: value nested too deeply")
)

// maxDepth is the deepest nesting Write reads or writes: jsontext's own
// limit, checked here first so that it surfaces as ErrTooDeep.
const maxDepth = 10000

// linkKey is the sole member of a link object.
const linkKey = "@link"

// tokenLen is the length of a held token: the prefix and 5 characters.
// Longer token-shaped runs are never held.
const tokenLen = len(store.ValueTokenPrefix) + 5

// Write resolves value, the agent's raw JSON result, against the run's held
// referents (its handle table, in minting order) and returns the result to
// store and the number of link positions in it.
//
// At each value position, a string that is exactly a held cfh:v: token, or
// an object whose sole member is "@link" with such a token as its string
// value, becomes {"@link":"doc-<runID>-<n>"}; the referent is cited and
// becomes one document however often it is cited, numbered from 1 in order
// of first citation. A single-member "@link" object whose text is not a held
// token stays as written: it is the agent's own object, and its text is
// checked like any other string. Every other string and every member name
// must hold only held tokens in its token-shaped substrings (the pattern
// store.TokenPattern); a held token there stays inert text, with no link and
// no document.
//
// The output keeps member order and number text; strings are re-encoded
// minimally (no HTML escaping, invalid UTF-8 read as U+FFFD, as
// encoding/json reads it) and the value is compact.
//
// The result's Receipt is the label of the referents not cited: the Join of
// their confidentiality and the MeetIntegrity of their integrity. Its Label
// is the same over every held referent, cited or not, in table order: the
// result carries everything the run observed, while each document carries
// only its own row's label. Documents, Receipt and Label use non-nil empty
// slices for empty lists; documents share Value and label bytes with held.
// WrittenAt is left zero for the caller.
//
// Write resolves everything before it returns anything: on any error the
// result is the zero Result and links is 0. Errors: ErrUnheldHandle,
// ErrInvalidValue (wrapping the decoder's error), ErrTooDeep.
func Write(value []byte, runID string, held []store.Referent) (res store.Result, links int, err error) {
	w := &writer{
		dec:   jsontext.NewDecoder(bytes.NewReader(value), jsontext.AllowInvalidUTF8(true)),
		runID: runID,
		refs:  held,
		held:  make(map[string]int, len(held)),
		docOf: make(map[int]int),
		docs:  []store.Document{},
	}
	w.enc = jsontext.NewEncoder(&w.out)
	for i, r := range held {
		if _, dup := w.held[r.Token]; !dup && isHeldShape(r.Token) {
			w.held[r.Token] = i
		}
	}
	if err := w.walk(); err != nil {
		return store.Result{}, 0, err
	}

	var allConf, restConf []ifc.Confidentiality
	var allInteg, restInteg [][]ifc.Atom
	for i, r := range held {
		allConf = append(allConf, r.Label.Confidentiality)
		allInteg = append(allInteg, r.Label.Integrity)
		if _, cited := w.docOf[i]; !cited {
			restConf = append(restConf, r.Label.Confidentiality)
			restInteg = append(restInteg, r.Label.Integrity)
		}
	}
	return store.Result{
		Value:     jsontext.Value(bytes.TrimSuffix(w.out.Bytes(), []byte("\n"))),
		Documents: w.docs,
		Receipt:   label(ifc.Join(restConf...), ifc.MeetIntegrity(restInteg...)),
		Label:     label(ifc.Join(allConf...), ifc.MeetIntegrity(allInteg...)),
	}, w.links, nil
}

// isHeldShape reports whether a table token can be cited: a value token of
// the minted width.
func isHeldShape(token string) bool {
	return len(token) == tokenLen && store.IsValueToken(token)
}

// label returns a label whose empty lists are non-nil. MeetIntegrity of no
// lists is empty, which is what a receipt over no rows carries.
func label(conf ifc.Confidentiality, integ []ifc.Atom) ifc.Label {
	if conf == nil {
		conf = ifc.Confidentiality{}
	}
	if integ == nil {
		integ = []ifc.Atom{}
	}
	return ifc.Label{Confidentiality: conf, Integrity: integ}
}

// writer walks the value one token at a time, so nesting costs no Go
// stack; the decoder's own stack says where a string sits.
type writer struct {
	dec   *jsontext.Decoder
	enc   *jsontext.Encoder
	out   bytes.Buffer
	runID string
	refs  []store.Referent
	held  map[string]int // citable token → index in refs
	docOf map[int]int    // index in refs → index in docs
	docs  []store.Document
	links int
}

// walk copies one top-level value and checks that nothing follows it.
func (w *writer) walk() error {
	for {
		if err := w.step(); err != nil {
			return err
		}
		if w.dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := w.dec.ReadToken(); err != io.EOF {
		return invalid(err)
	}
	return nil
}

// step reads and writes the next token, or the whole object when it is a
// link.
func (w *writer) step() error {
	depth := w.dec.StackDepth()
	switch w.dec.PeekKind() {
	case '{':
		if depth >= maxDepth {
			return ErrTooDeep
		}
		return w.object()
	case '[':
		if depth >= maxDepth {
			return ErrTooDeep
		}
	case '"':
		kind, n := w.dec.StackIndex(depth)
		atName := kind == '{' && n%2 == 0
		s, err := w.readString()
		if err != nil {
			return err
		}
		if atName {
			return w.text(s)
		}
		return w.valueString(s)
	}
	// Numbers and literals keep their text; a syntax error surfaces here.
	tok, err := w.dec.ReadToken()
	if err != nil {
		return invalid(err)
	}
	return w.write(tok)
}

// object reads an object start and looks ahead for the link shape
// {"@link":"<text>"}; anything else is written as read so far and left to
// step.
func (w *writer) object() error {
	if _, err := w.dec.ReadToken(); err != nil {
		return invalid(err)
	}
	if w.dec.PeekKind() != '"' {
		return w.write(jsontext.BeginObject)
	}
	name, err := w.readString()
	if err != nil {
		return err
	}
	if name != linkKey || w.dec.PeekKind() != '"' {
		if err := w.write(jsontext.BeginObject); err != nil {
			return err
		}
		return w.text(name)
	}
	text, err := w.readString()
	if err != nil {
		return err
	}
	if i, ok := w.held[text]; ok && w.dec.PeekKind() == '}' {
		if _, err := w.dec.ReadToken(); err != nil {
			return invalid(err)
		}
		return w.link(i)
	}
	// Not a link: "@link" is an ordinary name and text an ordinary value
	// (itself a link position when the object has other members).
	if err := w.write(jsontext.BeginObject); err != nil {
		return err
	}
	if err := w.write(jsontext.String(linkKey)); err != nil {
		return err
	}
	return w.valueString(text)
}

// valueString writes a string read at a value position: a held token
// becomes a link, anything else is checked text.
func (w *writer) valueString(s string) error {
	if i, ok := w.held[s]; ok {
		if w.dec.StackDepth() >= maxDepth {
			return ErrTooDeep // the link object adds a level
		}
		return w.link(i)
	}
	return w.text(s)
}

// text writes a string (a member name or a value) after checking that
// every token-shaped run in it is held.
func (w *writer) text(s string) error {
	if strings.Contains(s, "cfh:") {
		for _, m := range store.TokenPattern.FindAllString(s, -1) {
			if _, ok := w.held[m]; !ok {
				return ErrUnheldHandle
			}
		}
	}
	return w.write(jsontext.String(s))
}

// link cites refs[i] and writes its link object.
func (w *writer) link(i int) error {
	d, ok := w.docOf[i]
	if !ok {
		r := w.refs[i]
		d = len(w.docs)
		w.docOf[i] = d
		w.docs = append(w.docs, store.Document{
			ID:     "doc-" + w.runID + "-" + strconv.Itoa(d+1),
			Source: r.Source,
			Value:  r.Value,
			Label:  label(r.Label.Confidentiality, r.Label.Integrity),
		})
	}
	w.links++
	for _, tok := range []jsontext.Token{jsontext.BeginObject, jsontext.String(linkKey), jsontext.String(w.docs[d].ID), jsontext.EndObject} {
		if err := w.write(tok); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) readString() (string, error) {
	tok, err := w.dec.ReadToken()
	if err != nil {
		return "", invalid(err)
	}
	return tok.String(), nil
}

// write writes one token. The walk keeps the output well formed, so an
// error here is a bug, not bad input.
func (w *writer) write(tok jsontext.Token) error {
	if err := w.enc.WriteToken(tok); err != nil {
		return fmt.Errorf("result: encode: %w", err)
	}
	return nil
}

// invalid wraps a decoder error, or the absence of the expected end of
// input, as ErrInvalidValue.
func invalid(err error) error {
	if err == nil {
		return ErrInvalidValue
	}
	return fmt.Errorf("%w: %w", ErrInvalidValue, err)
}
