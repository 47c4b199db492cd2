package result

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/store"
)

// FuzzWrite checks that Write never panics, that it fails with
// ErrUnheldHandle exactly when some string or name of a valid value holds an
// unheld token-shaped run, and that what it writes is valid JSON holding
// only held tokens.
func FuzzWrite(f *testing.F) {
	for _, s := range []string{
		`null`, `0.10`, `"x"`, `{}`, `[]`,
		`{"best":"` + tokA + `"}`,
		`[{"@link":"` + tokB + `"},"` + tokB + `"]`,
		`{"note":"see ` + tokA + ` and ` + tokB + `."}`,
		`{"` + tokA + `":1}`,
		`{"@link":"https://example.com"}`,
		`{"@link":"` + tokA + `","b":1}`,
		`"` + tokA + `f"`,
		`"cfh:a:abcde"`,
		`{"a":"` + tokU + `"}`,
		`"\u0063fh:v:abcde"`,
		"\"a\xffb\"",
		`{"z":1.50e+10,"a":[-0,1E2,true,null]}`,
		`1 2`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	held := map[string]bool{}
	for _, r := range heldABC {
		held[r.Token] = true
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		res, links, err := Write(value, "run1", heldABC)
		if err != nil {
			if diff := cmp.Diff(store.Result{}, res); diff != "" || links != 0 {
				t.Fatalf("Write error %v with %d links, result (-want +got):\n%s", err, links, diff)
			}
		}
		// Names answers what Write answers, without the table: an error
		// of Write's is Names' error, or an unheld name Names lists.
		names, nerr := Names(value)
		switch {
		case errors.Is(nerr, ErrTooManyNames):
		case errors.Is(nerr, ErrInvalidValue) && errors.Is(err, ErrUnheldHandle):
			// Write stops at an unheld token before the fault Names
			// reads on to; the listener passes only valid JSON.
		case nerr != nil && (err == nil || codeOf(err) != codeOf(nerr)):
			t.Fatalf("Names(%q) error = %v, Write's = %v", value, nerr, err)
		case nerr == nil && err == nil:
			for _, n := range names {
				if !held[n] {
					t.Fatalf("Names(%q) = %q: %q is not held, yet Write took it", value, names, n)
				}
			}
		case nerr == nil:
			if !errors.Is(err, ErrUnheldHandle) {
				t.Fatalf("Names(%q) took it, Write's error = %v", value, err)
			}
			unheld := false
			for _, n := range names {
				unheld = unheld || !held[n]
			}
			if !unheld {
				t.Fatalf("Names(%q) = %q, all held, yet Write = %v", value, names, err)
			}
		}
		if valid, unheld := scan(value, held); valid {
			if unheld != errors.Is(err, ErrUnheldHandle) {
				t.Fatalf("Write(%q) error = %v, input has unheld token: %v", value, err, unheld)
			}
			if !unheld && err != nil {
				t.Fatalf("Write(%q) error = %v for a valid value", value, err)
			}
		}
		if err != nil {
			return
		}
		if !res.Value.IsValid() {
			t.Fatalf("Write(%q) value %q is not valid JSON", value, res.Value)
		}
		for _, m := range store.TokenPattern.FindAll(res.Value, -1) {
			if !held[string(m)] {
				t.Fatalf("Write(%q) value %q holds unheld %q", value, res.Value, m)
			}
		}
		if n := bytes.Count(res.Value, []byte(`{"@link":"doc-run1-`)); n < links {
			t.Fatalf("Write(%q) = %d links, value %q shows %d", value, links, res.Value, n)
		}
		if len(res.Documents) > len(heldABC) || len(res.Documents) > links {
			t.Fatalf("Write(%q) = %d documents for %d links", value, len(res.Documents), links)
		}
	})
}

// scan reports whether value is exactly one JSON value (invalid UTF-8
// allowed), and whether any of its strings or names holds a token-shaped
// run that is not held: an oracle written without Write's link rules.
func scan(value []byte, held map[string]bool) (valid, unheld bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(value), jsontext.AllowInvalidUTF8(true))
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			_, n := dec.StackIndex(0)
			return n == 1, unheld
		}
		if err != nil {
			return false, unheld
		}
		if tok.Kind() == '"' {
			for _, m := range store.TokenPattern.FindAllString(tok.String(), -1) {
				if !held[m] {
					unheld = true
				}
			}
		}
	}
}

// codeOf is the class of a Write or Names error: what the gateway answers.
func codeOf(err error) string {
	switch {
	case errors.Is(err, ErrUnheldHandle):
		return "unheld"
	case errors.Is(err, ErrInvalidValue), errors.Is(err, ErrTooDeep):
		return "invalid"
	}
	return err.Error()
}
