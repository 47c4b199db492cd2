package reqid

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A forwarded id is taken only with this process's MAC of it, and only
// in the shape Middleware gives ids: a correct MAC of another shape is
// refused too.
func TestForwarded(t *testing.T) {
	const id = "0123456789abcdef01234567"
	for name, tt := range map[string]struct {
		header string
		ok     bool
	}{
		"forwarded":    {id + "." + mac(id), true},
		"no MAC":       {id, false},
		"wrong MAC":    {id + "." + strings.Repeat("0", 64), false},
		"MAC of other": {id + "." + mac("ab"), false},
		"not hex":      {"XYZ." + mac("XYZ"), false},
		"too long":     {strings.Repeat("a", 65) + "." + mac(strings.Repeat("a", 65)), false},
		"empty":        {"", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.header != "" {
			r.Header.Set(ForwardedHeader, tt.header)
		}
		got, ok := forwarded(r)
		if ok != tt.ok || ok && got != id {
			t.Errorf("%s: forwarded = %q, %v; want ok %v", name, got, ok, tt.ok)
		}
	}
	h := http.Header{}
	Forward(h, "XYZ")
	if h.Get(ForwardedHeader) != "" {
		t.Errorf("Forward set a header for a malformed id")
	}
}
