package ifc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Clause is one confidentiality clause as compact JSON text in the writer's
// form (see AppendJS): an atom, or an OR-clause {"anyOf":[atoms]}. An object
// is an OR-clause only when anyOf is its sole member and holds an array.
// Clauses produced by this package are always in that form; Join compares
// clauses by this text. Treat the bytes as immutable.
type Clause jsontext.Value

// Atom is one atom as compact JSON text in the writer's form: in practice a
// string (often a URI) or an object with a string "type". Treat the bytes as
// immutable.
type Atom jsontext.Value

// Confidentiality is a conjunction of clauses. Nil and empty both mean
// public; functions in this package return nil for an empty list and
// MarshalJSON writes [] for it.
type Confidentiality []Clause

// Label is a row's full label. Empty lists are nil and marshal as [].
type Label struct {
	Confidentiality Confidentiality `json:"confidentiality"`
	Integrity       []Atom          `json:"integrity"`
}

// Disclosed is the agent-visible form of a label: atom types only
// (SEMANTICS (e.7)). It always marshals both keys, empty lists as [].
type Disclosed struct {
	Confidentiality [][]string `json:"confidentiality"`
	Integrity       []string   `json:"integrity"`
}

// LabelError reports a label that cannot be read. Path locates the
// offending part ("ifc.confidentiality[2]", "integrity", ...; empty for the
// whole value; for ParseLabel's unknown member, that member's name) and
// Reason is a fixed phrase. Neither ever quotes an atom or a value.
type LabelError struct {
	Path   string
	Reason string
}

func (e *LabelError) Error() string {
	if e.Path == "" {
		return "ifc: unreadable label: " + e.Reason
	}
	return "ifc: unreadable label: " + e.Path + ": " + e.Reason
}

// Names in the writer's form, as they appear in node.Keys.
const (
	keyAnyOf           = `"anyOf"`
	keyType            = `"type"`
	keyConfidentiality = `"confidentiality"`
	keyIntegrity       = `"integrity"`
	keyTimestamp       = `"timestamp"`
)

// MarshalJSON returns the clause text; an empty Clause is an error.
func (c Clause) MarshalJSON() ([]byte, error) {
	if len(c) == 0 {
		return nil, errors.New("ifc: empty clause")
	}
	return c, nil
}

// UnmarshalJSON stores any JSON value in the writer's form. It does not
// check the clause shape; use ParseConfidentiality for that.
func (c *Clause) UnmarshalJSON(data []byte) error {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return &LabelError{Reason: "invalid JSON"}
	}
	b, _ := jsjson.AppendNode(nil, n, -1)
	*c = b
	return nil
}

// MarshalJSON returns the atom text; an empty Atom is an error.
func (a Atom) MarshalJSON() ([]byte, error) {
	if len(a) == 0 {
		return nil, errors.New("ifc: empty atom")
	}
	return a, nil
}

// UnmarshalJSON stores any JSON value in the writer's form. It does not
// check the atom shape.
func (a *Atom) UnmarshalJSON(data []byte) error {
	var c Clause
	if err := c.UnmarshalJSON(data); err != nil {
		return err
	}
	*a = Atom(c)
	return nil
}

// MarshalJSON writes the clauses as a JSON array, [] when empty.
func (c Confidentiality) MarshalJSON() ([]byte, error) {
	return appendClauses(nil, c), nil
}

// UnmarshalJSON accepts a JSON array of any values (null means empty) and
// stores each in the writer's form. It does not check clause shapes, so it
// round-trips every Confidentiality and Ceiling the package produces; use
// ParseConfidentiality to read input that must be well-formed.
func (c *Confidentiality) UnmarshalJSON(data []byte) error {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return &LabelError{Reason: "invalid JSON"}
	}
	if n.Kind == jsontext.KindNull {
		*c = nil
		return nil
	}
	out, err := laxList(n, "")
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// MarshalJSON writes {"confidentiality":[...],"integrity":[...]}.
func (l Label) MarshalJSON() ([]byte, error) {
	return appendLabel(nil, l), nil
}

// UnmarshalJSON accepts null (the zero Label) or an object whose
// confidentiality and integrity are arrays of any values, null or absent.
// Other members are ignored. Like
// Confidentiality.UnmarshalJSON it does not check shapes; ParseLabel does.
func (l *Label) UnmarshalJSON(data []byte) error {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return &LabelError{Reason: "invalid JSON"}
	}
	if n.Kind == jsontext.KindNull {
		*l = Label{}
		return nil
	}
	if n.Kind != jsontext.KindBeginObject {
		return &LabelError{Reason: "not an object"}
	}
	var out Label
	if v := n.Member(keyConfidentiality); v != nil && v.Kind != jsontext.KindNull {
		if out.Confidentiality, err = laxList(v, "confidentiality"); err != nil {
			return err
		}
	}
	if v := n.Member(keyIntegrity); v != nil && v.Kind != jsontext.KindNull {
		cs, err := laxList(v, "integrity")
		if err != nil {
			return err
		}
		out.Integrity = atomsOf(cs)
	}
	*l = out
	return nil
}

