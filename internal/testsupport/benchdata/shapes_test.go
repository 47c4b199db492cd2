package benchdata

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShapesAreJSON: every shape's payload is one JSON value (the
// invalid-utf8 shape once its bytes are decoded), of about the size asked.
func TestShapesAreJSON(t *testing.T) {
	for _, sh := range Shapes {
		p := sh.Payload(4 << 20)
		if len(p) < 3<<20 || len(p) > 6<<20 {
			t.Errorf("%s: %d bytes for 4 MiB", sh.Name, len(p))
		}
		text := strings.ToValidUTF8(string(p), "\uFFFD")
		if sh.Name == "invalid-utf8" && utf8.Valid(p) {
			t.Errorf("%s: valid UTF-8", sh.Name)
		}
		if !json.Valid([]byte(text)) {
			t.Errorf("%s: not JSON", sh.Name)
		}
	}
}
