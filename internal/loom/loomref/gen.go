package loomref

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/loom-gateway/gateway/internal/loom"
)

// GenStdout writes a random loom stdout: mostly an object with the members
// Interpret reads (spelled plainly, with escapes, repeated, or almost),
// sometimes any JSON value, a byte order mark or invalid UTF-8, and now and
// then damaged.
func GenStdout(rng *rand.Rand) []byte {
	var b bytes.Buffer
	if rng.IntN(12) == 0 {
		b.WriteString("\xef\xbb\xbf")
	}
	if rng.IntN(4) == 0 {
		b.WriteString([]string{" ", "\n", "\t\r\n"}[rng.IntN(3)])
	}
	if rng.IntN(5) == 0 {
		GenJSON(rng, &b, 3)
	} else {
		names := []string{`"ok"`, `"code"`, `"hasProfile"`, `"schemaVersion"`, `"\u006fk"`, `"c\u006fde"`, `"hasProfil\u0065"`,
			`"schemaVersion "`, `"OK"`, `"ok\ud800"`, "\"o\xffk\"", `"hits"`, `"x"`, `""`}
		values := []string{`false`, `true`, `null`, `"E_BUSY"`, `"\u0045_X"`, `"\ud800"`, "\"\xff\"", `1`, `1.0`, `0.1e1`, `1e0`,
			`2`, `-1`, `"1"`, `{}`, `[]`, `{"ok":false}`, `[false]`}
		b.WriteByte('{')
		for i := range rng.IntN(7) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(names[rng.IntN(len(names))])
			if rng.IntN(6) == 0 {
				b.WriteByte(' ')
			}
			b.WriteByte(':')
			if rng.IntN(4) == 0 {
				GenJSON(rng, &b, 2)
			} else {
				b.WriteString(values[rng.IntN(len(values))])
			}
		}
		b.WriteByte('}')
	}
	if rng.IntN(4) == 0 {
		b.WriteString([]string{" ", "\n", "\r\n "}[rng.IntN(3)])
	}
	p := b.Bytes()
	for range rng.IntN(3) { // damage it
		if rng.IntN(3) != 0 || len(p) == 0 {
			break
		}
		i := rng.IntN(len(p))
		switch rng.IntN(5) {
		case 0:
			p = p[:i]
		case 1:
			p = append(p[:i:i], p[i+1:]...)
		case 2:
			p[i] = `{}[],:"\ 0-.eE+tfnux`[rng.IntN(20)]
		case 3:
			p = append(p, []string{" ", "}", "1", " {}", "\n{}", "\x00", ","}[rng.IntN(7)]...)
		case 4:
			p = append(p[:i:i], append([]byte{"\xff\xe2\x82\xed\xa0\x80"[rng.IntN(6)]}, p[i:]...)...)
		}
	}
	return p
}

// GenListPayload writes a random payload for tool: mostly well formed,
// with repeated and escaped member names, odd values for the list and
// envelope keys, whitespace, and now and then a syntax error.
func GenListPayload(rng *rand.Rand, tool loom.Tool) []byte {
	var b bytes.Buffer
	ws := func() {
		if rng.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n  "}[rng.IntN(4)])
		}
	}
	values := []string{`null`, `1`, `-0.50e3`, `"s"`, `"\u00e9\ud83d\ude00"`, `"\udc00"`, "\"\xff\xfe\"", `true`, `{}`, `[]`, `{"a":[1,{"b":null}],"a":2}`, `[{"ifc":{"confidentiality":["w"]}},{"x":1}]`}
	elem := func() string {
		if rng.IntN(3) == 0 {
			return values[rng.IntN(len(values))]
		}
		return fmt.Sprintf(`{"id":"h%d","score":%d.%d,"ifc":{"confidentiality":["w"]},"t":"a\"b\\c"}`, rng.IntN(100), rng.IntN(10), rng.IntN(100))
	}
	list := func() string {
		if rng.IntN(8) == 0 {
			return values[rng.IntN(len(values))]
		}
		var l strings.Builder
		l.WriteByte('[')
		for i := range rng.IntN(6) {
			if i > 0 {
				l.WriteByte(',')
			}
			if rng.IntN(3) == 0 {
				l.WriteString(" ")
			}
			l.WriteString(elem())
		}
		l.WriteByte(']')
		return l.String()
	}
	if tool == loom.CalendarList {
		ws()
		b.WriteString(list())
		ws()
	} else {
		names := []string{`"hits"`, `"pages"`, `"query"`, `"source_status"`, `"warnings"`, `"truncated"`, `"totalPages"`, `"omittedViews"`, `"hit\u0073"`, `"\u0071uery"`, `"other"`, `"ok"`, `"Hits"`, `"hits "`, "\"h\xffits\""}
		ws()
		b.WriteByte('{')
		for i := range rng.IntN(9) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			name := names[rng.IntN(len(names))]
			b.WriteString(name)
			ws()
			b.WriteByte(':')
			ws()
			if strings.Contains(strings.ToLower(name), "it") || strings.Contains(name, "pages") {
				b.WriteString(list())
			} else {
				b.WriteString(values[rng.IntN(len(values))])
			}
			ws()
		}
		b.WriteByte('}')
		ws()
	}
	p := b.Bytes()
	switch rng.IntN(12) {
	case 0: // cut short
		p = p[:rng.IntN(len(p)+1)]
	case 1: // trailing data
		p = append(p, " {}"...)
	case 2: // a stray byte
		if len(p) > 0 {
			p[rng.IntN(len(p))] = "{}[],:\"x"[rng.IntN(8)]
		}
	case 3: // a comma before a closing bracket, often the last
		end := len(p)
		if rng.IntN(2) == 0 {
			end = rng.IntN(len(p) + 1)
		}
		if i := bytes.LastIndexAny(p[:end], "}]"); i > 0 {
			p = append(p[:i:i], append([]byte{','}, p[i:]...)...)
		}
	}
	return p
}

// GenJSON writes a random JSON value of at most depth levels, with the
// string, number and literal forms the grammar has to get right.
func GenJSON(rng *rand.Rand, b *bytes.Buffer, depth int) {
	if rng.IntN(5) == 0 {
		b.WriteString([]string{" ", "\n", "\t", "\r\n "}[rng.IntN(4)])
	}
	k := rng.IntN(9)
	if depth <= 0 {
		k = rng.IntN(6)
	}
	switch k {
	case 0, 1:
		b.WriteByte('"')
		for range rng.IntN(6) {
			b.WriteString([]string{"a", " ", "é", "😀", "\\n", "\\\"", "\\\\", "\\/", "\\b", "\\u00e9", "\\uD83D\\uDE00", "\\ud800", "\\udc00", "\xff", "\xe2\x82", "\x7f"}[rng.IntN(16)])
		}
		b.WriteByte('"')
	case 2, 3:
		b.WriteString([]string{"0", "-0", "1", "-12", "1.50", "0.0e0", "1E+9", "2e-3", "1e400", "-0.0", "123456789012345678901234567890"}[rng.IntN(11)])
	case 4, 5:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case 6, 7:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString([]string{`"a"`, `"hits"`, `"\u0061"`, `""`}[rng.IntN(4)])
			b.WriteByte(':')
			GenJSON(rng, b, depth-1)
		}
		b.WriteByte('}')
	case 8:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			GenJSON(rng, b, depth-1)
		}
		b.WriteByte(']')
	}
	if rng.IntN(5) == 0 {
		b.WriteByte(' ')
	}
}
