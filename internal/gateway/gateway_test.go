package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/store/memstore"
)

// Compile-time checks that the concrete types satisfy what the core
// consumes.
var (
	_ Store  = (*memstore.Store)(nil)
	_ Runner = (*loom.CLI)(nil)
	_ Runner = (*loomtest.Fake)(nil)
)

// newCore is a core over the sample loom and a memory store, offering
// every tool, with a run "r" whose token it returns.
func newCore(t *testing.T, run func(ctx context.Context, argv, env []string) (loomref.Output, error)) (*Service, *memstore.Store, string) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	cfg := &loom.Config{CLIPath: "/usr/bin/loom", Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: "/srv/loom", RunID: "t"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if run == nil {
		run = loomtest.Sample
	}
	s := New(Config{Store: st, Runner: &loomtest.Fake{RunFunc: run}, Loom: cfg, Env: loom.Env(cfg, "/usr/bin:/bin", true), Tools: loom.Tools})
	id := "r"
	c, err := s.CreateRun(context.Background(), RunSpec{ID: &id})
	if err != nil {
		t.Fatal(err)
	}
	return s, st, c.Token
}

func TestAuthenticate(t *testing.T) {
	s, _, tok := newCore(t, nil)
	other := "other"
	c2, err := s.CreateRun(context.Background(), RunSpec{ID: &other})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name, run, token string
		want             problem.Code
	}{
		{"own run", "r", tok, ""},
		{"any run", "", tok, ""},
		{"another run's token", "r", c2.Token, problem.RunNotFound},
		{"no such run, valid token", "nope", tok, problem.RunNotFound},
		{"token of no run", "r", "not-a-token", problem.Unauthorized},
		{"token of no run, no such run", "nope", "not-a-token", problem.Unauthorized},
		{"no token", "r", "", problem.Unauthorized},
	} {
		run, err := s.Authenticate(ctx, tt.run, tt.token)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			if tt.run != "" && run.ID != tt.run {
				t.Errorf("%s: opened %q", tt.name, run.ID)
			}
			continue
		}
		if got := CodeOf(err); got != tt.want {
			t.Errorf("%s: code %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A call's errors are classified and carry its outputId; the call log
// holds one record per output, in order.
func TestCallClassifiesErrors(t *testing.T) {
	exit2 := func(context.Context, []string, []string) (loomref.Output, error) {
		return loomref.Output{Stdout: []byte("boom"), ExitCode: 2}, nil
	}
	s, _, tok := newCore(t, exit2)
	ctx := context.Background()
	run, err := s.Authenticate(ctx, "r", tok)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Call(ctx, run, loom.Search, []byte(`{"query":"atlas"}`))
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Code != problem.CommandFailed || e.OutputID != "r:loom_search:1" {
		t.Fatalf("Call = %#v, want command_failed with outputId r:loom_search:1", err)
	}
	_, err = s.Call(ctx, run, loom.Search, []byte(`{"query":"-x"}`))
	if e, ok := errors.AsType[*Error](err); !ok || e.Code != problem.InvalidInput || e.OutputID != "r:loom_search:2" {
		t.Fatalf("Call = %#v, want invalid_input with outputId r:loom_search:2", err)
	}
	// A gateway that does not offer the tool, on the same store.
	cfg := s.cfg
	cfg.Tools = []loom.Tool{loom.Profile}
	_, err = New(cfg).Call(ctx, run, loom.Search, []byte(`{"query":"atlas"}`))
	if e, ok := errors.AsType[*Error](err); !ok || e.Code != problem.NotConfigured || e.OutputID != "r:loom_search:3" {
		t.Fatalf("Call = %#v, want not_configured with outputId r:loom_search:3", err)
	}
	calls, total, err := s.CallsPage(ctx, "r", 0, 0)
	if err != nil || total != 3 {
		t.Fatalf("CallsPage = %d records, %v", total, err)
	}
	for i, want := range []string{"command_failed", "invalid_input", "not_configured"} {
		if calls[i].Code != want || calls[i].Status != "error" {
			t.Errorf("record %d: %s %q, want error %q", i, calls[i].Status, calls[i].Code, want)
		}
	}
}

// A successful call answers the result object, mints its handles, and
// describe_handle and the result writer find them.
func TestCallDescribeWrite(t *testing.T) {
	s, _, tok := newCore(t, nil)
	ctx := context.Background()
	run, _ := s.Authenticate(ctx, "r", tok)
	body, err := s.Call(ctx, run, loom.Search, []byte(`{"query":"atlas"}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		OutputID string `json:"outputId"`
		Entries  []struct {
			Status string `json:"status"`
			Handle string `json:"handle"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.OutputID != "r:loom_search:1" || len(res.Entries) == 0 || res.Entries[0].Handle == "" {
		t.Fatalf("result %s", body)
	}
	d, err := s.Describe(ctx, run, " "+res.Entries[0].Handle+" ")
	if err != nil || !d.Known || d.Referent == nil || d.Referent.Source != "loom_search" || d.OutputID != "r:describe_handle:2" {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	w, err := s.WriteResult(ctx, run, []byte(`{"cite":"`+res.Entries[0].Handle+`"}`))
	if err != nil || w.Documents != 1 || w.Links != 1 {
		t.Fatalf("WriteResult = %+v, %v", w, err)
	}
	run, _ = s.Authenticate(ctx, "r", tok)
	if _, err := s.WriteResult(ctx, run, []byte(`1`)); CodeOf(err) != problem.ResultExists {
		t.Errorf("second WriteResult: %v, want result_exists", err)
	}
}

// CreateRun refuses a tool the gateway does not offer, naming it and
// listing what it offers.
func TestCreateRunRefusesTool(t *testing.T) {
	s, _, _ := newCore(t, nil)
	tools := []string{"loom_search", "loom_nope"}
	_, err := s.CreateRun(context.Background(), RunSpec{Tools: &tools})
	ie, ok := errors.AsType[*problem.InputError](err)
	if !ok || len(ie.Faults) != 1 || ie.Faults[0].Pointer != "/tools/1" || len(ie.Faults[0].Choices) != 8 || CodeOf(err) != problem.InvalidInput {
		t.Fatalf("CreateRun = %v (%+v), want invalid_input at /tools/1 with the eight tools", err, ie)
	}
}

// An argument-builder refusal becomes a fault with the contract's reason;
// its field goes through the pointer bounds.
func TestBuilderFault(t *testing.T) {
	long := strings.Repeat("D", 129)
	tests := []struct {
		in      loom.InputError
		pointer string
		reason  problem.Reason
	}{
		{loom.InputError{Field: "a/b", Reason: loom.ReasonUnknown}, "/a~1b", problem.UnknownField},
		{loom.InputError{Field: long, Reason: loom.ReasonUnknown}, "", problem.UnknownField},
		{loom.InputError{Field: "query", Reason: loom.ReasonDash}, "/query", problem.LeadingDash},
		{loom.InputError{Field: "query", Reason: loom.ReasonControl}, "/query", problem.ControlCharacter},
		{loom.InputError{Field: "query", Reason: loom.ReasonLookup}, "/query", problem.NotALookup},
		{loom.InputError{Field: "query", Reason: loom.ReasonLength}, "/query", problem.TooLong},
		{loom.InputError{Field: "query", Reason: loom.ReasonQueryPerson}, "/query", problem.OneOfRequired},
		{loom.InputError{Field: "all", Reason: loom.ReasonAllDates}, "/all", problem.ConflictingFields},
		{loom.InputError{Field: "from", Reason: loom.ReasonDate}, "/from", problem.NotADate},
		{loom.InputError{Reason: loom.ReasonNotObject}, "", problem.WrongType},
	}
	for _, tt := range tests {
		e := builderFault(&tt.in)
		if len(e.Faults) != 1 || e.Faults[0].Pointer != tt.pointer || e.Faults[0].Reason != tt.reason {
			t.Errorf("builderFault(%+v) = %+v, want %q at %q", tt.in, e.Faults, tt.reason, tt.pointer)
		}
		if e.Detail == "" || strings.Contains(e.Detail, long) {
			t.Errorf("builderFault(%.30v…): detail %q", tt.in, e.Detail)
		}
	}
	for r := range builderReasons {
		if !agent.InputFaultReason(builderReasons[r]).Valid() {
			t.Errorf("builder reason %q maps to %q, not a reason of the contract", r, builderReasons[r])
		}
	}
}
