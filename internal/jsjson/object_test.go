package jsjson

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestObjectKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
	}{
		{"as written", `{"zeta":1,"alpha":2}`, []string{"zeta", "alpha"}},
		{"array-index names first, ascending", `{"b":1,"10":2,"2":3,"a":4}`, []string{"2", "10", "b", "a"}},
		{"not indexes: leading zero, 2^32-1, sign", `{"4294967295":1,"01":2,"-1":3,"4294967294":4,"0":5}`, []string{"0", "4294967294", "4294967295", "01", "-1"}},
		{"a duplicate once, at its first place", `{"a":1,"b":2,"a":3}`, []string{"a", "b"}},
		{"escaped names unescaped", `{"\u0061/b":1}`, []string{"a/b"}},
		{"empty", ` {} `, []string{}},
	}
	for _, tt := range tests {
		got, err := ObjectKeys([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: ObjectKeys(%s): %v", tt.name, tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: ObjectKeys(%s) mismatch (-want +got):\n%s", tt.name, tt.in, diff)
		}
	}
	for _, in := range []string{`[]`, `"a"`, `{"a":1} x`, `{"a":`, ``} {
		if _, err := ObjectKeys([]byte(in)); err == nil {
			t.Errorf("ObjectKeys(%q) = nil error, want one", in)
		}
	}
}
