package gateway

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{`{"query":"a","all":true}`, []string{"all", "query"}},
		{`{}`, []string{}},
		{`[]`, []string{}},
		{`not json`, []string{}},
		{`{"b":{"nested":1},"a":[1,2]}`, []string{"a", "b"}},
		{`{"has space":1,"ok":2,"` + strings.Repeat("x", 65) + `":3}`, []string{"?", "ok"}},
	}
	for _, tt := range tests {
		if got := argNames([]byte(tt.in)); !cmp.Equal(got, tt.want) {
			t.Errorf("argNames(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
