package handlers

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
)

// stepStore records the name of every store method the gateway calls, in
// order: each is one step to the store (one round trip to a Redis).
type stepStore struct {
	*memstore.Store
	mu    sync.Mutex
	steps []string
}

func (s *stepStore) step(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, name)
}

// take returns the steps so far and forgets them.
func (s *stepStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.steps
	s.steps = nil
	return out
}

func (s *stepStore) Run(ctx context.Context, id string) (store.Run, error) {
	s.step("Run")
	return s.Store.Run(ctx, id)
}

func (s *stepStore) RunByToken(ctx context.Context, h store.TokenHash) (store.Run, error) {
	s.step("RunByToken")
	return s.Store.RunByToken(ctx, h)
}

func (s *stepStore) Begin(ctx context.Context, id string, b store.Begin) (store.Run, error) {
	s.step("Begin")
	return s.Store.Begin(ctx, id, b)
}

func (s *stepStore) Finish(ctx context.Context, id string, f store.Finish) ([]string, error) {
	s.step("Finish")
	return s.Store.Finish(ctx, id, f)
}

func (s *stepStore) AppendCall(ctx context.Context, id string, c store.Call) error {
	s.step("AppendCall")
	return s.Store.AppendCall(ctx, id, c)
}

func (s *stepStore) Handle(ctx context.Context, id, token string) (store.Referent, bool, error) {
	s.step("Handle")
	return s.Store.Handle(ctx, id, token)
}

func (s *stepStore) Handles(ctx context.Context, id string) ([]store.Referent, error) {
	s.step("Handles")
	return s.Store.Handles(ctx, id)
}

func (s *stepStore) Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error) {
	s.step("Observe")
	return s.Store.Observe(ctx, id, conf)
}

func newStepGateway(t *testing.T, rate store.Rate) (*testGateway, *stepStore) {
	t.Helper()
	var ss *stepStore
	g := newTestGateway(t, gatewayOptions{WrapStore: func(m *memstore.Store) gateway.Store {
		ss = &stepStore{Store: m}
		return ss
	}})
	g.deps.RunRate = rate
	return g, ss
}

