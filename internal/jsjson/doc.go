// Package jsjson is JSON as the gateway's JavaScript reference reads and
// writes it, the one home of that codec for packages ifc, loom and
// validate:
//
//   - Scanner, a validating reader over one byte slice that copies nothing
//     (RFC 8259 with duplicate names, invalid UTF-8 and escaped lone
//     surrogates allowed, jsontext's nesting limit), and the readers of
//     whole objects and arrays built on it (Walk, Members, Elements, Valid);
//     on amd64 with AVX2 an array or object is read 64 bytes at a time,
//     only its tokens walked (skipContainer, classify_amd64.s), and UTF-8
//     is checked 32 ASCII bytes at a time (ValidUTF8);
//   - the writer every length is measured against: JSON.stringify's form
//     of JSON.parse's reading (AppendJS, Writer, AppendString), with
//     JavaScript's duplicate-name rule (first position, last value, Node
//     and ParseTree for the rare value that repeats a name) and strings cut
//     at a bound in UTF-16 units without splitting a surrogate pair;
//   - Names and AppendName, the one place that decides whether an object
//     repeats a member name as the writer compares names (the Writer's,
//     and loom's reading of rows too long to write);
//   - UTF-16 lengths (UTF16Len, UTF16LenBytes), the unit every bound is
//     stated in;
//   - the order in which Object.keys enumerates an object's names
//     (ObjectKeys, KeyOrder).
//
// It is pure: no I/O, no global state that changes a result, safe for
// concurrent use except where a type says otherwise (Scanner, Writer). It
// imports nothing from this module. Package jsjsontest keeps the plain
// jsontext-driven writer the fast one is held to.
package jsjson
