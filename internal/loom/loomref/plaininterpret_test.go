package loomref

// The plain reading: jsjson.Members, jsjson.Elements and Interpret read by
// a jsontext decoder reading every token of a copy of the input, the
// reference the readers over jsjson.Scanner (jsjson.Walk, Interpret) are
// tested against on generated and mutated inputs, and a benchmark of
// Interpret against it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/jsjson"
	"github.com/loom-gateway/gateway/internal/loom"
)

// plainObjectMembers is the plain form of jsjson.Members, its reference.
func plainObjectMembers(data []byte, opts ...jsontext.Options) ([]jsjson.Member, error) {
	d := jsontext.NewDecoder(bytes.NewBuffer(data), opts...)
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, jsjson.ErrNotObject
	}
	var ms []jsjson.Member
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // tok is valid only until the next read
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(d.InputOffset())
		ms = append(ms, jsjson.Member{Name: name, Value: jsontext.Value(data[end-len(v) : end])})
	}
	if err := plainReadEnd(d); err != nil {
		return nil, err
	}
	return ms, nil
}

// plainArrayElements is the plain form of jsjson.Elements, its reference.
func plainArrayElements(data []byte, opts ...jsontext.Options) ([]jsontext.Value, error) {
	d := jsontext.NewDecoder(bytes.NewBuffer(data), opts...)
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '[' {
		return nil, jsjson.ErrNotArray
	}
	var vs []jsontext.Value
	for d.PeekKind() != ']' {
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(d.InputOffset())
		vs = append(vs, jsontext.Value(data[end-len(v):end]))
	}
	if err := plainReadEnd(d); err != nil {
		return nil, err
	}
	return vs, nil
}

// plainReadEnd reads the closing delimiter of the value d is in and
// requires nothing but whitespace after it.
func plainReadEnd(d *jsontext.Decoder) error {
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return jsjson.ErrTrailing
	}
	return nil
}

// plainInterpret is the plain form of Interpret, over plainObjectMembers:
// the reference TestInterpretMatchesPlain holds it to.
func plainInterpret(tool loom.Tool, personLookup bool, out Output) ([]byte, error) {
	payload := bytes.Trim(DecodeUTF8(out.Stdout), " \t\r\n")
	isObject := len(payload) > 0 && payload[0] == '{'
	var ms []jsjson.Member
	var valid bool
	if isObject {
		var err error
		ms, err = plainObjectMembers(payload, payloadOptions...) // validates as it goes
		valid = err == nil
	} else {
		valid = len(payload) > 0 && jsontext.Value(payload).IsValid(payloadOptions...)
	}
	if !valid {
		switch {
		case personLookup && out.ExitCode == 1:
			return nil, loom.ErrNotFound
		case personLookup && out.ExitCode == 3:
			return nil, loom.ErrContested
		}
		return nil, loom.ErrNotJSON
	}

	var ok, code, hasProfile, schemaVersion jsontext.Value
	hasSchemaVersion := false
	for _, m := range ms { // the last of repeated names wins, as in JavaScript
		switch m.Name {
		case "ok":
			ok = m.Value
		case "code":
			code = m.Value
		case "hasProfile":
			hasProfile = m.Value
		case "schemaVersion":
			schemaVersion, hasSchemaVersion = m.Value, true
		}
	}

	if isObject && ok.Kind() == 'f' {
		e := &loom.HostRefusedError{}
		if code.Kind() == '"' {
			if s, err := jsjson.UnquoteValue(code); err == nil && plainHostCode(s) {
				e.HostCode, e.HasHostCode = s, true
			}
		}
		return nil, e
	}
	if out.ExitCode != 0 {
		fallback := tool == loom.Profile && out.ExitCode == 1 && isObject && hasProfile.Kind() == 'f'
		if !fallback {
			return nil, &loom.ExitError{Code: out.ExitCode}
		}
	}
	if tool == loom.Search && hasSchemaVersion && !plainIsNumberOne(schemaVersion) {
		return nil, loom.ErrSchemaVersion
	}
	return payload, nil
}

// readerErrClass names the errors of the readers whose difference could
// matter to a caller: the message of a syntax error may differ (jsontext's
// own against jsjson.ErrSyntax), its class may not.
func readerErrClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, jsjson.ErrNotObject):
		return "not object"
	case errors.Is(err, jsjson.ErrNotArray):
		return "not array"
	case errors.Is(err, jsjson.ErrTrailing):
		return "trailing"
	}
	return "invalid"
}