// MarshalJSON writes both keys, empty lists as [].
func (d Disclosed) MarshalJSON() ([]byte, error) {
	return appendDisclosed(nil, d), nil
}

func laxList(n *jsjson.Node, path string) (Confidentiality, error) {
	if n.Kind != jsontext.KindBeginArray {
		return nil, &LabelError{Path: path, Reason: "not an array"}
	}
	var out Confidentiality
	for _, v := range n.Vals {
		b, _ := jsjson.AppendNode(nil, v, -1)
		out = append(out, b)
	}
	return out, nil
}

func atomsOf(cs Confidentiality) []Atom {
	if len(cs) == 0 {
		return nil
	}
	out := make([]Atom, len(cs))
	for i, c := range cs {
		out[i] = Atom(c)
	}
	return out
}

// ParseConfidentiality reads a JSON array of clauses, every element a
// clause shape of SEMANTICS (e.2): a string; an object with a string "type"
// and no "anyOf" member; or an object whose sole member "anyOf" is a
// non-empty array of such atoms. It is meant for host-supplied lists (flags,
// manifests, the unlabeledRowLabel setting). Duplicate member names keep the
// last value and invalid UTF-8 becomes U+FFFD, as JSON.parse would read
// them. The result is nil for []. Errors are *LabelError.
func ParseConfidentiality(data []byte) (Confidentiality, error) {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return nil, &LabelError{Reason: "invalid JSON"}
	}
	return strictClauses(n, "")
}

// ParseCeiling reads a host-supplied ceiling as ParseConfidentiality
// reads a label, but for one thing: a clause {"anyOf": []} is a valid
// ceiling clause (SEMANTICS (e.4): it subsumes no label clause, so a
// ceiling holding it admits only labels without clauses). Errors are
// *LabelError.
func ParseCeiling(data []byte) (Confidentiality, error) {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return nil, &LabelError{Reason: "invalid JSON"}
	}
	if n.Kind == jsontext.KindBeginArray {
		// Check each clause with its empty alternatives set aside.
		var out Confidentiality
		for i, v := range n.Vals {
			if alts := v.Member(keyAnyOf); v.Kind == jsontext.KindBeginObject && len(v.Keys) == 1 && alts != nil &&
				alts.Kind == jsontext.KindBeginArray && len(alts.Vals) == 0 {
				b, _ := jsjson.AppendNode(nil, v, -1)
				out = append(out, b)
				continue
			}
			if reason := clauseShape(v); reason != "" {
				return nil, &LabelError{Path: fmt.Sprintf("[%d]", i), Reason: reason}
			}
			b, _ := jsjson.AppendNode(nil, v, -1)
			out = append(out, b)
		}
		return out, nil
	}
	return strictClauses(n, "")
}

// ParseClauses reads a JSON array of any values as ceiling clauses without
// checking their shape, as the reference accepts a read-ceiling record's
// loomReadCeiling. A malformed clause can only narrow a ceiling: it admits
// no well-formed label clause. The result is nil for []. Errors are
// *LabelError.
func ParseClauses(data []byte) (Confidentiality, error) {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return nil, &LabelError{Reason: "invalid JSON"}
	}
	return laxList(n, "")
}

// ParseLabel reads a host-supplied label: an object with an array
// "confidentiality" of clause shapes and an optional array "integrity" of
// atom shapes (SEMANTICS (e.2)); any other member is refused. Errors are
// *LabelError.
func ParseLabel(data []byte) (Label, error) {
	n, err := jsjson.ParseTree(data)
	if err != nil {
		return Label{}, &LabelError{Reason: "invalid JSON"}
	}
	if n.Kind == jsontext.KindBeginObject {
		for _, k := range n.Keys {
			if k != keyConfidentiality && k != keyIntegrity {
				return Label{}, &LabelError{Path: jsjson.Unquote(k), Reason: "unknown member"}
			}
		}
	}
	return readLabel(n)
}

// ReadRowLabel reads the label of one row (SEMANTICS (e.2)). Only the row's
// own top-level "ifc" member counts; when the row repeats it, the last one
// wins, as JSON.parse keeps it. present reports whether the row carries
// "ifc" at all: an absent label is not an error, and the caller assumes the
// query label (LabelForUnlabeledRow). A non-nil error means the label is
// unreadable and the row must be withheld; it is always reported with
// present set, so an unreadable label is never mistaken for an absent one.
// A row that is not a JSON object, or not valid JSON, is unreadable, and so
// is a label of more than MaxLabelBytes. Errors are *LabelError.
func ReadRowLabel(row jsontext.Value) (l Label, present bool, err error) {
	var e jsjson.Writer
	_, r, err := e.Row(nil, row, true, -1)
	if err != nil {
		if errors.Is(err, jsjson.ErrNotObject) {
			return Label{}, true, &LabelError{Reason: "row is not an object"}
		}
		return Label{}, true, &LabelError{Reason: "invalid JSON"}
	}
	if !r.HasIFC {
		return Label{}, false, nil
	}
	l, err = readIFC(r.IFC)
	return l, true, err
}

