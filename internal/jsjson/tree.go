package jsjson

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the tree: a JSON value parsed with JavaScript's
// duplicate-name rule, for the rows and labels the streaming writer cannot
// read in one pass.

// Node is a parsed JSON value with JavaScript's duplicate-name rule applied.
// Scalars hold their text in the writer's form; object names too.
type Node struct {
	Kind jsontext.Kind // KindString, KindNumber, KindNull, KindTrue, KindFalse, KindBeginObject, KindBeginArray
	Text string        // scalars
	Keys []string      // object member names, first-occurrence order
	Vals []*Node       // object member values (last occurrence) or array elements
}

// Member returns the value of the member whose name, in the writer's form,
// is key, or nil.
func (n *Node) Member(key string) *Node {
	if n.Kind != jsontext.KindBeginObject {
		return nil
	}
	if i := slices.Index(n.Keys, key); i >= 0 {
		return n.Vals[i]
	}
	return nil
}

// treeDecoder is a reusable decoder for ParseTree, which reads labels
// and clauses many times per call.
type treeDecoder struct {
	src bytes.Buffer
	dec jsontext.Decoder
}

var treeDecoders = sync.Pool{New: func() any { return new(treeDecoder) }}

func (td *treeDecoder) put() {
	td.src = bytes.Buffer{}
	td.dec.Reset(&td.src) // drop the input
	treeDecoders.Put(td)
}

// ParseTree parses one JSON value.
func ParseTree(v []byte) (*Node, error) {
	td := treeDecoders.Get().(*treeDecoder)
	defer td.put()
	td.src = *bytes.NewBuffer(v)
	td.dec.Reset(&td.src, DecodeOptions...)
	dec := &td.dec
	n, err := parseNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = ErrTrailing
		}
		return nil, err
	}
	return n, nil
}

func parseNode(dec *jsontext.Decoder) (*Node, error) {
	switch k := dec.PeekKind(); k {
	case jsontext.KindBeginObject:
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &Node{Kind: k}
		var index map[string]int
		for dec.PeekKind() == jsontext.KindString {
			raw, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			b, _ := AppendQuoted(nil, raw, -1)
			key := string(b)
			v, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			i := -1
			if index != nil {
				if j, ok := index[key]; ok {
					i = j
				}
			} else {
				i = slices.Index(n.Keys, key)
			}
			if i >= 0 {
				n.Vals[i] = v
				continue
			}
			n.Keys = append(n.Keys, key)
			n.Vals = append(n.Vals, v)
			if index != nil {
				index[key] = len(n.Keys) - 1
			} else if len(n.Keys) > maxLinearNames {
				index = make(map[string]int, 2*len(n.Keys))
				for j, k := range n.Keys {
					index[k] = j
				}
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return n, nil
	case jsontext.KindBeginArray:
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &Node{Kind: k}
		for {
			switch dec.PeekKind() {
			case jsontext.KindEndArray:
				if _, err := dec.ReadToken(); err != nil {
					return nil, err
				}
				return n, nil
			case jsontext.KindInvalid:
				_, err := dec.ReadToken()
				return nil, err
			}
			v, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			n.Vals = append(n.Vals, v)
		}
	case jsontext.KindString:
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		b, _ := AppendQuoted(nil, raw, -1)
		return &Node{Kind: k, Text: string(b)}, nil
	case jsontext.KindNumber, jsontext.KindNull, jsontext.KindTrue, jsontext.KindFalse:
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return &Node{Kind: k, Text: string(raw)}, nil
	default:
		_, err := dec.ReadToken()
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// AppendNode writes n in the writer's form, cutting strings longer than
// limit (>= 0) units; it reports whether it cut.
func AppendNode(dst []byte, n *Node, limit int) ([]byte, bool) {
	switch n.Kind {
	case jsontext.KindString:
		if limit < 0 {
			return append(dst, n.Text...), false
		}
		return AppendQuoted(dst, []byte(n.Text), limit)
	case jsontext.KindBeginObject:
		cut := false
		dst = append(dst, '{')
		for i, k := range n.Keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, k...)
			dst = append(dst, ':')
			var c bool
			dst, c = AppendNode(dst, n.Vals[i], limit)
			cut = cut || c
		}
		return append(dst, '}'), cut
	case jsontext.KindBeginArray:
		cut := false
		dst = append(dst, '[')
		for i, v := range n.Vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			var c bool
			dst, c = AppendNode(dst, v, limit)
			cut = cut || c
		}
		return append(dst, ']'), cut
	default:
		return append(dst, n.Text...), false
	}
}

// AppendCanon writes the structural form of n: object members sorted by
// name, numbers by their float64 value. Two values are structurally equal
// (deep equality, member order ignored, as the reference compares atoms)
// exactly when their structural forms are equal.
func AppendCanon(dst []byte, n *Node) []byte {
	switch n.Kind {
	case jsontext.KindNumber:
		f, _ := strconv.ParseFloat(n.Text, 64) // out of range yields ±Inf, as in JavaScript
		switch {
		case f == 0:
			return append(dst, '0')
		case math.IsInf(f, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(f, -1):
			return append(dst, "-Infinity"...)
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	case jsontext.KindBeginObject:
		order := make([]int, len(n.Keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			switch {
			case n.Keys[a] < n.Keys[b]:
				return -1
			case n.Keys[a] > n.Keys[b]:
				return 1
			}
			return 0
		})
		dst = append(dst, '{')
		for i, j := range order {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, n.Keys[j]...)
			dst = append(dst, ':')
			dst = AppendCanon(dst, n.Vals[j])
		}
		return append(dst, '}')
	case jsontext.KindBeginArray:
		dst = append(dst, '[')
		for i, v := range n.Vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendCanon(dst, v)
		}
		return append(dst, ']')
	default:
		return append(dst, n.Text...)
	}
}
