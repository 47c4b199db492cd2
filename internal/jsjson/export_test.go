package jsjson

// Internals the external tests (equiv_test.go) hold to plain versions.
var (
	SpecialMask = specialMask
	StrPlain    = &strPlain
	DecodeRune  = decodeRune[string]
	AppendRune  = appendRune
)
