package ifc

import (
	"encoding/binary"
	"sync"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Labels, ceilings and the query label repeat from call to call: a loom
// instance labels its rows with a handful of facets. Reading one (parsing
// the ifc text, checking its shape, compiling its clauses for the fit test,
// sizing its disclosure) costs more than the row it labels, so the readings
// are kept process-wide, keyed by the exact text read. A reading is a pure
// function of its key and is never mutated, so sharing one between calls and
// goroutines changes nothing but the time taken.

// labelRead is the reading of one label.
type labelRead struct {
	label        Label
	unreadable   bool
	clauses      []clauseInfo // label.Confidentiality compiled for the fit test
	disclosedLen int          // UTF-16 length of the disclosed label as written
}

func newLabelRead(l Label, err error) *labelRead {
	if err != nil {
		return &labelRead{unreadable: true}
	}
	return &labelRead{
		label:        l,
		clauses:      compileClauses(l.Confidentiality),
		disclosedLen: jsjson.UTF16LenBytes(appendDisclosed(nil, Disclose(l))),
	}
}

// Bounds of a readCache: keys longer than maxCachedKey are read every time,
// and a cache that reaches maxCacheEntries starts over.
const (
	maxCachedKey    = 4 << 10
	maxCacheEntries = 1024
)

type readCache[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

// get returns the value cached for key, computing and caching it with read
// on a miss.
func (c *readCache[V]) get(key []byte, read func() V) V {
	if len(key) > maxCachedKey {
		return read()
	}
	c.mu.RLock()
	v, ok := c.m[string(key)]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = read()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = make(map[string]V)
	}
	c.m[string(key)] = v
	c.mu.Unlock()
	return v
}

// disclosed returns the disclosure of l as AppendJSON writes it,
// appendDisclosed(nil, Disclose(l)); callers must not modify it.
func (c *labelCache) disclosed(l Label) []byte {
	var kb [keyBuf]byte
	key := textKey(kb[:0], l)
	return c.disclosures.get(key, func() []byte { return appendDisclosed(nil, Disclose(l)) })
}

// disclose returns a copy of disclose(l), read once per distinct label.
// The copy is two allocations whatever the number of clauses: the outer
// list, and one array that every clause's types and the integrity types
// are capped slices of, so that appending to one never writes into
// another.
func (c *labelCache) disclose(l Label) Disclosed {
	var kb [keyBuf]byte
	key := textKey(kb[:0], l)
	d := c.disclosedValues.get(key, func() Disclosed { return disclose(l) })
	n := len(d.Integrity)
	for _, types := range d.Confidentiality {
		n += len(types)
	}
	all := make([]string, 0, n)
	out := Disclosed{Confidentiality: make([][]string, len(d.Confidentiality))}
	for i, types := range d.Confidentiality {
		start := len(all)
		all = append(all, types...)
		out.Confidentiality[i] = all[start:len(all):len(all)]
	}
	start := len(all)
	all = append(all, d.Integrity...)
	out.Integrity = all[start:len(all):len(all)]
	return out
}

// labelCache holds label readings; every key but rows' is the textKey of a
// Label value's two lists.
type labelCache struct {
	rows            readCache[*labelRead] // by the raw text of a row's ifc member
	values          readCache[*labelRead] // labels built in code
	disclosedValues readCache[Disclosed]  // Disclose
	disclosures     readCache[[]byte]     // the disclosure as AppendJSON writes it
}

type ceilingCache struct {
	clauses readCache[[]clauseInfo] // by textKey of the clauses
}

var (
	labelReads   labelCache
	ceilingReads ceilingCache
)

// row reads the raw value of a row's ifc member, as readIFC.
func (c *labelCache) row(raw []byte) *labelRead {
	return c.rows.get(raw, func() *labelRead { return newLabelRead(readIFC(raw)) })
}

// given reads a Label value built in code (the query label). The reading
// holds l itself.
func (c *labelCache) given(l Label) *labelRead {
	var kb [keyBuf]byte
	key := textKey(kb[:0], l)
	lr := c.values.get(key, func() *labelRead { return newLabelRead(l, nil) })
	if !sameLabel(lr.label, l) {
		// Same text, other slices: keep the caller's.
		cp := *lr
		cp.label = l
		lr = &cp
	}
	return lr
}

// ceiling compiles the clauses of a defined ceiling, as compileClauses.
func (c *ceilingCache) ceiling(cs Confidentiality) []clauseInfo {
	var kb [keyBuf]byte
	return c.clauses.get(appendTextKey(kb[:0], cs), func() []clauseInfo { return compileClauses(cs) })
}

// sameLabel reports whether a and b share their lists' memory.
func sameLabel(a, b Label) bool {
	return keyOf(a) == keyOf(b)
}

// textKey appends the key of a Label value to dst: its two lists'
// textKeys.
func textKey(dst []byte, l Label) []byte {
	return appendTextKey(appendTextKey(dst, l.Confidentiality), l.Integrity)
}

// keyBuf is the size of the stack buffers keys are built in; a longer key
// goes to the heap as append grows it.
const keyBuf = 256

// appendTextKey appends an unambiguous key for a list of JSON texts: each
// length-prefixed, after the list's length.
func appendTextKey[T ~[]byte](dst []byte, list []T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(list)))
	for _, t := range list {
		dst = binary.AppendUvarint(dst, uint64(len(t)))
		dst = append(dst, t...)
	}
	return dst
}
