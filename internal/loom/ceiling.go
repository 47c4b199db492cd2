package loom

import (
	"errors"
	"io/fs"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/jsjson"
)

// maxRecordBytes bounds the read-ceiling record read.
const maxRecordBytes = 1 << 20

// Reasons of a CeilingUnavailableError. They are the whole vocabulary: a
// reason never carries the path or an OS error text.
const (
	ReasonRecordMissing     = "the record file does not exist"
	ReasonRecordUnreadable  = "the record file cannot be read"
	ReasonRecordDirectory   = "the record path is a directory"
	ReasonRecordNotRegular  = "the record path is not a regular file"
	ReasonRecordTooLarge    = "the record file is too large"
	ReasonRecordNotJSON     = "the record is not JSON"
	ReasonRecordNotObject   = "the record is not a JSON object"
	ReasonRecordCeiling     = "loomReadCeiling is not a non-empty array"
	ReasonRecordFacets      = "facets is not a non-empty array of facet ids"
	ReasonRecordFacetSource = "facetSource is not a non-empty string"
	ReasonRecordOtherFacets = "the record's facets differ from the configured facets"
)

// ReadCeiling reads the read-ceiling record cfg names and returns its
// loomReadCeiling as a ceiling (SEMANTICS (f)). It reads the file on every
// call, so a record rewritten between calls takes effect at the next one.
// With no ReadCeilingFile it returns ifc.NoCeiling and nil. A named record
// that is missing, unreadable, a directory or other non-regular file, larger
// than 1 MiB, not strict JSON (duplicate keys and invalid UTF-8 are refused),
// not an object, or whose loomReadCeiling, facets or facetSource break the
// rules of (f), or whose sorted facets differ from the sorted configured
// Facets (duplicates count), returns a *CeilingUnavailableError. A named
// record is never read as "no ceiling". The clauses of loomReadCeiling are
// taken as written, without shape checks (ifc.ParseClauses).
func ReadCeiling(cfg *Config) (ifc.Ceiling, error) {
	if cfg.ReadCeilingFile == "" {
		return ifc.NoCeiling, nil
	}
	data, err := readCapped(cfg.ReadCeilingFile, maxRecordBytes)
	if err != nil {
		return ifc.NoCeiling, &CeilingUnavailableError{Reason: readFailureReason(err)}
	}
	return parseRecord(data, cfg.Facets)
}

func readFailureReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ReasonRecordMissing
	case errors.Is(err, errIsDir):
		return ReasonRecordDirectory
	case errors.Is(err, errNotRegular):
		return ReasonRecordNotRegular
	case errors.Is(err, errTooLarge):
		return ReasonRecordTooLarge
	}
	return ReasonRecordUnreadable
}

func parseRecord(data []byte, facets []string) (ifc.Ceiling, error) {
	fail := func(reason string) (ifc.Ceiling, error) {
		return ifc.NoCeiling, &CeilingUnavailableError{Reason: reason}
	}
	if !jsontext.Value(data).IsValid() {
		return fail(ReasonRecordNotJSON)
	}
	ms, err := jsjson.Members(data)
	if err != nil {
		return fail(ReasonRecordNotObject)
	}
	f := membersByName(ms)

	raw, ok := f["loomReadCeiling"]
	if !ok || raw.Kind() != '[' {
		return fail(ReasonRecordCeiling)
	}
	clauses, err := ifc.ParseClauses(raw) // as written: no shape checks
	if err != nil || len(clauses) == 0 {
		return fail(ReasonRecordCeiling)
	}

	raw, ok = f["facets"]
	if !ok || raw.Kind() != '[' {
		return fail(ReasonRecordFacets)
	}
	elems, _ := jsjson.Elements(raw)
	if len(elems) == 0 {
		return fail(ReasonRecordFacets)
	}
	recordFacets := make([]string, len(elems))
	for i, e := range elems {
		s, err := jsjson.UnquoteValue(e)
		if e.Kind() != '"' || err != nil || !isFacetID(s) {
			return fail(ReasonRecordFacets)
		}
		recordFacets[i] = s
	}

	raw, ok = f["facetSource"]
	if !ok || raw.Kind() != '"' {
		return fail(ReasonRecordFacetSource)
	}
	if s, err := jsjson.UnquoteValue(raw); err != nil || s == "" {
		return fail(ReasonRecordFacetSource)
	}

	if facets != nil {
		a, b := slices.Clone(facets), recordFacets
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			return fail(ReasonRecordOtherFacets)
		}
	}
	return ifc.CeilingOf(clauses), nil
}