// MaxLabelBytes bounds the JSON text of a row's label (its ifc member, as
// loom wrote it). A longer label is unreadable and is not parsed: reading
// one costs tens of times its text (a node, a clause and a compiled clause
// each), loom's facet labels are a few atoms of a few hundred bytes, and
// one of string atoms, whose types are themselves, would disclose more
// than the whole result's 48,000 units can hold. Withholding it is the
// fail-closed direction (docs/DEVIATIONS.md).
const MaxLabelBytes = 64 << 10

// readIFC reads the raw value of an ifc member.
func readIFC(raw []byte) (Label, error) {
	if len(raw) > MaxLabelBytes {
		return Label{}, &LabelError{Path: "ifc", Reason: "too large"}
	}
	n, err := jsjson.ParseTree(raw)
	if err != nil {
		return Label{}, &LabelError{Path: "ifc", Reason: "invalid JSON"}
	}
	l, err := readLabel(n)
	if le, ok := errors.AsType[*LabelError](err); ok {
		le.Path = strings.TrimSuffix("ifc."+le.Path, ".")
	}
	return l, err
}

// readLabel applies the rules of (e.2) to the value of an ifc member.
func readLabel(n *jsjson.Node) (Label, error) {
	if n.Kind != jsontext.KindBeginObject {
		return Label{}, &LabelError{Reason: "not an object"}
	}
	conf := n.Member(keyConfidentiality)
	if conf == nil {
		return Label{}, &LabelError{Path: "confidentiality", Reason: "missing"}
	}
	var l Label
	var err error
	if l.Confidentiality, err = strictClauses(conf, "confidentiality"); err != nil {
		return Label{}, err
	}
	if integ := n.Member(keyIntegrity); integ != nil {
		if integ.Kind != jsontext.KindBeginArray {
			return Label{}, &LabelError{Path: "integrity", Reason: "not an array"}
		}
		for i, v := range integ.Vals {
			if reason := atomShape(v); reason != "" {
				return Label{}, &LabelError{Path: fmt.Sprintf("integrity[%d]", i), Reason: reason}
			}
			b, _ := jsjson.AppendNode(nil, v, -1)
			l.Integrity = append(l.Integrity, b)
		}
	}
	return l, nil
}

func strictClauses(n *jsjson.Node, path string) (Confidentiality, error) {
	if n.Kind != jsontext.KindBeginArray {
		return nil, &LabelError{Path: path, Reason: "not an array"}
	}
	var out Confidentiality
	for i, v := range n.Vals {
		if reason := clauseShape(v); reason != "" {
			return nil, &LabelError{Path: fmt.Sprintf("%s[%d]", path, i), Reason: reason}
		}
		b, _ := jsjson.AppendNode(nil, v, -1)
		out = append(out, b)
	}
	return out, nil
}

// clauseShape returns why n is not a clause shape, or "".
func clauseShape(n *jsjson.Node) string {
	if n.Kind == jsontext.KindBeginObject && n.Member(keyAnyOf) != nil {
		alts := n.Member(keyAnyOf)
		switch {
		case len(n.Keys) != 1:
			return "anyOf with other members"
		case alts.Kind != jsontext.KindBeginArray:
			return "anyOf is not an array"
		case len(alts.Vals) == 0:
			return "anyOf is empty"
		}
		for _, a := range alts.Vals {
			if reason := atomShape(a); reason != "" {
				return "anyOf alternative " + reason
			}
		}
		return ""
	}
	return atomShape(n)
}

// atomShape returns why n is not an atom shape, or "".
func atomShape(n *jsjson.Node) string {
	switch n.Kind {
	case jsontext.KindString:
		return ""
	case jsontext.KindBeginObject:
		if n.Member(keyAnyOf) != nil {
			return "atom with anyOf"
		}
		if t := n.Member(keyType); t == nil || t.Kind != jsontext.KindString {
			return "object without string type"
		}
		return ""
	}
	return "not a string or object"
}

func appendClauses(dst []byte, cs Confidentiality) []byte {
	dst = append(dst, '[')
	for i, c := range cs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendText(dst, c)
	}
	return append(dst, ']')
}

func appendText(dst, text []byte) []byte {
	if len(text) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, text...)
}

func appendLabel(dst []byte, l Label) []byte {
	dst = append(dst, `{"confidentiality":`...)
	dst = appendClauses(dst, l.Confidentiality)
	dst = append(dst, `,"integrity":[`...)
	for i, a := range l.Integrity {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendText(dst, a)
	}
	return append(dst, "]}"...)
}

func appendDisclosed(dst []byte, d Disclosed) []byte {
	dst = append(dst, `{"confidentiality":[`...)
	for i, c := range d.Confidentiality {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendStrings(dst, c)
	}
	dst = append(dst, `],"integrity":`...)
	dst = appendStrings(dst, d.Integrity)
	return append(dst, '}')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsjson.AppendString(dst, s)
	}
	return append(dst, ']')
}
