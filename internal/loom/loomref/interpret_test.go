package loomref

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
)

func TestInterpret(t *testing.T) {
	tests := []struct {
		name         string
		tool         loom.Tool
		personLookup bool
		stdout       string
		exit         int
		want         string // payload on success
		wantErr      error  // matched with errors.Is, or compared for *HostRefusedError / *ExitError
	}{
		// Step 2: one JSON document.
		{name: "object", tool: loom.Search, stdout: `{"hits":[]}`, want: `{"hits":[]}`},
		{name: "surrounding whitespace", tool: loom.PageRead, stdout: " \r\n\t{\"a\":1}\n\n", want: `{"a":1}`},
		{name: "leading BOM dropped", tool: loom.PageRead, stdout: "\ufeff{\"a\":1}", want: `{"a":1}`},
		{name: "BOM then whitespace", tool: loom.PageRead, stdout: "\ufeff \n{\"a\":1}", want: `{"a":1}`},
		{name: "second BOM is not whitespace", tool: loom.PageRead, stdout: "\ufeff\ufeff{}", wantErr: loom.ErrNotJSON},
		{name: "BOM after whitespace", tool: loom.PageRead, stdout: " \ufeff{}", wantErr: loom.ErrNotJSON},
		{name: "array", tool: loom.CalendarList, stdout: `[{"id":1}]`, want: `[{"id":1}]`},
		{name: "scalar", tool: loom.PageRead, stdout: `42`, want: `42`},
		{name: "null", tool: loom.PageRead, stdout: `null`, want: `null`},
		{name: "invalid UTF-8 replaced", tool: loom.PageRead, stdout: "{\"a\":\"x\xffy\xe2\x82z\"}", want: "{\"a\":\"x\ufffdy\ufffdz\"}"},
		{name: "duplicate names allowed", tool: loom.PageRead, stdout: `{"a":1,"a":2}`, want: `{"a":1,"a":2}`},
		{name: "escaped lone surrogate allowed", tool: loom.PageRead, stdout: `{"a":"\ud800"}`, want: `{"a":"\ud800"}`},
		{name: "empty", tool: loom.PageRead, stdout: ``, wantErr: loom.ErrNotJSON},
		{name: "whitespace only", tool: loom.PageRead, stdout: " \n", wantErr: loom.ErrNotJSON},
		{name: "BOM only", tool: loom.PageRead, stdout: "\ufeff", wantErr: loom.ErrNotJSON},
		{name: "NDJSON", tool: loom.Search, stdout: "{\"a\":1}\n{\"b\":2}\n", wantErr: loom.ErrNotJSON},
		{name: "trailing garbage", tool: loom.Search, stdout: `{"hits":[]} done`, wantErr: loom.ErrNotJSON},
		{name: "half a document", tool: loom.Search, stdout: `{"hits":[{"id":1},`, wantErr: loom.ErrNotJSON},
		{name: "text", tool: loom.Profile, stdout: "loom: broker unreachable\n", wantErr: loom.ErrNotJSON},
		{name: "NUL", tool: loom.Profile, stdout: "\x00", wantErr: loom.ErrNotJSON},
		{name: "non-JSON whitespace", tool: loom.Profile, stdout: "\u00a0{}", wantErr: loom.ErrNotJSON},
		{name: "not JSON, exit 2", tool: loom.PageRead, stdout: "usage", exit: 2, wantErr: loom.ErrNotJSON},

		// Step 2: person outcomes, only when stdout is not JSON.
		{name: "people exit 1", tool: loom.People, personLookup: true, stdout: "no person matches\n", exit: 1, wantErr: loom.ErrNotFound},
		{name: "people exit 3", tool: loom.People, personLookup: true, stdout: "2 people match\n", exit: 3, wantErr: loom.ErrContested},
		{name: "people exit 1 empty", tool: loom.People, personLookup: true, exit: 1, wantErr: loom.ErrNotFound},
		{name: "people exit 2", tool: loom.People, personLookup: true, stdout: "x", exit: 2, wantErr: loom.ErrNotJSON},
		{name: "people exit 0 not JSON", tool: loom.People, personLookup: true, stdout: "x", wantErr: loom.ErrNotJSON},
		{name: "search person exit 1", tool: loom.Search, personLookup: true, stdout: "x", exit: 1, wantErr: loom.ErrNotFound},
		{name: "search person exit 3", tool: loom.Search, personLookup: true, stdout: "x", exit: 3, wantErr: loom.ErrContested},
		{name: "search without person exit 1", tool: loom.Search, stdout: "x", exit: 1, wantErr: loom.ErrNotJSON},
		{name: "people exit 1 with JSON", tool: loom.People, personLookup: true, stdout: `{"name":"x"}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "people signal", tool: loom.People, personLookup: true, stdout: "", exit: -1, wantErr: loom.ErrNotJSON},

		// Step 3: ok exactly false.
		{name: "ok false with code", tool: loom.Search, stdout: `{"ok":false,"code":"broker_down"}`, wantErr: &loom.HostRefusedError{HostCode: "broker_down", HasHostCode: true}},
		{name: "ok false exit 0", tool: loom.PageRead, stdout: `{"ok":false}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false exit 2", tool: loom.PageRead, stdout: `{"ok":false,"code":"x"}`, exit: 2, wantErr: &loom.HostRefusedError{HostCode: "x", HasHostCode: true}},
		{name: "ok false beats person", tool: loom.People, personLookup: true, stdout: `{"ok":false,"code":"x"}`, exit: 1, wantErr: &loom.HostRefusedError{HostCode: "x", HasHostCode: true}},
		{name: "ok false beats profile fallback", tool: loom.Profile, stdout: `{"ok":false,"hasProfile":false}`, exit: 1, wantErr: &loom.HostRefusedError{}},
		{name: "ok false code number", tool: loom.PageRead, stdout: `{"ok":false,"code":7}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false code null", tool: loom.PageRead, stdout: `{"ok":false,"code":null}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false code empty string", tool: loom.PageRead, stdout: `{"code":"","ok":false}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false code of 64", tool: loom.PageRead, stdout: `{"ok":false,"code":"` + strings.Repeat("a", 64) + `"}`, wantErr: &loom.HostRefusedError{HostCode: strings.Repeat("a", 64), HasHostCode: true}},
		{name: "ok false code of 65 dropped", tool: loom.PageRead, stdout: `{"ok":false,"code":"` + strings.Repeat("a", 65) + `"}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false huge code dropped", tool: loom.PageRead, stdout: `{"ok":false,"code":"` + strings.Repeat("x", 1<<20) + `"}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false free text dropped", tool: loom.PageRead, stdout: `{"ok":false,"code":"open /etc/loom: denied"}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false code with a dot, colon and dash", tool: loom.PageRead, stdout: `{"ok":false,"code":"broker.down:v2-x_y"}`, wantErr: &loom.HostRefusedError{HostCode: "broker.down:v2-x_y", HasHostCode: true}},
		{name: "ok false escaped code", tool: loom.PageRead, stdout: `{"ok":false,"code":"a\u0062"}`, wantErr: &loom.HostRefusedError{HostCode: "ab", HasHostCode: true}},
		{name: "ok false escaped name", tool: loom.PageRead, stdout: `{"\u006fk":false}`, wantErr: &loom.HostRefusedError{}},
		{name: "ok false inside an array", tool: loom.CalendarList, stdout: `[{"ok":false}]`, want: `[{"ok":false}]`},
		{name: "ok false nested", tool: loom.PageRead, stdout: `{"x":{"ok":false}}`, want: `{"x":{"ok":false}}`},
		{name: "ok 0", tool: loom.PageRead, stdout: `{"ok":0}`, want: `{"ok":0}`},
		{name: "ok null", tool: loom.PageRead, stdout: `{"ok":null}`, want: `{"ok":null}`},
		{name: "ok string false", tool: loom.PageRead, stdout: `{"ok":"false"}`, want: `{"ok":"false"}`},
		{name: "ok true", tool: loom.PageRead, stdout: `{"ok":true}`, want: `{"ok":true}`},
		{name: "duplicate ok last wins false", tool: loom.PageRead, stdout: `{"ok":true,"ok":false}`, wantErr: &loom.HostRefusedError{}},
		{name: "duplicate ok last wins true", tool: loom.PageRead, stdout: `{"ok":false,"ok":true}`, want: `{"ok":false,"ok":true}`},
		{name: "duplicate code last wins", tool: loom.PageRead, stdout: `{"ok":false,"code":"a","code":7}`, wantErr: &loom.HostRefusedError{}},

		// Step 4: exit code, profile fallback.
		{name: "exit 1 with JSON", tool: loom.PageRead, stdout: `{"a":1}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "exit 2 with JSON", tool: loom.Search, stdout: `{"hits":[]}`, exit: 2, wantErr: &loom.ExitError{Code: 2}},
		{name: "signal with JSON", tool: loom.Search, stdout: `{"hits":[]}`, exit: -1, wantErr: &loom.ExitError{Code: -1}},
		{name: "profile fallback", tool: loom.Profile, stdout: `{"hasProfile":false,"name":"x"}`, exit: 1, want: `{"hasProfile":false,"name":"x"}`},
		{name: "profile exit 2 hasProfile false", tool: loom.Profile, stdout: `{"hasProfile":false}`, exit: 2, wantErr: &loom.ExitError{Code: 2}},
		{name: "profile exit 1 hasProfile true", tool: loom.Profile, stdout: `{"hasProfile":true}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "profile exit 1 hasProfile null", tool: loom.Profile, stdout: `{"hasProfile":null}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "profile exit 1 hasProfile missing", tool: loom.Profile, stdout: `{}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "profile exit 1 hasProfile 0", tool: loom.Profile, stdout: `{"hasProfile":0}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "profile exit 1 array", tool: loom.Profile, stdout: `[{"hasProfile":false}]`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "profile duplicate hasProfile last wins", tool: loom.Profile, stdout: `{"hasProfile":false,"hasProfile":true}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "other tool hasProfile false exit 1", tool: loom.People, stdout: `{"hasProfile":false}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "profile exit 0 hasProfile false", tool: loom.Profile, stdout: `{"hasProfile":false}`, want: `{"hasProfile":false}`},

		// Step 5: schemaVersion, search only.
		{name: "schemaVersion 1", tool: loom.Search, stdout: `{"schemaVersion":1,"hits":[]}`, want: `{"schemaVersion":1,"hits":[]}`},
		{name: "schemaVersion 1.0", tool: loom.Search, stdout: `{"schemaVersion":1.0,"hits":[]}`, want: `{"schemaVersion":1.0,"hits":[]}`},
		{name: "schemaVersion 1e0", tool: loom.Search, stdout: `{"schemaVersion":1e0,"hits":[]}`, want: `{"schemaVersion":1e0,"hits":[]}`},
		{name: "schemaVersion 0.1e1", tool: loom.Search, stdout: `{"schemaVersion":0.1e1}`, want: `{"schemaVersion":0.1e1}`},
		{name: "schemaVersion absent", tool: loom.Search, stdout: `{"hits":[]}`, want: `{"hits":[]}`},
		{name: "schemaVersion string", tool: loom.Search, stdout: `{"schemaVersion":"1","hits":[]}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion null", tool: loom.Search, stdout: `{"schemaVersion":null,"hits":[]}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion 2", tool: loom.Search, stdout: `{"schemaVersion":2,"hits":[]}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion true", tool: loom.Search, stdout: `{"schemaVersion":true,"hits":[]}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion 1.5", tool: loom.Search, stdout: `{"schemaVersion":1.5}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion array", tool: loom.Search, stdout: `{"schemaVersion":[1]}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion duplicate last wins bad", tool: loom.Search, stdout: `{"schemaVersion":1,"schemaVersion":2}`, wantErr: loom.ErrSchemaVersion},
		{name: "schemaVersion duplicate last wins good", tool: loom.Search, stdout: `{"schemaVersion":2,"schemaVersion":1}`, want: `{"schemaVersion":2,"schemaVersion":1}`},
		{name: "schemaVersion nested is not own", tool: loom.Search, stdout: `{"x":{"schemaVersion":2}}`, want: `{"x":{"schemaVersion":2}}`},
		{name: "schemaVersion on other tools ignored", tool: loom.PageDiscover, stdout: `{"schemaVersion":2,"pages":[]}`, want: `{"schemaVersion":2,"pages":[]}`},
		{name: "schemaVersion after exit code", tool: loom.Search, stdout: `{"schemaVersion":2}`, exit: 1, wantErr: &loom.ExitError{Code: 1}},
		{name: "search array payload", tool: loom.Search, stdout: `[]`, want: `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Interpret(tt.tool, tt.personLookup, Output{Stdout: []byte(tt.stdout), ExitCode: tt.exit})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Interpret = %v, want payload %s", err, tt.want)
				}
				if string(got) != tt.want {
					t.Errorf("Interpret payload = %q, want %q", got, tt.want)
				}
				return
			}
			if got != nil {
				t.Errorf("Interpret returned payload %q with an error", got)
			}
			switch want := tt.wantErr.(type) {
			case *loom.HostRefusedError:
				var got *loom.HostRefusedError
				if !errors.As(err, &got) || *got != *want {
					t.Errorf("Interpret error = %#v, want %#v", err, want)
				}
			case *loom.ExitError:
				var got *loom.ExitError
				if !errors.As(err, &got) || *got != *want {
					t.Errorf("Interpret error = %#v, want %#v", err, want)
				}
			default:
				if !errors.Is(err, want) {
					t.Errorf("Interpret error = %v, want %v", err, want)
				}
			}
		})
	}
}

