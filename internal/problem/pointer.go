package problem

import "strings"

// A problem's pointer is built from member names the client chose, so it
// is bounded: a name longer than maxPointerName bytes, or a segment that
// would take the pointer past maxPointerBytes, ends it there, and the
// pointer names the nearest enclosing value that fits ("" and so no
// pointer at all: the body as a whole). No problem is large because of
// what was sent.
const (
	maxPointerName  = 128
	maxPointerBytes = 512
)

// RFC 6901 escaping of a pointer segment.
var (
	escapeSegment   = strings.NewReplacer("~", "~0", "/", "~1")
	unescapeSegment = strings.NewReplacer("~1", "/", "~0", "~")
)

// Pointer writes path as an RFC 6901 pointer within the bounds above.
func Pointer(path ...string) string {
	var b strings.Builder
	for _, seg := range path {
		if len(seg) > maxPointerName {
			break
		}
		esc := escapeSegment.Replace(seg)
		if b.Len()+1+len(esc) > maxPointerBytes {
			break
		}
		b.WriteByte('/')
		b.WriteString(esc)
	}
	return b.String()
}

// BoundPointer applies the bounds to a pointer already written: p is an
// RFC 6901 pointer, or a parameter name (no leading '/'), which is kept
// only when it is a name that fits.
func BoundPointer(p string) string {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		if len(p) > maxPointerName {
			return ""
		}
		return p
	}
	if len(p) <= maxPointerName { // the common case: nothing to cut
		return p
	}
	path := strings.Split(rest, "/")
	for i, seg := range path {
		path[i] = unescapeSegment.Replace(seg)
	}
	return Pointer(path...)
}
