package ifc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

func TestCutToBudget(t *testing.T) {
	tests := []struct {
		env    string
		budget int
		want   string
		cut    bool
	}{
		{`{"a":1,"b":2}`, 13, `{"a":1,"b":2}`, false},
		{`{"a":1,"b":2}`, 12, `{"a":1}`, true},
		{`{"a":1,"b":2}`, 7, `{"a":1}`, true},
		{`{"a":1,"b":2}`, 6, `{}`, true},
		{`{"a":{"x":[1,2,3]},"b":2}`, 17, `{"a":{"x":[1,2]}}`, true},
		{`{"a":{"x":[1,2,3]},"b":2}`, 16, `{"a":{"x":[1]}}`, true},
		{`{"a":{"x":[1,2,3]},"b":2}`, 14, `{"a":{"x":[]}}`, true},
		{`{"a":{"x":[1,2,3]},"b":2}`, 13, `{"a":{}}`, true},
		{`{"a":{"x":[1,2,3]},"b":2}`, 9, `{"a":{}}`, true},
		{`{"a":[],"b":{},"c":"é"}`, 23, `{"a":[],"b":{},"c":"é"}`, false},
		{`{"a":[],"b":{},"c":"é"}`, 22, `{"a":[],"b":{}}`, true},
		{`{"s":"a\"b","t":"😀"}`, 20, `{"s":"a\"b"}`, true},
		{`{"s":"a\"b","t":"😀"}`, 21, `{"s":"a\"b","t":"😀"}`, false},
		{`{"a":1}`, 1, `{}`, true},
	}
	for _, tt := range tests {
		got, cut := cutToBudget([]byte(tt.env), tt.budget)
		if string(got) != tt.want || cut != tt.cut {
			t.Errorf("cutToBudget(%s, %d) = %s, %v; want %s, %v", tt.env, tt.budget, got, cut, tt.want, tt.cut)
		}
	}
}

// TestMeasureHugeEnvelope: an envelope larger than the bound is cut to a
// prefix, members in order, the result is marked truncated and the whole
// answer stays within OutputBound units.
func TestMeasureHugeEnvelope(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"query":"q","source_status":{`)
	for i := range 40000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"s%d":"ok"`, i)
	}
	b.WriteString(`},"warnings":["w"]}`)
	r := Measure(Input{OutputID: "o", Command: "search", Envelope: jsontext.Value(b.String()), Rows: rows(`{"a":1}`, `{"a":2}`)})
	out := r.AppendJSON(nil, nil)
	if n := len(utf16.Encode([]rune(string(out)))); n > OutputBound {
		t.Errorf("answer is %d units, over %d", n, OutputBound)
	}
	if n := len(utf16.Encode([]rune(string(out)))); n < OutputBound-LabelAllowance-20 {
		t.Errorf("answer is %d units: the envelope should fill what the bound leaves", n)
	}
	if !r.Truncated || r.Omitted != 2 || len(r.Entries) != 0 {
		t.Errorf("truncated %v omitted %d entries %d, want truncated with both rows omitted", r.Truncated, r.Omitted, len(r.Entries))
	}
	if !json.Valid(out) || !strings.HasPrefix(b.String(), strings.TrimRight(string(r.Envelope), "}")) {
		t.Errorf("envelope is not a well-formed prefix: %.80s…%s", r.Envelope, r.Envelope[len(r.Envelope)-40:])
	}
}

// FuzzCutToBudget: on any envelope the jsjson.Writer writes and any budget, the
// cut is well formed, within budget, a prefix of the envelope with its
// containers closed, and no cut at all when the envelope fits.
func FuzzCutToBudget(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"d"}],"e":{}}`, `{"q":"\ud800x","w":["😀","\""]}`, `[1,[2,[3]]]`, `"s"`, `7`} {
		f.Add([]byte(s), 10)
	}
	f.Fuzz(func(t *testing.T, data []byte, budget int) {
		env, _, err := new(jsjson.Writer).AppendBounded(nil, data, StringBound)
		if err != nil || budget < 2 || budget > 1<<20 {
			return
		}
		got, cut := cutToBudget(env, budget)
		units := jsjson.UTF16LenBytes(env)
		if !cut {
			if units > budget || string(got) != string(env) {
				t.Fatalf("not cut: %s of %d units for budget %d", got, units, budget)
			}
			return
		}
		if units <= budget {
			t.Fatalf("%s cut though it fits in %d", env, budget)
		}
		if env[0] != '{' && env[0] != '[' {
			if string(got) != "{}" {
				t.Fatalf("a scalar %s cut to %s", env, got)
			}
			return
		}
		if !json.Valid(got) || jsjson.UTF16LenBytes(got) > budget {
			t.Fatalf("cut %s of %s: invalid or over %d", got, env, budget)
		}
		if !strings.HasPrefix(string(env), strings.TrimRight(string(got), "}]")) {
			t.Fatalf("cut %s is not a prefix of %s", got, env)
		}
	})
}
