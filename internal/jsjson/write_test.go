package jsjson

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func TestAppendJS(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"compact", " { \"a\" : [ 1 , true , null ] , \"b\" : { } } ", `{"a":[1,true,null],"b":{}}`},
		{"key order kept", `{"z":1,"a":2,"m":3}`, `{"z":1,"a":2,"m":3}`},
		{"integer-like keys not moved", `{"b":1,"2":2,"1":3}`, `{"b":1,"2":2,"1":3}`},
		{"number text kept", `[1.0,1e3,1E+3,-0,0.10,12345678901234567890123,1e400]`, `[1.0,1e3,1E+3,-0,0.10,12345678901234567890123,1e400]`},
		{"html not escaped", `"<a href=\"x\">&amp;</a>"`, `"<a href=\"x\">&amp;</a>"`},
		{"html escapes undone", `"\u003c\u003e\u0026"`, `"<>&"`},
		{"line separators raw", `"a\u2028b\u2029c"`, "\"a\u2028b\u2029c\""},
		{"raw line separators stay raw", "\"a\u2028b\"", "\"a\u2028b\""},
		{"short escapes", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"other controls lowercase hex", `"\u0000\u001F\u000B\u007f"`, "\"\\u0000\\u001f\\u000b\x7f\""},
		{"quote and backslash", `"\"\\"`, `"\"\\"`},
		{"slash unescaped", `"a\/b"`, `"a/b"`},
		{"unicode escapes decoded", `"\u00e9\u4e2d"`, `"é中"`},
		{"surrogate pair escape decoded", `"\ud83d\ude00"`, `"😀"`},
		{"uppercase surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"lone high surrogate kept", `"a\uD800b"`, `"a\ud800b"`},
		{"lone low surrogate kept", `"\udc00"`, `"\udc00"`},
		{"reversed pair stays two escapes", `"\ude00\ud83d"`, `"\ude00\ud83d"`},
		{"invalid utf8 byte", "\"a\xffb\"", "\"a\uFFFDb\""},
		{"truncated sequence is one replacement", "\"a\xe2\x82b\"", "\"a\uFFFDb\""},
		{"truncated 4-byte sequence", "\"\xf0\x9f\x98\"", "\"\uFFFD\""},
		{"encoded surrogate is three replacements", "\"\xed\xa0\x80\"", "\"\uFFFD\uFFFD\uFFFD\""},
		{"overlong is two replacements", "\"\xc0\xaf\"", "\"\uFFFD\uFFFD\""},
		{"invalid utf8 in key", "{\"k\xff\":1}", "{\"k\uFFFD\":1}"},
		{"escaped key", `{"\u0069fc":1}`, `{"ifc":1}`},
		{"duplicate keeps first position last value", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"nested duplicate", `[{"x":{"y":1,"y":[2]}}]`, `[{"x":{"y":[2]}}]`},
		{"duplicate by escape spelling", `{"a":1,"\u0061":2}`, `{"a":2}`},
		{"duplicate by replacement", "{\"\xff\":1,\"\xfe\":2}", "{\"\uFFFD\":2}"},
		{"proto is an ordinary key", `{"__proto__":1}`, `{"__proto__":1}`},
		{"scalar", `"x"`, `"x"`},
		{"invalid gives null", `{"a":`, `null`},
		{"trailing data gives null", `1 2`, `null`},
		{"empty gives null", ``, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendJS(nil, jsontext.Value(tt.in)))
			if got != tt.want {
				t.Errorf("AppendJS(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAppendJSAppends(t *testing.T) {
	got := string(AppendJS([]byte("x:"), jsontext.Value(`[1]`)))
	if got != "x:[1]" {
		t.Errorf("AppendJS(x:, [1]) = %q, want %q", got, "x:[1]")
	}
	got = string(AppendJS([]byte("x:"), jsontext.Value(`[`)))
	if got != "x:null" {
		t.Errorf("AppendJS(x:, [) = %q, want %q", got, "x:null")
	}
}

// TestAppendJSManyKeys crosses the switch from linear to map-based
// duplicate detection.
func TestAppendJSManyKeys(t *testing.T) {
	var in, want strings.Builder
	in.WriteString("{")
	want.WriteString("{")
	for i := range 100 {
		if i > 0 {
			in.WriteString(",")
			want.WriteString(",")
		}
		k := string(rune('A'+i%26)) + strings.Repeat("x", i/26)
		in.WriteString(`"` + k + `":` + "1")
		want.WriteString(`"` + k + `":` + "1")
	}
	noDup := in.String() + "}"
	if got := string(AppendJS(nil, jsontext.Value(noDup))); got != want.String()+"}" {
		t.Errorf("AppendJS(100 keys) = %q, want %q", got, want.String()+"}")
	}
	dup := in.String() + `,"A":2}`
	wantDup := strings.Replace(want.String(), `"A":1`, `"A":2`, 1) + "}"
	if got := string(AppendJS(nil, jsontext.Value(dup))); got != wantDup {
		t.Errorf("AppendJS(100 keys + dup) = %q, want %q", got, wantDup)
	}
}

func TestUTF16Len(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"ascii", "abc", 3},
		{"two-byte", "é", 1},
		{"three-byte", "中", 1},
		{"line separator", "\u2028", 1},
		{"astral counts two", "😀", 2},
		{"mixed", "a😀中", 4},
		{"invalid byte", "\xff", 1},
		{"truncated sequence counts one", "\xe2\x82", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UTF16Len(tt.in); got != tt.want {
				t.Errorf("UTF16Len(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestCutString(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name    string
		in      string
		want    string
		wantCut bool
	}{
		{"short", "abc", "abc", false},
		{"exactly the bound", a(4000), a(4000), false},
		{"one over", a(4001), a(4000), true},
		{"astral exactly the bound", strings.Repeat("😀", 2000), strings.Repeat("😀", 2000), false},
		{"astral over", strings.Repeat("😀", 2001), strings.Repeat("😀", 2000), true},
		{"pair straddles the bound", a(3999) + "😀", a(3999), true},
		{"pair straddles and more follows", a(3999) + "😀b", a(3999), true},
		{"pair ends at the bound", a(3998) + "😀b", a(3998) + "😀", true},
		{"multibyte bmp", strings.Repeat("中", 4001), strings.Repeat("中", 4000), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := CutString(tt.in, stringBound)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("CutString(%d units) = (%d units, %v), want (%d units, %v)",
					UTF16Len(tt.in), UTF16Len(got), cut, UTF16Len(tt.want), tt.wantCut)
			}
		})
	}
}

// TestBoundedCut checks the string cut inside JSON values: the cut counts
// the value's units, not its escaped text, and keys are never cut.
func TestBoundedCut(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	q := func(s string) string { return `"` + s + `"` }
	tests := []struct {
		name, in, want string
		wantCut        bool
	}{
		{"exactly the bound", q(a(4000)), q(a(4000)), false},
		{"over", q(a(4100)), q(a(4000)), true},
		{"key never cut", `{` + q(a(5000)) + `:1}`, `{` + q(a(5000)) + `:1}`, false},
		{"escapes count as one unit", q(strings.Repeat(`\n`, 4000)), q(strings.Repeat(`\n`, 4000)), false},
		{"escapes cut by units", q(strings.Repeat(`\n`, 4001)), q(strings.Repeat(`\n`, 4000)), true},
		{"escaped pair straddling", q(a(3999) + `\ud83d\ude00`), q(a(3999)), true},
		{"escaped pair ending at the bound", q(a(3998) + `\ud83d\ude00`), q(a(3998) + "😀"), false},
		{"escaped pair straddling cut", q(a(3999) + `\ud83d\ude00x`), q(a(3999)), true},
		{"raw pair straddling cut", q(a(3999) + "😀x"), q(a(3999)), true},
		{"lone high surrogate at the bound kept", q(a(3999) + `\ud83dxx`), q(a(3999) + `\ud83d`), true},
		{"nested strings", `{"k":[` + q(a(4001)) + `,{"x":` + q(a(10)) + `}]}`, `{"k":[` + q(a(4000)) + `,{"x":` + q(a(10)) + `}]}`, true},
		{"numbers untouched", `[` + strings.Repeat("9", 5000) + `]`, `[` + strings.Repeat("9", 5000) + `]`, false},
		{"duplicate path cuts too", `{"k":"x","k":` + q(a(4001)) + `}`, `{"k":` + q(a(4000)) + `}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut, err := new(Writer).AppendBounded(nil, []byte(tt.in), stringBound)
			if err != nil {
				t.Fatalf("appendBounded: %v", err)
			}
			if string(got) != tt.want || cut != tt.wantCut {
				t.Errorf("new(Writer).AppendBounded(%.40q…) = (%.60q…, %v), want (%.60q…, %v)", tt.in, got, cut, tt.want, tt.wantCut)
			}
		})
	}
}

func TestDecodeRune(t *testing.T) {
	tests := []struct {
		in    string
		r     rune
		width int
	}{
		{"a", 'a', 1},
		{"é", 'é', 2},
		{"中", '中', 3},
		{"😀", '😀', 4},
		{"\uFFFD", utf8.RuneError, 3},
		{"\xff", utf8.RuneError, 1},
		{"\x80", utf8.RuneError, 1},
		{"\xc2", utf8.RuneError, 1},
		{"\xc2a", utf8.RuneError, 1},
		{"\xe2\x82", utf8.RuneError, 2},
		{"\xe0\x80", utf8.RuneError, 1},
		{"\xed\xa0", utf8.RuneError, 1},
		{"\xf0\x9f\x98a", utf8.RuneError, 3},
		{"\xf4\x90", utf8.RuneError, 1},
		{"\xf5", utf8.RuneError, 1},
	}
	for _, tt := range tests {
		r, w := decodeRune(tt.in)
		if r != tt.r || w != tt.width {
			t.Errorf("decodeRune(%q) = (%U, %d), want (%U, %d)", tt.in, r, w, tt.r, tt.width)
		}
	}
}

// TestTreeMatchesStream checks that the duplicate-name fallback writes
// exactly what the streaming writer writes when no name repeats.
func TestTreeMatchesStream(t *testing.T) {
	inputs := []string{
		`{"a":[1,2,{"b":"\u2028\ud800x"}],"c":{"d":null,"e":true,"f":false},"g":"` + strings.Repeat("é", 4100) + `"}`,
		"[\"\xff\",{\"\\u0000\":1.50}]",
		`"plain"`,
		`[]`,
		`{}`,
	}
	for _, in := range inputs {
		stream, scut, err := new(Writer).AppendBounded(nil, []byte(in), stringBound)
		if err != nil {
			t.Fatalf("new(Writer).AppendBounded(%.30q): %v", in, err)
		}
		n, err := ParseTree([]byte(in))
		if err != nil {
			t.Fatalf("ParseTree(%.30q): %v", in, err)
		}
		tree, tcut := AppendNode(nil, n, stringBound)
		if diff := cmp.Diff(string(stream), string(tree)); diff != "" || scut != tcut {
			t.Errorf("tree vs stream for %.30q (cut %v vs %v) (-stream +tree):\n%s", in, scut, tcut, diff)
		}
	}
}

// stringBound is the bound the gateway cuts strings at (ifc.StringBound).
const stringBound = 4000

func u16(s string) int { return len(utf16.Encode([]rune(s))) }
