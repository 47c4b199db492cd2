package jsjson

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// parityScript reads base64 JSON texts, one a line, and prints for each
// JSON.stringify(JSON.parse(TextDecoder(text))) and the same after cutting
// every string to 8 UTF-16 units (dropping a split pair's high half, as
// Gateway decision 1 says), both base64.
const parityScript = `
const lines = require('fs').readFileSync(0, 'utf8').trim().split('\n');
function cut(v) {
  if (typeof v === 'string') {
    if (v.length <= 8) return v;
    let s = v.slice(0, 8);
    const hi = s.charCodeAt(7), lo = v.charCodeAt(8);
    if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) s = s.slice(0, 7);
    return s;
  }
  if (Array.isArray(v)) return v.map(cut);
  if (v && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v)) Object.defineProperty(o, k, {value: cut(v[k]), enumerable: true, writable: true, configurable: true});
    return o;
  }
  return v;
}
const b64 = s => Buffer.from(s).toString('base64');
process.stdout.write(lines.map(l => {
  const v = JSON.parse(new TextDecoder('utf-8').decode(Buffer.from(l, 'base64')));
  return b64(JSON.stringify(v)) + ' ' + b64(JSON.stringify(cut(v)));
}).join('\n') + '\n');
`

// TestJavaScriptParity compares the writer with Node's JSON.parse and
// JSON.stringify on generated inputs: duplicate names, invalid UTF-8, lone
// surrogates, controls, U+2028. Inputs avoid integer-like names and use
// numbers in JavaScript's own spelling, where the gateway deliberately
// differs (Gateway decision 2). Skipped without Node.
func TestJavaScriptParity(t *testing.T) {
	Node, err := exec.LookPath("Node")
	if err != nil || testing.Short() {
		t.Skip("Node not available or -short")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	pieces := []string{"a", "é", "中", "😀", `\ud83d`, `\ude00`, `\ud83d\ude00`, `\u0000`, `\u001f`, `\n`, `\"`, `\\`,
		"\xff", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", `\u2028`, "\u2029", "<", "&", `\/`, "\x7f", `\u00e9`}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(14) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		return b.String()
	}
	keys := []string{`"a"`, `"b"`, `"\u0061"`, `"k\u00e9"`, "\"\xff\"", "\"\xfe\"", `"__proto__"`, `"x😀"`, `"ifc"`}
	nums := []string{"0", "1", "-1", "1.5", "123456", "0.25", "-3.75"}
	var val func(d int) string
	val = func(d int) string {
		switch k := rng.IntN(6); {
		case d > 3 || k == 0:
			return str()
		case k == 1:
			return nums[rng.IntN(len(nums))]
		case k == 2:
			return []string{"true", "false", "null"}[rng.IntN(3)]
		case k == 3:
			var parts []string
			for range rng.IntN(4) {
				parts = append(parts, val(d+1))
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			var parts []string
			for range rng.IntN(5) {
				parts = append(parts, keys[rng.IntN(len(keys))]+":"+val(d+1))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	var inputs []string
	var stdin bytes.Buffer
	for range 2000 {
		s := val(0)
		inputs = append(inputs, s)
		stdin.WriteString(base64.StdEncoding.EncodeToString([]byte(s)) + "\n")
	}
	cmd := exec.Command(Node, "-e", parityScript)
	cmd.Stdin = &stdin
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Node: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("Node answered %d lines for %d inputs", len(lines), len(inputs))
	}
	for i, l := range lines {
		f := strings.Fields(l)
		want, _ := base64.StdEncoding.DecodeString(f[0])
		wantCut, _ := base64.StdEncoding.DecodeString(f[1])
		if got := AppendJS(nil, []byte(inputs[i])); string(got) != string(want) {
			t.Errorf("AppendJS(%q) = %q, JavaScript %q", inputs[i], got, want)
		}
		if got, _, _ := new(Writer).AppendBounded(nil, []byte(inputs[i]), 8); string(got) != string(wantCut) {
			t.Errorf("new(Writer).AppendBounded(%q, 8) = %q, JavaScript %q", inputs[i], got, wantCut)
		}
		if got, want := UTF16LenBytes(AppendJS(nil, []byte(inputs[i]))), u16(string(want)); got != want {
			t.Errorf("length of %q: %d, JavaScript %d", inputs[i], got, want)
		}
	}
}
