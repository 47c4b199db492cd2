package problem

import (
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/api/host"
)

// TestTableIsTheContract: the table has exactly the codes of the
// contract's Problem.code enum, each with a status, a title and a detail;
// both generated packages name the same codes.
func TestTableIsTheContract(t *testing.T) {
	spec, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ps := spec.Components.Schemas["Problem"]
	if ps == nil || ps.Value.Properties["code"] == nil {
		t.Fatal("the contract has no Problem.code")
	}
	var enum []string
	for _, v := range ps.Value.Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	slices.Sort(enum)
	var codes []string
	for _, c := range Codes() {
		codes = append(codes, string(c))
		info := Lookup(c)
		if info.Status < 400 || info.Status > 599 || info.Title == "" || info.Detail == "" {
			t.Errorf("%s: %+v", c, info)
		}
		if !agent.ProblemCode(c).Valid() || !host.ProblemCode(c).Valid() {
			t.Errorf("%s is not a code of the generated enums", c)
		}
	}
	if !slices.Equal(enum, codes) {
		t.Errorf("table codes %v\ncontract enum %v", codes, enum)
	}
}

// TestReasonsAreTheContract: every Reason is one of the contract's
// InputFaultReason enum, and every one of those is a Reason.
func TestReasonsAreTheContract(t *testing.T) {
	reasons := []Reason{ConflictingFields, ControlCharacter, DuplicateKey, EmptyBody, InvalidUtf8, LeadingDash, NotADate, NotALookup, NotInChoices, NotJson, NullNotAllowed, OneOfRequired, OutOfRange, PatternMismatch, Required, TooDeep, TooLong, TooShort, UnknownField, WrongType}
	spec, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rs := spec.Components.Schemas["InputFaultReason"]
	if rs == nil {
		t.Fatal("the contract has no InputFaultReason")
	}
	var enum, got []string
	for _, v := range rs.Value.Enum {
		enum = append(enum, v.(string))
	}
	for _, r := range reasons {
		got = append(got, string(r))
		if !agent.InputFaultReason(r).Valid() {
			t.Errorf("%s is not a reason of the generated enum", r)
		}
	}
	slices.Sort(enum)
	slices.Sort(got)
	if !slices.Equal(enum, got) {
		t.Errorf("reasons %v\ncontract enum %v", got, enum)
	}
}
