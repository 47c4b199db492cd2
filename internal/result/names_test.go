package result

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []string
		err   error
	}{
		{`null`, nil, nil},
		{`{"a":"` + tokA + `","b":{"@link":"` + tokB + `"},"` + tokA + `":["see ` + tokU + ` and ` + tokA + `"]}`, []string{tokA, tokB, tokU}, nil},
		{`"cfh:a:abcde"`, nil, ErrUnheldHandle},
		{`"` + tokA + `f"`, nil, ErrUnheldHandle},
		{`{"a":1,"a":2}`, nil, ErrInvalidValue},
		{`1 2`, nil, ErrInvalidValue},
		{``, nil, ErrInvalidValue},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), nil, ErrTooDeep},
	} {
		got, err := Names([]byte(tc.value))
		if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
			t.Errorf("Names(%.60q) = %q, %v; want %q, %v", tc.value, got, err, tc.want, tc.err)
		}
	}
}

// TestNamesBound: a value naming MaxNames distinct tokens is read; one
// more is refused, however often each is repeated.
func TestNamesBound(t *testing.T) {
	tokens := func(n int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%s","%s"`, token(i), token(i))
		}
		b.WriteByte(']')
		return b.String()
	}
	if got, err := Names([]byte(tokens(MaxNames))); err != nil || len(got) != MaxNames {
		t.Fatalf("Names of %d tokens = %d names, %v", MaxNames, len(got), err)
	}
	if _, err := Names([]byte(tokens(MaxNames + 1))); !errors.Is(err, ErrTooManyNames) {
		t.Fatalf("Names of %d tokens: %v, want ErrTooManyNames", MaxNames+1, err)
	}
}

// token is the i-th of many distinct held-shaped tokens.
func token(i int) string {
	const alphabet = "23456789abcdefghjkmnpqrstvwxyz"
	b := []byte("cfh:v:22222")
	for j := len(b) - 1; i > 0; j-- {
		b[j] = alphabet[i%len(alphabet)]
		i /= len(alphabet)
	}
	return string(b)
}