// TestToolCallStoreSteps: a tool call takes two steps to the store, the
// Begin that checks its token and takes its number and the Finish that
// records it; describe_handle reads its handle between the two. A token
// that opens nothing still answers as before, however the body is.
func TestToolCallStoreSteps(t *testing.T) {
	t.Parallel()
	g, ss := newStepGateway(t, store.Rate{})
	id, tok := g.createRun(t, `{"runId":"r"}`)
	_, otherTok := g.createRun(t, `{"runId":"other"}`)
	ss.take()

	if rec := g.call(id, tok, "loom_search", `{"query":"atlas"}`); rec.Code != http.StatusOK {
		t.Fatalf("loom_search = %d %s", rec.Code, rec.Body)
	}
	if diff := cmp.Diff([]string{"Begin", "Finish"}, ss.take()); diff != "" {
		t.Errorf("a tool call's store steps (-want +got):\n%s", diff)
	}
	if rec := g.call(id, tok, "describe_handle", `{"token":"nope"}`); rec.Code != http.StatusOK {
		t.Fatalf("describe_handle = %d %s", rec.Code, rec.Body)
	}
	if diff := cmp.Diff([]string{"Begin", "Handle", "AppendCall"}, ss.take()); diff != "" {
		t.Errorf("describe_handle's store steps (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name, run, token, body string
		status                 int
		challenge              string
	}{
		{"no such token", id, "not-a-token", `{"query":"atlas"}`, http.StatusUnauthorized, invalidToken},
		{"no such token, body not JSON", id, "not-a-token", `{`, http.StatusUnauthorized, invalidToken},
		{"no such token, body off the contract", id, "not-a-token", `{"nope":1}`, http.StatusUnauthorized, invalidToken},
		{"no such token, no such run", "nope", "not-a-token", `{"query":"atlas"}`, http.StatusUnauthorized, invalidToken},
		{"another run's token", id, otherTok, `{"query":"atlas"}`, http.StatusNotFound, ""},
		{"another run's token, body off the contract", id, otherTok, `{"nope":1}`, http.StatusNotFound, ""},
		{"its token, body off the contract", id, tok, `{"nope":1}`, http.StatusBadRequest, ""},
	} {
		rec := g.call(tt.run, tt.token, "loom_search", tt.body)
		if rec.Code != tt.status || rec.Header().Get("WWW-Authenticate") != tt.challenge {
			t.Errorf("%s: %d, WWW-Authenticate %q, want %d, %q (%s)", tt.name, rec.Code,
				rec.Header().Get("WWW-Authenticate"), tt.status, tt.challenge, rec.Body)
		}
	}
	ss.take()
	if seq := getSeq(t, g, id); seq != 2 {
		t.Errorf("output sequence = %d, want 2: a refused claim took a number", seq)
	}
}

func getSeq(t *testing.T, g *testGateway, id string) int64 {
	t.Helper()
	r, err := g.store.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Seq
}

// TestRateLimitedRefusedHere: once Begin has refused a run at its rate,
// the replica refuses it without a store step until its bucket holds a
// call again, with the bucket's Retry-After; another token on the run's
// path is not refused so, and a deleted run is asked about again.
func TestRateLimitedRefusedHere(t *testing.T) {
	t.Parallel()
	g, ss := newStepGateway(t, store.Rate{PerSecond: 1, Burst: 1})
	id, tok := g.createRun(t, `{"runId":"r"}`)
	ss.take()

	if rec := g.call(id, tok, "loom_profile", `{}`); rec.Code != http.StatusOK {
		t.Fatalf("first call = %d %s", rec.Code, rec.Body)
	}
	for i := range 5 {
		rec := g.call(id, tok, "loom_profile", `{}`)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
			t.Fatalf("call %d past the rate = %d, Retry-After %q (%s), want 429, 1", i+2, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	if diff := cmp.Diff([]string{"Begin", "Finish", "Begin"}, ss.take()); diff != "" {
		t.Errorf("store steps (-want +got): only the first refusal asks the store\n%s", diff)
	}
	// A stranger's token on the run's path is still answered as one.
	if rec := g.call(id, "not-a-token", "loom_profile", `{}`); rec.Code != http.StatusUnauthorized {
		t.Errorf("a stranger's call = %d %s, want 401", rec.Code, rec.Body)
	}
	ss.take()

	g.clock.Advance(time.Second)
	if rec := g.call(id, tok, "loom_profile", `{}`); rec.Code != http.StatusOK {
		t.Fatalf("a call when the bucket holds one again = %d %s", rec.Code, rec.Body)
	}
	if rec := g.call(id, tok, "loom_profile", `{}`); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the next call = %d %s, want 429", rec.Code, rec.Body)
	}
	if rec := g.hostDo(http.MethodDelete, "/host/v1/runs/"+id, ""); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", rec.Code, rec.Body)
	}
	ss.take()
	rec := g.call(id, tok, "loom_profile", `{}`)
	if rec.Code == http.StatusTooManyRequests || !slices.Contains(ss.take(), "Begin") {
		t.Errorf("a call of the deleted run = %d %s without asking the store, want its end told", rec.Code, rec.Body)
	}
}

func (s *stepStore) Holds(ctx context.Context, id string, tokens []string) ([]bool, bool, error) {
	s.step("Holds")
	return s.Store.Holds(ctx, id, tokens)
}

// TestRequestBudgetStoreSteps: with a run rate, a request that is not a
// tool call spends the run's budget in the store step that opens the run
// (Begin in place of Run), so it costs no more steps than without one; a
// result write naming an unheld handle asks about the names alone and
// never reads the table; once the bucket has refused the run, its
// requests are refused without a store step.
func TestRequestBudgetStoreSteps(t *testing.T) {
	t.Parallel()
	for _, rate := range []store.Rate{{}, {PerSecond: 0.001, Burst: 3}} {
		g, ss := newStepGateway(t, rate)
		id, tok := g.createRun(t, `{"runId":"r"}`)
		ss.take()
		open := "Run"
		if rate.PerSecond > 0 {
			open = "Begin"
		}
		if rec := g.agentDo(http.MethodGet, "/v1/runs/"+id+"/tools", tok, ""); rec.Code != http.StatusOK {
			t.Fatalf("GET tools = %d %s", rec.Code, rec.Body)
		}
		if diff := cmp.Diff([]string{open}, ss.take()); diff != "" {
			t.Errorf("rate %v: GET tools' store steps (-want +got):\n%s", rate, diff)
		}
		for range 2 {
			if rec := g.call(id, tok, "result", `{"value":{"a":"cfh:v:zzzzz"}}`); rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("result naming an unheld handle = %d %s", rec.Code, rec.Body)
			}
			if diff := cmp.Diff([]string{open, "Holds"}, ss.take()); diff != "" {
				t.Errorf("rate %v: a refused result write's store steps (-want +got):\n%s", rate, diff)
			}
		}
		if rate.PerSecond == 0 {
			continue
		}
		for range 3 {
			if rec := g.agentDo(http.MethodGet, "/v1/runs/"+id+"/tools", tok, ""); rec.Code != http.StatusTooManyRequests {
				t.Fatalf("GET tools past the budget = %d %s", rec.Code, rec.Body)
			}
		}
		if diff := cmp.Diff([]string{"Begin"}, ss.take()); diff != "" {
			t.Errorf("requests past the budget: only the first asks the store (-want +got):\n%s", diff)
		}
	}
}
