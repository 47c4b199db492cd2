package receipt

import (
	"bytes"
	"math"
	"os"
	"testing"
)

// TestCanonicalRFC8785 holds Canonical to the examples of RFC 8785
// (sections 3.2.2 and 3.2.3): numbers, string escapes, literals and the
// UTF-16 order of member names, written out by hand in testdata.
func TestCanonicalRFC8785(t *testing.T) {
	in, err := os.ReadFile("testdata/rfc8785-input.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/rfc8785-canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Canonical(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Canonical:\n got %s\nwant %s", got, want)
	}
	if !IsCanonical(want) || IsCanonical(in) {
		t.Fatal("IsCanonical is wrong about the vector")
	}
}

func TestAppendNumber(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", math.Copysign(0, -1): "0", 1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-6: "0.000001", 1e-7: "1e-7", 5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308",
		9007199254740991: "9007199254740991", 0.30000000000000004: "0.30000000000000004", 333333333.33333329: "333333333.3333333",
	} {
		if got := string(AppendNumber(nil, f)); got != want {
			t.Errorf("AppendNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, "\"\xff\"", `"\ud800"`, `1e400`, `{"a":1} 2`, `[1,]`} {
		if _, err := Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%q) = nil error", in)
		}
	}
}
