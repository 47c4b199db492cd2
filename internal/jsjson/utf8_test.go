package jsjson_test

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

func TestValidUTF8(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	pieces := []string{"a", "é", "€", "😀", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", " ", "0123456789abcdefghijklmnopqrstuvwxyz"}
	for range 20000 {
		var b []byte
		for range rng.IntN(40) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if got, want := jsjson.ValidUTF8(b), utf8.Valid(b); got != want {
			t.Fatalf("%q: ValidUTF8 %v, utf8.Valid %v", b, got, want)
		}
	}
	p := benchdata.Search(64 << 10)
	if !jsjson.ValidUTF8(p) {
		t.Fatal("the search payload is valid UTF-8")
	}
	for _, i := range []int{31, 32, 33, 63, 64, 1000, len(p) - 1} {
		q := append([]byte(nil), p...)
		q[i] = 0xff
		if jsjson.ValidUTF8(q) {
			t.Fatalf("0xff at %d: valid", i)
		}
	}
}

func FuzzValidUTF8(f *testing.F) {
	f.Add([]byte("Grüße café " + string(make([]byte, 40)) + "\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsjson.ValidUTF8(b), utf8.Valid(b); got != want {
			t.Fatalf("%q: ValidUTF8 %v, utf8.Valid %v", b, got, want)
		}
	})
}
