// Package ifc is the gateway's label arithmetic and result measurement:
// reading a row's label, the fit test against a ceiling, the meet of
// ceilings, the join of observed labels, the disclosed (types-only) label,
// and the byte budget that turns a loom payload into the agent-visible
// result. The behaviour is SEMANTICS (e) and (g) with the gateway's
// decisions.
//
// The package guarantees:
//
//   - It is pure: no I/O, no clock, no goroutines, and no global state
//     that changes a result (label readings are kept process-wide and
//     Measure's scratch memory is pooled, which changes only the time
//     taken); every function is safe for concurrent use. Of this module
//     it imports only package jsjson, whose JavaScript-semantics JSON
//     reading and writing every length here is measured with.
//   - A label that is present but unreadable is never read as absent:
//     ReadRowLabel reports it as an error with present set, and Measure
//     withholds the row with cfc_label_read_failed whether or not there is a
//     ceiling. A row that is not a JSON object is unreadable.
//   - A defined ceiling never admits a clause bearing the read-failed
//     marker, and an empty defined ceiling admits only labels with no
//     clauses. Only an undefined ceiling (NoCeiling) skips the check.
//   - The single decision about an unlabeled row's label is
//     LabelForUnlabeledRow (known deviation 10 of the reference).
//   - Every length is counted in UTF-16 code units of compact JSON written
//     as JavaScript's JSON.stringify writes it (no HTML escaping, U+2028 and
//     U+2029 raw), so cut points match the reference in any language. A cut
//     never leaves half a surrogate pair.
//   - Row values keep loom's member order and number text; only the
//     top-level ifc member is removed and long strings are cut. Input is read
//     as JSON.parse reads it: a repeated member name keeps its first
//     position and its last value, invalid UTF-8 becomes U+FFFD.
//   - Measure never decodes a row after the first one that does not fit,
//     nor one past MaxMeasuredRows. Its memory stays within a small factor
//     of its input: a label over MaxLabelBytes, or a row over
//     MaxTreeRowBytes that repeats a member name, is unreadable and is not
//     parsed. MeasureContext stops at its context's deadline.
//
// The package refuses to:
//
//   - guess: a malformed host-supplied clause list or label is an error
//     (ParseConfidentiality, ParseLabel), never a best effort;
//   - put label content into errors: *LabelError names a path and a fixed
//     reason only;
//   - show the agent more of a label than its atom types (Disclose), or the
//     result's cfc part at all (Result.AppendJSON omits it);
//   - implement the reference runner's digest-commitment and PersonalSpace
//     refinements of atom entailment; those atoms match by equality only.
//
// Values (Clause, Atom, Confidentiality, Label, Ceiling, Result) are
// immutable once built; functions may return slices that share memory with
// their arguments, except Measure, whose Result owns its memory.
package ifc
