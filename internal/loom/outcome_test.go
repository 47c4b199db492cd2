package loom

import (
	"errors"
	"strings"
	"testing"
)

// TestOutcomePrecedence holds Outcome to its order: the reading bounds,
// then Decide, then the stage's end, then the payload's shape.
func TestOutcomePrecedence(t *testing.T) {
	ended := errors.New("stage ended")
	search := Invocation{Tool: Search, Argv: []string{"/loom", "search", "q", "--json"}}
	person := Invocation{Tool: People, PersonLookup: true}
	refused := `{"hits":[],"` + strings.Repeat("n", maxNameBytes) + `":1}`
	tests := []struct {
		name   string
		inv    Invocation
		stdout string
		exit   int
		ended  error
		want   error
	}{
		{"refused before the exit code and the stage", search, refused, 2, ended, ErrMalformedPayload},
		{"not JSON before the stage", person, "nobody", 1, ended, ErrNotFound},
		{"host refusal before the stage and the shape", search, `{"ok":false}`, 0, ended, &HostRefusedError{}},
		{"exit code before the stage", search, `{"hits":[]}`, 2, ended, &ExitError{Code: 2}},
		{"the stage before the shape", search, `{"rows":[]}`, 0, ended, ended},
		{"the shape", search, `{"rows":[]}`, 0, nil, ErrMalformedPayload},
		{"the payload", search, `{"hits":[{"id":1}]}`, 0, nil, nil},
	}
	for _, tt := range tests {
		kept := Condense(tt.inv.Tool, strings.NewReader(tt.stdout))
		got := Outcome(tt.inv, tt.exit, &kept, tt.ended)
		kept.Release()
		switch want := tt.want.(type) {
		case *HostRefusedError:
			if _, ok := errors.AsType[*HostRefusedError](got); !ok {
				t.Errorf("%s: Outcome = %v, want a host refusal", tt.name, got)
			}
		case *ExitError:
			if e, ok := errors.AsType[*ExitError](got); !ok || e.Code != want.Code {
				t.Errorf("%s: Outcome = %v, want exit %d", tt.name, got, want.Code)
			}
		default:
			if got != tt.want {
				t.Errorf("%s: Outcome = %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}