func TestInterpretErrorFamilies(t *testing.T) {
	for _, err := range []error{loom.ErrNotJSON, &loom.ExitError{Code: 2}, loom.ErrTimeout, loom.ErrStdoutLimit, loom.ErrStart, &loom.StartError{Err: errors.New("x")}} {
		if !errors.Is(err, loom.ErrCommandFailed) {
			t.Errorf("errors.Is(%v, ErrCommandFailed) = false", err)
		}
	}
	for _, err := range []error{loom.ErrNotFound, loom.ErrContested, loom.ErrSchemaVersion, loom.ErrMalformedPayload, loom.ErrBusy, loom.ErrCancelled, &loom.HostRefusedError{}} {
		if errors.Is(err, loom.ErrCommandFailed) {
			t.Errorf("errors.Is(%v, ErrCommandFailed) = true", err)
		}
	}
	if !errors.Is(&loom.StartError{}, loom.ErrStart) {
		t.Error("StartError does not match ErrStart")
	}
}

func TestDecodeUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"\ufeffabc", "abc"},
		{"\ufeff\ufeffabc", "\ufeffabc"},
		{"a\xffb", "a\ufffdb"},
		{"a\xff\xffb", "a\ufffd\ufffdb"},
		{"a\xe2\x82b", "a\ufffdb"},                 // truncated 3-byte sequence: one maximal subpart
		{"a\xf0\x9f\x98b", "a\ufffdb"},             // truncated 4-byte sequence
		{"a\xe0\x80\x80b", "a\ufffd\ufffd\ufffdb"}, // overlong: E0 needs A0..BF
		{"a\xed\xa0\x80b", "a\ufffd\ufffd\ufffdb"}, // surrogate: ED needs 80..9F
		{"a\xf4\x90\x80\x80b", "a\ufffd\ufffd\ufffd\ufffdb"},
		{"a\xc0\xafb", "a\ufffd\ufffdb"},
		{"\xe2\x82", "\ufffd"},
	}
	for _, tt := range tests {
		if got := string(DecodeUTF8([]byte(tt.in))); got != tt.want {
			t.Errorf("DecodeUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
