// Package loomref is the reference reading of loom's stdout whole that the
// equivalence tests and fuzz targets hold loom.Condense to, as package
// jsjsontest is for the writer: DecodeUTF8 and Interpret (SEMANTICS (b)
// steps 2 to 5, deciding with loom.Decide over loom.ReadFacts of the
// payload), then Split and SplitContext (SEMANTICS (d)), which cut the
// payload into rows and envelope. It also writes the random payloads
// those tests read (GenStdout, GenListPayload, GenJSON).
//
// It is for tests only: no production package imports it (the architecture
// test, internal/archtest, holds that).
package loomref
