package jsjson

// Internals the external tests (equiv_test.go) hold to plain versions.
var (
	SpecialMask = specialMask
	StrPlain    = &strPlain
	DecodeRune  = decodeRune[string]
	AppendRune  = appendRune
)

// SkipContainer is skip's fast way through an array or object.
func SkipContainer(b []byte, i, depth int) (int, bool) { return skipContainer(b, i, depth, nil) }

// SlowValue is Scanner.Value read without skipContainer: skip's own way.
func SlowValue(b []byte, depth int) (raw []byte, end int, err error) {
	var s Scanner
	s.Reset(b)
	raw, err = s.skipOwn(depth)
	return raw, s.i, err
}

// FastContainers reports whether skip uses skipContainer on this machine.
func FastContainers() bool { return fastContainers }