// readerOptions are the option sets the package reads JSON with: the
// payload's, PersonLookup's and parseInput's, and jsontext's defaults
// (configuration and ceiling record).
var readerOptions = []struct {
	name string
	opts []jsontext.Options
}{
	{"payload", payloadOptions},
	{"duplicates", []jsontext.Options{jsontext.AllowDuplicateNames(true)}},
	{"default", nil},
}

// membersEqual compares members by name and value bytes.
var membersEqual = cmp.Options{
	cmp.Comparer(func(a, b jsontext.Value) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }),
}

// checkReaders holds jsjson.Members and jsjson.Elements to the plain ones
// on data under every option set, and jsjson.Walk alone, which Interpret reads
// payloads with and which no jsontext check follows, to the plain ones
// under payloadOptions.
func checkReaders(t *testing.T, data []byte) {
	t.Helper()
	for _, open := range []byte{'{', '['} {
		var ms []jsjson.Member
		_, err := jsjson.Walk(data, open, func(name []byte, v jsontext.Value) {
			m := jsjson.Member{Value: v}
			if name != nil {
				m.Name = jsjson.NameString(name)
			}
			ms = append(ms, m)
		})
		var pms []jsjson.Member
		var perr error
		if open == '{' {
			pms, perr = plainObjectMembers(bytes.Clone(data), payloadOptions...)
		} else {
			var vs []jsontext.Value
			vs, perr = plainArrayElements(bytes.Clone(data), payloadOptions...)
			for _, v := range vs {
				pms = append(pms, jsjson.Member{Value: v})
			}
		}
		if g, w := readerErrClass(err), readerErrClass(perr); g != w {
			t.Fatalf("walk(%q, %c): %s (%v), plain %s (%v)", data, open, g, err, w, perr)
		}
		if perr != nil {
			ms = nil
		}
		if diff := cmp.Diff(pms, ms, membersEqual); diff != "" {
			t.Fatalf("walk(%q, %c) (-plain +scanner):\n%s", data, open, diff)
		}
	}
	for _, o := range readerOptions {
		ms, err := jsjson.Members(data, o.opts...)
		pms, perr := plainObjectMembers(bytes.Clone(data), o.opts...)
		if g, w := readerErrClass(err), readerErrClass(perr); g != w {
			t.Fatalf("jsjson.Members(%q, %s): %s (%v), plain %s (%v)", data, o.name, g, err, w, perr)
		}
		if diff := cmp.Diff(pms, ms, membersEqual); diff != "" {
			t.Fatalf("jsjson.Members(%q, %s) (-plain +scanner):\n%s", data, o.name, diff)
		}
		vs, err := jsjson.Elements(data, o.opts...)
		pvs, perr := plainArrayElements(bytes.Clone(data), o.opts...)
		if g, w := readerErrClass(err), readerErrClass(perr); g != w {
			t.Fatalf("jsjson.Elements(%q, %s): %s (%v), plain %s (%v)", data, o.name, g, err, w, perr)
		}
		if diff := cmp.Diff(pvs, vs, membersEqual); diff != "" {
			t.Fatalf("jsjson.Elements(%q, %s) (-plain +scanner):\n%s", data, o.name, diff)
		}
	}
}

var interpretTools = []loom.Tool{loom.Search, loom.Profile, loom.People, loom.CalendarList, loom.PageRead}

// checkInterpret holds Interpret to the plain one on stdout for every tool,
// exit code and person lookup.
func checkInterpret(t *testing.T, stdout []byte) (ok int) {
	t.Helper()
	for _, tool := range interpretTools {
		for _, code := range []int{0, 1, 2, 3, -1} {
			for _, lookup := range []bool{false, true} {
				out := Output{Stdout: stdout, ExitCode: code}
				got, err := Interpret(tool, lookup, out)
				want, perr := plainInterpret(tool, lookup, Output{Stdout: bytes.Clone(stdout), ExitCode: code})
				if !bytes.Equal(got, want) || (got == nil) != (want == nil) || !reflect.DeepEqual(err, perr) {
					t.Fatalf("Interpret(%s, %v, exit %d, %q) = %q, %#v; plain %q, %#v", tool, lookup, code, stdout, got, err, want, perr)
				}
				if err == nil {
					ok++
				}
			}
		}
	}
	return ok
}

func TestReadersMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	n := 30000
	if testing.Short() || raceEnabled {
		n = 3000
	}
	seen := map[string]int{}
	for i := range n {
		var p []byte
		switch i % 3 {
		case 0:
			p = GenStdout(rng)
		case 1:
			p = GenListPayload(rng, []loom.Tool{loom.Search, loom.CalendarList, loom.PageRead}[rng.IntN(3)])
		default:
			var b bytes.Buffer
			GenJSON(rng, &b, 4)
			p = b.Bytes()
		}
		checkReaders(t, p)
		_, err := jsjson.Members(p)
		seen["object "+readerErrClass(err)]++
		_, err = jsjson.Elements(p, payloadOptions...)
		seen["array "+readerErrClass(err)]++
	}
	for _, v := range []string{
		"", " ", "{", "[", "{}", "[]", " {} ", "{}}", "[]]", "{} x", "[] 1", "{},", "[1,]", `{"a":1,}`, `{"a" 1}`, `{,}`,
		"1", "1x", "truex", "-", "01", `"a"`, `"a" x`, "\"\xff\"", `"\ud800"`, "\"\xff\" {}", `"\ud800" x`, "nul", "]", "}",
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\ud800":1,"\udbff":2}`, "{\"\xff\":1,\"\xfe\":2}", "{\"a\":\"\xff\"} x",
		`{"a":"\ud800"} x`, `[{"a":1,"a":2}] x`, "[\"\xff\"]", `{"a":[1,{"b":null,"b":2}]}`, "\ufeff{}",
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		`{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
		`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	} {
		checkReaders(t, []byte(v))
	}
	// Every class under the strict options as well as the payload's.
	for _, class := range []string{"object nil", "object not object", "object trailing", "object invalid", "array nil", "array not array", "array trailing", "array invalid"} {
		if seen[class] == 0 {
			t.Errorf("no generated input gave %s: %v", class, seen)
		}
	}
}

func TestInterpretMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	n := 6000
	if testing.Short() || raceEnabled {
		n = 1000
	}
	ok, refused := 0, 0
	for range n {
		p := GenStdout(rng)
		ok += checkInterpret(t, p)
		_, err := Interpret(loom.Search, false, Output{Stdout: p})
		if _, isRefusal := errors.AsType[*loom.HostRefusedError](err); isRefusal {
			refused++
		}
	}
	total := n * len(interpretTools) * 10
	if ok < total/20 || ok > total*9/10 || refused == 0 {
		t.Errorf("%d of %d readings succeeded, %d refused: the generator should give every outcome", ok, total, refused)
	}
	for _, p := range [][]byte{
		searchBenchPayload(2000), []byte(`{"ok":false,"code":"E"}`), []byte(`{"ok":false,"c\u006fde":"E","ok":true}`),
		[]byte(`{"hasProfile":false}`), []byte(`{"schemaVersion":0.1e1}`), []byte(`{"schemaVersion":"1"}`),
		[]byte("\xef\xbb\xbf{\"ok\":false,\"code\":\"\xff\"}"), []byte(`{"ok":false,"code":"\ud800"}`), []byte("[1,2] "), []byte(" 1 "),
		[]byte(`{"ok":false,}`), []byte(`{"ok":false,,"code":"E"}`), []byte(`{"ok" false}`), []byte(`{"ok":false}{}`), []byte(`[1,]`),
		[]byte(`{"ok":false`), []byte(`{"ok":[false}`), []byte(`{"ok":false] `), []byte(`{,"ok":false}`), []byte(`{"ok":false "code":"E"}`),
	} {
		checkInterpret(t, p)
	}
}

// FuzzInterpretMatchesPlain holds Interpret, jsjson.Members and
// jsjson.Elements to the plain readings on arbitrary stdout.
func FuzzInterpretMatchesPlain(f *testing.F) {
	rng := rand.New(rand.NewPCG(27, 28))
	for range 100 {
		f.Add(GenStdout(rng))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		checkReaders(t, p)
		checkInterpret(t, p)
	})
}

// BenchmarkInterpret compares Interpret with the plain reading on a
// search payload of 48 hits (10 KB) and one of 25k hits (5 MB).
func BenchmarkInterpret(b *testing.B) {
	for _, hits := range []int{48, 25000} {
		p := searchBenchPayload(hits)
		for _, c := range []struct {
			name      string
			interpret func(loom.Tool, bool, Output) ([]byte, error)
		}{{"scanner", Interpret}, {"plain", plainInterpret}} {
			b.Run(fmt.Sprintf("hits-%d/%s", hits, c.name), func(b *testing.B) {
				b.SetBytes(int64(len(p)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.interpret(loom.Search, false, Output{Stdout: p}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// plainHostCode is the short-code rule of host codes, by regular
// expression: the reference for hostCode.
func plainHostCode(s string) bool {
	return regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`).MatchString(s)
}

// plainIsNumberOne is isNumberOne's plain form: the number's float64 value
// is 1.
func plainIsNumberOne(v jsontext.Value) bool {
	if v.Kind() != '0' {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && f == 1
}
