// Package storetest is the conformance suite of store.Store. Every
// implementation calls Run (or RunOptions) from its tests and must pass it
// under -race.
//
// Values are compared as a serialising backend returns them: nil and empty
// slices alike, times by Equal (the suite's times have millisecond
// precision), ceilings by definedness and clause text. Beyond the method
// docs the suite pins: tokens follow store.MintToken (first free attempt,
// in batch order), so two stores agree on a run's tokens; a live run's
// token hash is unique; Runs breaks CreatedAt ties by ID.
//
// A store shared by replicas that reports deletes to the others
// (store.DeleteWatch) also passes RunWatch.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Config is what the suite asks of a store it constructs.
type Config struct {
	// MaxRuns is the live-run limit the store must enforce; 0 means none.
	MaxRuns int
	// MaxLabelClauses is the model-context clause limit the store must
	// enforce (Observe); 0 means none.
	MaxLabelClauses int
	// Now is the clock the store must expire runs by. It is a fake clock the
	// suite advances, or nil under Options.RealTime.
	Now func() time.Time
}

// Store is what the suite holds an implementation to: the storage
// contract, and two steps the gateway takes only within others, which the
// suite drives on their own to pin what they do.
type Store interface {
	store.Store
	// NextOutput increments and returns the run's output sequence (the
	// output number Begin takes).
	NextOutput(ctx context.Context, id string) (int64, error)
	// Mint registers referents (Token ignored) as Finish does, under
	// lim (store.MintLimits), and returns their tokens in order.
	Mint(ctx context.Context, id string, refs []store.Referent, lim store.MintLimits) ([]string, error)
}

// NewFunc returns a new, empty store built with cfg. Subtests run in
// parallel and each calls it at least once, so each store must be isolated
// from every other (for a shared backend: a fresh key prefix or database per
// call, dropped with t.Cleanup), because Runs lists everything a store
// holds.
type NewFunc func(t *testing.T, cfg Config) Store

// Options says how the store under test keeps time.
type Options struct {
	// RealTime is for stores that expire runs by the wall clock and cannot
	// take Config.Now (for example Redis keys with PEXPIREAT). The suite then
	// passes Now = nil, gives the runs of the expiry tests a TTL of TTL, and
	// sleeps past it instead of advancing a fake clock; the exact boundary
	// (ExpiresAt == Now) is then not tested. A store that can take
	// Config.Now (checking ExpiresAt itself and keeping a real TTL only for
	// cleanup) should not set it.
	RealTime bool
	// TTL is the run lifetime of the expiry tests under RealTime; 0 means
	// one second.
	TTL time.Duration
}

// Run runs the conformance suite against stores made by newStore, with a
// fake clock.
func Run(t *testing.T, newStore NewFunc) {
	RunOptions(t, Options{}, newStore)
}

// RunOptions runs the conformance suite with opts.
func RunOptions(t *testing.T, opts Options, newStore NewFunc) {
	if opts.TTL <= 0 {
		opts.TTL = time.Second
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"CreateIgnoresCounters", testCreateIgnoresCounters},
		{"CreateCopies", testCreateCopies},
		{"DuplicateID", testDuplicateID},
		{"DuplicateToken", testDuplicateToken},
		{"RunsOldestFirst", testRunsOldestFirst},
		{"RunsPage", testRunsPage},
		{"RunsPageExpiry", testRunsPageExpiry},
		{"CountRuns", testCountRuns},
		{"DeleteRun", testDeleteRun},
		{"DeleteRunRemovesState", testDeleteRunRemovesState},
		{"RunLimit", testRunLimit},
		{"Expiry", testExpiry},
		{"ExpiredRunFreesLimit", testExpiredRunFreesLimit},
		{"UnknownRun", testUnknownRun},
		{"NextOutput", testNextOutput},
		{"NextOutputConcurrent", testNextOutputConcurrent},
		{"Begin", testBegin},
		{"BeginToken", testBeginToken},
		{"BeginMaxSeq", testBeginMaxSeq},
		{"Finish", testFinish},
		{"FinishLarge", testFinishLarge},
		{"FinishAllOrNothing", testFinishAllOrNothing},
		{"FinishStaleBase", testFinishStaleBase},
		{"FinishConcurrent", testFinishConcurrent},
		{"Chain", testChain},
		{"ChainConcurrent", testChainConcurrent},
		{"BeginRate", testBeginRate},
		{"BeginRateConcurrent", testBeginRateConcurrent},
		{"InFlight", testInFlight},
		{"InFlightLease", testInFlightLease},
		{"InFlightDeleted", testInFlightDeleted},
		{"InFlightConcurrent", testInFlightConcurrent},
		{"Observe", testObserve},
		{"ObserveConcurrent", testObserveConcurrent},
		{"ObserveLabelLimit", testObserveLabelLimit},
		{"Calls", testCalls},
		{"CallsCopies", testCallsCopies},
		{"CallsConcurrent", testCallsConcurrent},
		{"CallsLongLogWhileAppending", testCallsLongLog},
		{"CallsPage", testCallsPage},
		{"CallsPageCopies", testCallsPageCopies},
		{"CallsPageLongLog", testCallsPageLongLog},
		{"MintDedupe", testMintDedupe},
		{"MintDistinctIdentities", testMintDistinctIdentities},
		{"MintTokenGrammar", testMintTokenGrammar},
		{"MintDeterministic", testMintDeterministic},
		{"MintRunsIndependent", testMintRunsIndependent},
		{"MintEmpty", testMintEmpty},
		{"MintConcurrent", testMintConcurrent},
		{"MintConcurrentLimit", testMintConcurrentLimit},
		{"HandleLimit", testHandleLimit},
		{"HandleByteLimit", testHandleByteLimit},
		{"MintConcurrentByteLimit", testMintConcurrentByteLimit},
		{"HandlesOrderAndCopies", testHandlesOrderAndCopies},
		{"Handle", testHandle},
		{"Holds", testHolds},
		{"HandlesLarge", testHandlesLarge},
		{"BeginNoOutput", testBeginNoOutput},
		{"Result", testResult},
		{"ResultCopies", testResultCopies},
		{"Ping", testPing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, &harness{opts: opts, newStore: newStore})
		})
	}
}

// harness builds the store of one subtest and its clock.
type harness struct {
	opts     Options
	newStore NewFunc

	mu  sync.Mutex
	now time.Time // fake clock; unused under RealTime
}

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// store returns a new store with the live-run limit max.
func (h *harness) store(t *testing.T, max int) Store {
	t.Helper()
	return h.storeWith(t, Config{MaxRuns: max})
}

// storeWith returns a new store built with cfg and the suite's clock.
func (h *harness) storeWith(t *testing.T, cfg Config) Store {
	t.Helper()
	if !h.opts.RealTime {
		h.now = epoch
		cfg.Now = h.Now
	}
	s := h.newStore(t, cfg)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	return s
}

// Now is the store's clock, at millisecond precision.
func (h *harness) Now() time.Time {
	if h.opts.RealTime {
		return time.Now().Truncate(time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// advance moves the fake clock by d, or sleeps d under RealTime.
func (h *harness) advance(d time.Duration) {
	if h.opts.RealTime {
		time.Sleep(d)
		return
	}
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

// ttl is the lifetime of runs that a test expires.
func (h *harness) ttl() time.Duration {
	if h.opts.RealTime {
		return h.opts.TTL
	}
	return time.Hour
}

// run returns a run with the id, living an hour (or ttl when given).
func (h *harness) run(id string, ttl ...time.Duration) store.Run {
	life := time.Hour
	if len(ttl) > 0 {
		life = ttl[0]
	}
	now := h.Now()
	return store.Run{
		ID:           id,
		TokenHash:    store.HashToken("token-of-" + id),
		CreatedAt:    now,
		ExpiresAt:    now.Add(life),
		Ceiling:      ifc.CeilingOf(conf(`"Ceil"`, `{"anyOf":["A","B"]}`)),
		ModelContext: conf(`"Base"`),
		Tools:        []string{"loom_search", "loom_people"},
	}
}

func create(t *testing.T, s Store, r store.Run) {
	t.Helper()
	if err := s.CreateRun(context.Background(), r); err != nil {
		t.Fatalf("CreateRun(%q) = %v, want nil", r.ID, err)
	}
}

// conf builds a confidentiality list from compact clause texts.
func conf(clauses ...string) ifc.Confidentiality {
	c := ifc.Confidentiality{}
	for _, x := range clauses {
		c = append(c, ifc.Clause(x))
	}
	return c
}

// ref returns a referent whose identity is fixed by n.
func ref(n int) store.Referent {
	return store.Referent{
		Kind:        "document",
		Source:      "loom_search",
		Value:       []byte(fmt.Sprintf(`{"id":"row-%d","title":"Row %d"}`, n, n)),
		Label:       ifc.Label{Confidentiality: conf(`"A"`), Integrity: []ifc.Atom{ifc.Atom(`"I"`)}},
		LabelSource: "row",
	}
}

func refs(ns ...int) []store.Referent {
	out := make([]store.Referent, len(ns))
	for i, n := range ns {
		out[i] = ref(n)
	}
	return out
}

// cmpOpts compares store values: ceilings by definedness and clauses, nil
// and empty slices alike, times by Equal.
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b ifc.Ceiling) bool {
		return a.Defined() == b.Defined() &&
			cmp.Equal(a.Clauses(), b.Clauses(), cmpopts.EquateEmpty())
	}),
	cmpopts.EquateEmpty(),
}

func mint(t *testing.T, s Store, id string, rs []store.Referent) []string {
	t.Helper()
	toks, err := s.Mint(context.Background(), id, rs, store.MintLimits{})
	if err != nil {
		t.Fatalf("Mint(%q, %d refs) = %v, want nil", id, len(rs), err)
	}
	if len(toks) != len(rs) {
		t.Fatalf("Mint(%q, %d refs) returned %d tokens", id, len(rs), len(toks))
	}
	return toks
}

func getRun(t *testing.T, s Store, id string) store.Run {
	t.Helper()
	r, err := s.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("Run(%q) = %v, want nil", id, err)
	}
	return r
}

func handles(t *testing.T, s Store, id string) []store.Referent {
	t.Helper()
	hs, err := s.Handles(context.Background(), id)
	if err != nil {
		t.Fatalf("Handles(%q) = %v, want nil", id, err)
	}
	return hs
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", what, err, want)
	}
}

// parallel runs fn(0..n-1) in n goroutines and waits for them.
// allCalls is the run's whole call log: the page after none, unbounded.
func allCalls(ctx context.Context, s Store, id string) ([]store.Call, error) {
	calls, _, err := s.CallsPage(ctx, id, 0, 0)
	return calls, err
}

func parallel(n int, fn func(g int)) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { fn(g) })
	}
	wg.Wait()
}

// --- runs ---

func testCreateAndGet(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	want := h.run("run-1")
	want.Ceiling = ifc.NoCeiling
	other := h.run("run-2")
	other.Tools = nil
	other.ModelContext = nil
	create(t, s, want)
	create(t, s, other)

	for _, w := range []store.Run{want, other} {
		got := getRun(t, s, w.ID)
		if diff := cmp.Diff(w, got, cmpOpts); diff != "" {
			t.Errorf("Run(%q) mismatch (-want +got):\n%s", w.ID, diff)
		}
		got, err := s.RunByToken(ctx, w.TokenHash)
		if err != nil {
			t.Fatalf("RunByToken(%q's hash) = %v", w.ID, err)
		}
		if diff := cmp.Diff(w, got, cmpOpts); diff != "" {
			t.Errorf("RunByToken(%q's hash) mismatch (-want +got):\n%s", w.ID, diff)
		}
	}
	if got := getRun(t, s, "run-1"); got.Ceiling.Defined() {
		t.Errorf("Run(run-1).Ceiling.Defined() = true, want false (NoCeiling stored)")
	}
	if got := getRun(t, s, "run-2"); !got.Ceiling.Defined() {
		t.Errorf("Run(run-2).Ceiling.Defined() = false, want true")
	}
	_, err := s.RunByToken(ctx, store.HashToken("no such token"))
	wantErr(t, "RunByToken(unknown)", err, store.ErrRunNotFound)
}

func testCreateIgnoresCounters(t *testing.T, h *harness) {
	s := h.store(t, 0)
	r := h.run("run-1")
	r.Seq, r.Calls, r.Handles, r.HandleBytes, r.HasResult = 7, 8, 9, 10, true
	create(t, s, r)
	got := getRun(t, s, "run-1")
	if got.Seq != 0 || got.Calls != 0 || got.Handles != 0 || got.HandleBytes != 0 || got.HasResult {
		t.Errorf("Run counters = Seq %d Calls %d Handles %d HandleBytes %d HasResult %v, want all zero",
			got.Seq, got.Calls, got.Handles, got.HandleBytes, got.HasResult)
	}
	if seq, err := s.NextOutput(context.Background(), "run-1"); err != nil || seq != 1 {
		t.Errorf("NextOutput = %d, %v, want 1, nil", seq, err)
	}
}

func testCreateCopies(t *testing.T, h *harness) {
	s := h.store(t, 0)
	r := h.run("run-1")
	want := h.run("run-1")
	want.CreatedAt, want.ExpiresAt = r.CreatedAt, r.ExpiresAt
	create(t, s, r)
	// Mutating what was passed in, or what came out, changes nothing stored.
	r.Tools[0] = "changed"
	r.ModelContext[0][1] = 'X'
	got := getRun(t, s, "run-1")
	got.Tools[0] = "changed too"
	got.ModelContext[0][1] = 'Y'
	got.Ceiling.Clauses()[0][1] = 'Z'
	if diff := cmp.Diff(want, getRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("stored run changed through a copy (-want +got):\n%s", diff)
	}
}

func testDuplicateID(t *testing.T, h *harness) {
	s := h.store(t, 0)
	first := h.run("run-1")
	create(t, s, first)
	dup := h.run("run-1")
	dup.TokenHash = store.HashToken("another token")
	dup.Tools = []string{"loom_profile"}
	wantErr(t, "CreateRun(duplicate id)", s.CreateRun(context.Background(), dup), store.ErrRunExists)
	if diff := cmp.Diff(first, getRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("duplicate CreateRun changed the run (-want +got):\n%s", diff)
	}
	_, err := s.RunByToken(context.Background(), dup.TokenHash)
	wantErr(t, "RunByToken(refused run's hash)", err, store.ErrRunNotFound)
}

func testDuplicateToken(t *testing.T, h *harness) {
	s := h.store(t, 0)
	first := h.run("run-1")
	create(t, s, first)
	dup := h.run("run-2")
	dup.TokenHash = first.TokenHash
	wantErr(t, "CreateRun(duplicate token hash)", s.CreateRun(context.Background(), dup), store.ErrRunExists)
	_, err := s.Run(context.Background(), "run-2")
	wantErr(t, "Run(refused run)", err, store.ErrRunNotFound)
	got, err := s.RunByToken(context.Background(), first.TokenHash)
	if err != nil || got.ID != "run-1" {
		t.Errorf("RunByToken = %q, %v, want run-1, nil", got.ID, err)
	}
}

func testRunsOldestFirst(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	got, err := s.Runs(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("Runs(empty store) = %d runs, %v, want 0, nil", len(got), err)
	}
	base := h.Now()
	// Created out of order; run-c and run-d share a CreatedAt (ties by ID).
	at := map[string]time.Duration{"run-a": 3, "run-b": 1, "run-d": 2, "run-c": 2, "run-e": 0}
	for _, id := range []string{"run-a", "run-b", "run-d", "run-c", "run-e"} {
		r := h.run(id)
		r.CreatedAt = base.Add(-at[id] * time.Minute)
		create(t, s, r)
	}
	got, err = s.Runs(ctx)
	if err != nil {
		t.Fatalf("Runs = %v", err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	want := []string{"run-a", "run-c", "run-d", "run-b", "run-e"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("Runs order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(h.run("run-b").Tools, got[3].Tools); diff != "" {
		t.Errorf("Runs()[3].Tools (-want +got):\n%s", diff)
	}
}

func testDeleteRun(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	create(t, s, h.run("run-2"))
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatalf("DeleteRun = %v", err)
	}
	_, err := s.Run(ctx, "run-1")
	wantErr(t, "Run(deleted)", err, store.ErrRunNotFound)
	_, err = s.RunByToken(ctx, h.run("run-1").TokenHash)
	wantErr(t, "RunByToken(deleted)", err, store.ErrRunNotFound)
	wantErr(t, "DeleteRun(deleted)", s.DeleteRun(ctx, "run-1"), store.ErrRunNotFound)
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID != "run-2" {
		t.Errorf("Runs after delete = %v, %v, want [run-2]", runs, err)
	}
	getRun(t, s, "run-2")
}

func testDeleteRunRemovesState(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	toks := mint(t, s, "run-1", refs(1, 2))
	if _, err := s.NextOutput(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Observe(ctx, "run-1", conf(`"Seen"`)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendCall(ctx, "run-1", store.Call{OutputID: "run-1:loom_search:1", Tool: "loom_search", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResult(ctx, "run-1", store.Result{Value: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	// The same id, created again, starts empty.
	fresh := h.run("run-1")
	create(t, s, fresh)
	if diff := cmp.Diff(fresh, getRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("recreated run (-want +got):\n%s", diff)
	}
	if hs := handles(t, s, "run-1"); len(hs) != 0 {
		t.Errorf("Handles(recreated) = %d referents, want 0", len(hs))
	}
	for _, tok := range toks {
		if _, ok, err := s.Handle(ctx, "run-1", tok); ok || err != nil {
			t.Errorf("Handle(recreated, %q) = %v, %v, want false, nil", tok, ok, err)
		}
	}
	if calls, err := allCalls(ctx, s, "run-1"); err != nil || len(calls) != 0 {
		t.Errorf("Calls(recreated) = %d, %v, want 0, nil", len(calls), err)
	}
	_, err := s.Result(ctx, "run-1")
	wantErr(t, "Result(recreated)", err, store.ErrNoResult)
	if seq, err := s.NextOutput(ctx, "run-1"); err != nil || seq != 1 {
		t.Errorf("NextOutput(recreated) = %d, %v, want 1, nil", seq, err)
	}
}

func testRunLimit(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 3)
	for i := 1; i <= 3; i++ {
		create(t, s, h.run(fmt.Sprintf("run-%d", i)))
	}
	wantErr(t, "CreateRun(4th of 3)", s.CreateRun(ctx, h.run("run-4")), store.ErrRunLimit)
	_, err := s.Run(ctx, "run-4")
	wantErr(t, "Run(refused)", err, store.ErrRunNotFound)
	_, err = s.RunByToken(ctx, h.run("run-4").TokenHash)
	wantErr(t, "RunByToken(refused)", err, store.ErrRunNotFound)
	if err := s.DeleteRun(ctx, "run-2"); err != nil {
		t.Fatal(err)
	}
	create(t, s, h.run("run-4"))
	wantErr(t, "CreateRun(5th of 3)", s.CreateRun(ctx, h.run("run-5")), store.ErrRunLimit)
	// A duplicate at the limit is still a duplicate.
	if err := s.CreateRun(ctx, h.run("run-1")); !errors.Is(err, store.ErrRunExists) && !errors.Is(err, store.ErrRunLimit) {
		t.Errorf("CreateRun(duplicate at limit) = %v, want ErrRunExists or ErrRunLimit", err)
	}
}

// runCall is one Store method applied to a run id (or its token hash).
type runCall struct {
	name string
	call func(ctx context.Context, s Store, id string, h store.TokenHash) error
}

// runCalls is every Store method that takes a run, each of which must
// answer ErrRunNotFound for a run that does not exist or has expired.
var runCalls = []runCall{
	{"Run", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.Run(ctx, id)
		return err
	}},
	{"RunByToken", func(ctx context.Context, s Store, _ string, h store.TokenHash) error {
		_, err := s.RunByToken(ctx, h)
		return err
	}},
	{"DeleteRun", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		return s.DeleteRun(ctx, id)
	}},
	{"NextOutput", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.NextOutput(ctx, id)
		return err
	}},
	{"Observe", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.Observe(ctx, id, conf(`"A"`))
		return err
	}},
	{"AppendCall", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		return s.AppendCall(ctx, id, store.Call{Tool: "loom_search"})
	}},
	{"Calls", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := allCalls(ctx, s, id)
		return err
	}},
	{"CallsPage", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, _, err := s.CallsPage(ctx, id, 0, 10)
		return err
	}},
	{"CallsPagePastEnd", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, _, err := s.CallsPage(ctx, id, 5000, 0)
		return err
	}},
	{"Mint", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.Mint(ctx, id, refs(1), store.MintLimits{})
		return err
	}},
	{"MintNone", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.Mint(ctx, id, nil, store.MintLimits{})
		return err
	}},
	{"Handles", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.Handles(ctx, id)
		return err
	}},
	{"Handle", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, _, err := s.Handle(ctx, id, "cfh:v:22222")
		return err
	}},
	{"PutResult", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		return s.PutResult(ctx, id, store.Result{Value: []byte(`1`)})
	}},
	{"Result", func(ctx context.Context, s Store, id string, _ store.TokenHash) error {
		_, err := s.Result(ctx, id)
		return err
	}},
}

func testUnknownRun(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	known := h.run("run-1")
	create(t, s, known)
	for _, c := range runCalls {
		if err := c.call(ctx, s, "no-such-run", store.HashToken("no such token")); !errors.Is(err, store.ErrRunNotFound) {
			t.Errorf("%s(unknown run) = %v, want %v", c.name, err, store.ErrRunNotFound)
		}
	}
	// The known run is untouched by all that.
	if diff := cmp.Diff(known, getRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("Run(run-1) changed (-want +got):\n%s", diff)
	}
}

func testExpiry(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	ttl := h.ttl()
	// One run per method, so that each method meets an expired run that no
	// other method has cleaned up.
	expiring := map[string]store.Run{}
	for _, c := range runCalls {
		r := h.run("exp-"+c.name, ttl)
		create(t, s, r)
		mint(t, s, r.ID, refs(1))
		if err := s.AppendCall(ctx, r.ID, store.Call{Tool: "loom_search"}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutResult(ctx, r.ID, store.Result{Value: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
		expiring[c.name] = r
	}
	long := h.run("long", ttl+time.Hour)
	create(t, s, long)

	if h.opts.RealTime {
		h.advance(ttl + ttl/2)
	} else {
		h.advance(ttl - time.Nanosecond)
		getRun(t, s, "exp-Run") // one instant before ExpiresAt: live
		h.advance(time.Nanosecond)
	}
	// At ExpiresAt (or past it) each run is gone everywhere.
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatalf("Runs = %v", err)
	}
	if len(runs) != 1 || runs[0].ID != "long" {
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		t.Errorf("Runs after expiry = %q, want [long]", ids)
	}
	for _, c := range runCalls {
		r := expiring[c.name]
		if err := c.call(ctx, s, r.ID, r.TokenHash); !errors.Is(err, store.ErrRunNotFound) {
			t.Errorf("%s(expired run) = %v, want %v", c.name, err, store.ErrRunNotFound)
		}
	}
	if diff := cmp.Diff(long, getRun(t, s, "long"), cmpOpts); diff != "" {
		t.Errorf("live run changed (-want +got):\n%s", diff)
	}
	// Ids and tokens are free again, and nothing of the old runs survives.
	for _, r := range expiring {
		create(t, s, h.run(r.ID))
		if hs := handles(t, s, r.ID); len(hs) != 0 {
			t.Errorf("Handles(%q recreated after expiry) = %d, want 0", r.ID, len(hs))
		}
		if calls, err := allCalls(ctx, s, r.ID); err != nil || len(calls) != 0 {
			t.Errorf("Calls(%q recreated after expiry) = %d, %v, want 0, nil", r.ID, len(calls), err)
		}
		_, err := s.Result(ctx, r.ID)
		wantErr(t, "Result(recreated after expiry)", err, store.ErrNoResult)
	}
}

func testExpiredRunFreesLimit(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 2)
	ttl := h.ttl()
	create(t, s, h.run("old-1", ttl))
	create(t, s, h.run("old-2", ttl))
	wantErr(t, "CreateRun(3rd of 2)", s.CreateRun(ctx, h.run("new-1")), store.ErrRunLimit)
	if h.opts.RealTime {
		h.advance(ttl + ttl/2)
	} else {
		h.advance(ttl)
	}
	create(t, s, h.run("new-1"))
	create(t, s, h.run("new-2"))
	wantErr(t, "CreateRun(3rd of 2 after expiry)", s.CreateRun(ctx, h.run("new-3")), store.ErrRunLimit)
}

// --- sequence and model context ---

func testNextOutput(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	create(t, s, h.run("run-2"))
	for want := int64(1); want <= 3; want++ {
		got, err := s.NextOutput(ctx, "run-1")
		if err != nil || got != want {
			t.Fatalf("NextOutput(run-1) = %d, %v, want %d, nil", got, err, want)
		}
	}
	if got := getRun(t, s, "run-1").Seq; got != 3 {
		t.Errorf("Run(run-1).Seq = %d, want 3", got)
	}
	if got, err := s.NextOutput(ctx, "run-2"); err != nil || got != 1 {
		t.Errorf("NextOutput(run-2) = %d, %v, want 1, nil (sequences are per run)", got, err)
	}
}

func testNextOutputConcurrent(t *testing.T, h *harness) {
	const goroutines, each = 50, 20
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	got := make([][]int64, goroutines)
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		for range each {
			n, err := s.NextOutput(ctx, "run-1")
			if err != nil {
				errs[g] = err
				return
			}
			got[g] = append(got[g], n)
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("NextOutput: %v", err)
	}
	var all []int64
	for g, seq := range got {
		if !slices.IsSorted(seq) || len(slices.Compact(slices.Clone(seq))) != len(seq) {
			t.Errorf("goroutine %d saw %v, want strictly increasing", g, seq)
		}
		all = append(all, seq...)
	}
	slices.Sort(all)
	for i, n := range all {
		if n != int64(i+1) {
			t.Fatalf("sorted outputs[%d] = %d, want %d (duplicate or gap)", i, n, i+1)
		}
	}
	if seq := getRun(t, s, "run-1").Seq; seq != goroutines*each {
		t.Errorf("Run.Seq = %d, want %d", seq, goroutines*each)
	}
}

func testObserve(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	prev := h.run("run-1").ModelContext
	steps := []ifc.Confidentiality{
		conf(`"A"`),
		conf(`"A"`, `{"anyOf":["B","C"]}`),
		nil,
		conf(`{"type":"https://example.org/PromptSlotInfluence"}`, `"D"`),
		conf(`"Base"`),
	}
	for i, obs := range steps {
		want := ifc.JoinModelContext(prev, obs)
		got, err := s.Observe(ctx, "run-1", obs)
		if err != nil {
			t.Fatalf("step %d: Observe = %v", i, err)
		}
		if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
			t.Errorf("step %d: Observe(%s) (-want +got):\n%s", i, obs, diff)
		}
		if diff := cmp.Diff(want, getRun(t, s, "run-1").ModelContext, cmpOpts); diff != "" {
			t.Errorf("step %d: Run.ModelContext (-want +got):\n%s", i, diff)
		}
		prev = want
	}
	// The returned label is a copy.
	got, err := s.Observe(ctx, "run-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	got[0][1] = 'X'
	if diff := cmp.Diff(prev, getRun(t, s, "run-1").ModelContext, cmpOpts); diff != "" {
		t.Errorf("ModelContext changed through Observe's result (-want +got):\n%s", diff)
	}
}

// testObserveLabelLimit: a join that would take the model-context label
// past MaxLabelClauses is refused with nothing written; clauses already
// held cost nothing; racing joins never pass the cap.
func testObserveLabelLimit(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.storeWith(t, Config{MaxLabelClauses: 3})
	create(t, s, h.run("run-1")) // "Base"
	label := func() []string {
		var out []string
		for _, c := range getRun(t, s, "run-1").ModelContext {
			out = append(out, string(c))
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		obs  ifc.Confidentiality
		want error
		held []string
	}{
		{conf(`"A"`), nil, []string{`"A"`, `"Base"`}},
		{conf(`"A"`, `"B"`), nil, []string{`"A"`, `"B"`, `"Base"`}}, // exactly at the cap
		{conf(`"C"`), store.ErrLabelLimit, []string{`"A"`, `"B"`, `"Base"`}},
		{conf(`"B"`, `"C"`), store.ErrLabelLimit, []string{`"A"`, `"B"`, `"Base"`}},
		{conf(`"B"`, `"A"`), nil, []string{`"A"`, `"B"`, `"Base"`}}, // held: free
		{nil, nil, []string{`"A"`, `"B"`, `"Base"`}},
	}
	for i, st := range steps {
		_, err := s.Observe(ctx, "run-1", st.obs)
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Errorf("step %d: Observe(%s) = %v, want %v", i, st.obs, err, st.want)
		}
		if diff := cmp.Diff(st.held, label()); diff != "" {
			t.Errorf("step %d: label (-want +got):\n%s", i, diff)
		}
	}

	const goroutines, capacity = 20, 6
	s = h.storeWith(t, Config{MaxLabelClauses: capacity})
	create(t, s, h.run("run-1"))
	errs := make([]error, goroutines)
	won := make([]bool, goroutines)
	parallel(goroutines, func(g int) {
		_, err := s.Observe(ctx, "run-1", conf(fmt.Sprintf(`"G%d"`, g)))
		switch {
		case err == nil:
			won[g] = true
		case !errors.Is(err, store.ErrLabelLimit):
			errs[g] = err
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, c := range label() {
		held[c] = true
	}
	if len(held) != capacity {
		t.Errorf("label holds %d clauses after racing joins, want the cap %d", len(held), capacity)
	}
	for g, w := range won {
		if in := held[fmt.Sprintf(`"G%d"`, g)]; in != w {
			t.Errorf("join %d succeeded %v, its clause held %v", g, w, in)
		}
	}
}

func testObserveConcurrent(t *testing.T, h *harness) {
	const goroutines = 50
	ctx := context.Background()
	s := h.store(t, 0)
	r := h.run("run-1")
	create(t, s, r)
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		// Each goroutine adds its own atom and one shared by all.
		_, errs[g] = s.Observe(ctx, "run-1", conf(fmt.Sprintf(`"G%d"`, g), `"Shared"`))
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	var got []string
	for _, c := range getRun(t, s, "run-1").ModelContext {
		got = append(got, string(c))
	}
	want := []string{`"Base"`, `"Shared"`}
	for g := range goroutines {
		want = append(want, fmt.Sprintf(`"G%d"`, g))
	}
	// Order depends on scheduling; the set must be exact (no lost update,
	// no duplicate).
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("ModelContext after concurrent Observe (-want +got):\n%s", diff)
	}
	if got[0] != `"Base"` {
		t.Errorf("ModelContext[0] = %s, want the initial \"Base\" first", got[0])
	}
}

// --- call log ---

func sampleCall(n int) store.Call {
	code := n
	return store.Call{
		OutputID:  fmt.Sprintf("run-1:loom_search:%d", n),
		Tool:      "loom_search",
		Status:    "ok",
		Admitted:  1,
		Withheld:  1,
		Omitted:   n,
		Truncated: n%2 == 0,
		Observed:  conf(`"A"`),
		ExitCode:  &code,
		Duration:  time.Duration(n) * time.Millisecond,
		StartedAt: epoch.Add(time.Duration(n) * time.Second),
		Entries: []store.CallEntry{
			{Status: "admitted", LabelSource: "row", Handle: "cfh:v:22222",
				Label: ifc.Disclosed{Confidentiality: [][]string{{"A"}}, Integrity: []string{"I"}}},
			{Status: "withheld", ReasonCode: "cfc_ceiling_exceeded"},
		},
		TraceID: []string{"", "4bf92f3577b34da6a3ce929d0e0e4736"}[n%2], // with and without
	}
}

func testCalls(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	got, err := allCalls(ctx, s, "run-1")
	if err != nil || len(got) != 0 {
		t.Fatalf("Calls(new run) = %d, %v, want 0, nil", len(got), err)
	}
	failed := store.Call{OutputID: "run-1:loom_people:3", Tool: "loom_people", Status: "error",
		Code: "command_failed", HostCode: "exit_status"}
	// A failure, without a trace id and with one, with and without argv.
	why := store.Call{OutputID: "run-1:loom_search:4", Tool: "loom_search", Status: "error",
		Code: "command_failed", Failure: &store.Failure{Reason: "exit_status", Detail: "exit status 3",
			StderrTail: "…locked\n", Argv: []string{"/opt/loom", "search", "q"}}}
	whyTraced := store.Call{OutputID: "run-1:loom_search:5", Tool: "loom_search", Status: "error",
		Code: "cancelled", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Failure: &store.Failure{Reason: "cancelled"}}
	want := []store.Call{sampleCall(1), sampleCall(2), failed, why, whyTraced}
	for _, c := range want {
		if err := s.AppendCall(ctx, "run-1", c); err != nil {
			t.Fatalf("AppendCall = %v", err)
		}
	}
	got, err = allCalls(ctx, s, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
	if n := getRun(t, s, "run-1").Calls; n != 5 {
		t.Errorf("Run.Calls = %d, want 5", n)
	}
}

func testCallsCopies(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	failed := func() store.Call {
		return store.Call{OutputID: "run-1:loom_search:2", Tool: "loom_search", Status: "error", Code: "command_failed",
			Failure: &store.Failure{Reason: "signal", Argv: []string{"/opt/loom", "search"}}}
	}
	in, inFailed := sampleCall(1), failed()
	for _, c := range []store.Call{in, inFailed} {
		if err := s.AppendCall(ctx, "run-1", c); err != nil {
			t.Fatal(err)
		}
	}
	want := []store.Call{sampleCall(1), failed()}
	inFailed.Failure.Argv[0] = "Z"
	inFailed.Failure.Reason = "Z"
	// Mutate what was passed in.
	in.Entries[0].Status = "withheld"
	in.Entries[0].Label.Confidentiality[0][0] = "Z"
	in.Observed[0][1] = 'Z'
	*in.ExitCode = 99
	// Mutate what came out.
	got, err := allCalls(ctx, s, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	got[0].Tool = "changed"
	got[0].Entries[0].Label.Integrity[0] = "Z"
	got[0].Entries = append(got[0].Entries[:0], store.CallEntry{Status: "bogus"})
	got[0].Observed[0][1] = 'Y'
	*got[0].ExitCode = 98
	got[1].Failure.Argv[1] = "Y"
	got[1].Failure.Detail = "Y"
	again, err := allCalls(ctx, s, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again, cmpOpts); diff != "" {
		t.Errorf("call log changed through a copy (-want +got):\n%s", diff)
	}
}

func testCallsConcurrent(t *testing.T, h *harness) {
	const goroutines = 50
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		errs[g] = s.AppendCall(ctx, "run-1", sampleCall(g))
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got, err := allCalls(ctx, s, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range got {
		seen[c.OutputID] = true
	}
	if len(got) != goroutines || len(seen) != goroutines {
		t.Errorf("Calls = %d (%d distinct), want %d", len(got), len(seen), goroutines)
	}
	if n := getRun(t, s, "run-1").Calls; n != goroutines {
		t.Errorf("Run.Calls = %d, want %d", n, goroutines)
	}
}

// testCallsLongLog reads a log longer than one read step of any store
// (Redis pages it) while calls keep being appended: every read is the log
// in order, at least as long as it was when the read began, and Run.Calls
// counts every record.
func testCallsLongLog(t *testing.T, h *harness) {
	const before, during = 2345, 400
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	call := func(n int) store.Call {
		return store.Call{OutputID: fmt.Sprintf("run-1:loom_search:%d", n), Tool: "loom_search", Status: "ok"}
	}
	for n := 1; n <= before; n++ {
		if err := s.AppendCall(ctx, "run-1", call(n)); err != nil {
			t.Fatalf("AppendCall %d = %v", n, err)
		}
	}
	inOrder := func(got []store.Call, atLeast int) {
		t.Helper()
		if len(got) < atLeast || len(got) > before+during {
			t.Errorf("Calls = %d records, want %d..%d", len(got), atLeast, before+during)
		}
		for i, c := range got {
			if want := call(i + 1).OutputID; c.OutputID != want {
				t.Errorf("Calls[%d].OutputID = %q, want %q", i, c.OutputID, want)
				return
			}
		}
	}
	done := make(chan error, 1)
	go func() {
		var err error
		for n := before + 1; n <= before+during && err == nil; n++ {
			err = s.AppendCall(ctx, "run-1", call(n))
		}
		done <- err
	}()
	for range 3 {
		got, err := allCalls(ctx, s, "run-1")
		if err != nil {
			t.Fatalf("Calls while appending = %v", err)
		}
		inOrder(got, before)
	}
	if err := <-done; err != nil {
		t.Fatalf("AppendCall = %v", err)
	}
	got, err := allCalls(ctx, s, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(got, before+during)
	if n := getRun(t, s, "run-1").Calls; n != before+during {
		t.Errorf("Run.Calls = %d, want %d", n, before+during)
	}
}

// testCallsPage: a page is the records after the first after, at most
// limit of them (limit <= 0: all the rest), with the log's length; past the
// end it is empty, and a negative after counts as 0.
func testCallsPage(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	if got, total, err := s.CallsPage(ctx, "run-1", 0, 10); err != nil || len(got) != 0 || total != 0 {
		t.Fatalf("CallsPage(new run, 0, 10) = %d, %d, %v, want 0, 0, nil", len(got), total, err)
	}
	var all []store.Call
	for n := 1; n <= 7; n++ {
		all = append(all, sampleCall(n))
		if err := s.AppendCall(ctx, "run-1", all[n-1]); err != nil {
			t.Fatalf("AppendCall = %v", err)
		}
	}
	tests := []struct {
		after, limit int
		want         []store.Call
	}{
		{0, 0, all},
		{0, -1, all},
		{-3, 0, all},
		{0, 7, all},
		{0, 100, all},
		{0, 1, all[:1]},
		{2, 0, all[2:]},
		{2, 3, all[2:5]},
		{5, 3, all[5:]},
		{6, 1, all[6:]},
		{7, 0, []store.Call{}},
		{7, 5, []store.Call{}},
		{1 << 40, 1000, []store.Call{}},
		{math.MaxInt, 0, []store.Call{}},
		{math.MaxInt, math.MaxInt, []store.Call{}},
		{3, math.MaxInt, all[3:]},
	}
	for _, tt := range tests {
		got, total, err := s.CallsPage(ctx, "run-1", tt.after, tt.limit)
		if err != nil {
			t.Fatalf("CallsPage(%d, %d) = %v", tt.after, tt.limit, err)
		}
		if total != len(all) {
			t.Errorf("CallsPage(%d, %d) total = %d, want %d", tt.after, tt.limit, total, len(all))
		}
		if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
			t.Errorf("CallsPage(%d, %d) (-want +got):\n%s", tt.after, tt.limit, diff)
		}
	}
}

func testCallsPageCopies(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	for n := 1; n <= 2; n++ {
		if err := s.AppendCall(ctx, "run-1", sampleCall(n)); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := s.CallsPage(ctx, "run-1", 1, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("CallsPage(1, 1) = %d, %v, want 1, nil", len(got), err)
	}
	got[0].Tool = "changed"
	got[0].Entries[0].Label.Integrity[0] = "Z"
	got[0].Observed[0][1] = 'Y'
	*got[0].ExitCode = 98
	again, _, err := s.CallsPage(ctx, "run-1", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.Call{sampleCall(2)}, again, cmpOpts); diff != "" {
		t.Errorf("call log changed through a page (-want +got):\n%s", diff)
	}
}

// testCallsPageLongLog pages through a log longer than one read step of
// any store (Redis reads 1,000 records a step), with pages that straddle
// steps: the pages join to the whole log in order.
func testCallsPageLongLog(t *testing.T, h *harness) {
	const n = 2345
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	id := func(n int) string { return fmt.Sprintf("run-1:loom_search:%d", n) }
	for i := 1; i <= n; i++ {
		if err := s.AppendCall(ctx, "run-1", store.Call{OutputID: id(i), Tool: "loom_search", Status: "ok"}); err != nil {
			t.Fatalf("AppendCall %d = %v", i, err)
		}
	}
	check := func(name string, got []store.Call, from, count int) {
		t.Helper()
		if len(got) != count {
			t.Fatalf("%s = %d records, want %d", name, len(got), count)
		}
		for i, c := range got {
			if want := id(from + i + 1); c.OutputID != want {
				t.Fatalf("%s[%d].OutputID = %q, want %q", name, i, c.OutputID, want)
			}
		}
	}
	// The rest of the log from inside its first step, across two more.
	got, total, err := s.CallsPage(ctx, "run-1", 999, 0)
	if err != nil || total != n {
		t.Fatalf("CallsPage(999, 0) total = %d, %v, want %d, nil", total, err, n)
	}
	check("CallsPage(999, 0)", got, 999, n-999)
	// Pages of 700: each after is where the last page ended.
	after := 0
	for after < n {
		got, total, err := s.CallsPage(ctx, "run-1", after, 700)
		if err != nil || total != n {
			t.Fatalf("CallsPage(%d, 700) total = %d, %v, want %d, nil", after, total, err, n)
		}
		check(fmt.Sprintf("CallsPage(%d, 700)", after), got, after, min(700, n-after))
		after += len(got)
	}
}

// --- handles ---

func testMintDedupe(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	first := mint(t, s, "run-1", refs(1, 2))
	if first[0] == first[1] {
		t.Fatalf("Mint(two identities) gave one token %q", first[0])
	}
	// The Token field of a registration is ignored.
	withToken := ref(2)
	withToken.Token = "cfh:v:zzzzz"
	second := mint(t, s, "run-1", []store.Referent{withToken, ref(3), ref(1), ref(3)})
	if second[0] != first[1] || second[2] != first[0] {
		t.Errorf("re-minted tokens = %q, %q, want %q, %q", second[0], second[2], first[1], first[0])
	}
	if second[1] != second[3] {
		t.Errorf("one identity twice in a batch got %q and %q", second[1], second[3])
	}
	if hs := handles(t, s, "run-1"); len(hs) != 3 {
		t.Errorf("Handles = %d referents, want 3", len(hs))
	}
	if n := getRun(t, s, "run-1").Handles; n != 3 {
		t.Errorf("Run.Handles = %d, want 3", n)
	}
	// Separate copies of an identity (new buffers) are the same referent.
	third, err := s.Mint(ctx, "run-1", refs(1, 2, 3), store.MintLimits{Handles: 3, Bytes: 1})
	if err != nil {
		t.Fatalf("Mint(held identities at the cap) = %v, want nil", err)
	}
	if diff := cmp.Diff([]string{first[0], first[1], second[1]}, third); diff != "" {
		t.Errorf("re-minted tokens (-want +got):\n%s", diff)
	}
}

func testMintDistinctIdentities(t *testing.T, h *harness) {
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	base := ref(1)
	vary := map[string]func(r *store.Referent){
		"base":            func(r *store.Referent) {},
		"kind":            func(r *store.Referent) { r.Kind = "cell" },
		"source":          func(r *store.Referent) { r.Source = "loom_page_read" },
		"value":           func(r *store.Referent) { r.Value = []byte(`{"id":"row-1","title":"Row 1 "}`) },
		"confidentiality": func(r *store.Referent) { r.Label.Confidentiality = conf(`"A"`, `"B"`) },
		"public":          func(r *store.Referent) { r.Label.Confidentiality = nil },
		"integrity":       func(r *store.Referent) { r.Label.Integrity = nil },
		"labelSource":     func(r *store.Referent) { r.LabelSource = "query" },
		"field boundary":  func(r *store.Referent) { r.Kind, r.Source = "documentloom", "_search" },
	}
	var names []string
	var rs []store.Referent
	for name, f := range vary {
		r := base
		r.Label = ifc.Label{Confidentiality: slices.Clone(base.Label.Confidentiality), Integrity: slices.Clone(base.Label.Integrity)}
		f(&r)
		names = append(names, name)
		rs = append(rs, r)
	}
	toks := mint(t, s, "run-1", rs)
	byToken := map[string]string{}
	for i, tok := range toks {
		if other, ok := byToken[tok]; ok {
			t.Errorf("identities %q and %q share token %q", other, names[i], tok)
		}
		byToken[tok] = names[i]
	}
	if hs := handles(t, s, "run-1"); len(hs) != len(rs) {
		t.Errorf("Handles = %d, want %d", len(hs), len(rs))
	}
}

func testMintTokenGrammar(t *testing.T, h *harness) {
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	var ns []int
	for i := range 200 {
		ns = append(ns, i)
	}
	for _, tok := range mint(t, s, "run-1", refs(ns...)) {
		if len(tok) != 11 || !strings.HasPrefix(tok, "cfh:v:") ||
			strings.Trim(tok[6:], "23456789abcdefghjkmnpqrstvwxyz") != "" {
			t.Errorf("token %q does not match cfh:v:[23456789abcdefghjkmnpqrstvwxyz]{5}", tok)
		}
		if !store.IsValueToken(tok) || store.TokenPattern.FindString("see "+tok+".") != tok {
			t.Errorf("token %q not recognised by IsValueToken/TokenPattern", tok)
		}
	}
}

// expectedTokens applies MintToken's rule to refs minted in order into an
// empty table: each new identity takes the first attempt not yet taken.
func expectedTokens(runID string, rs []store.Referent) []string {
	held := map[string]string{} // identity -> token
	taken := map[string]bool{}
	var out []string
	for _, r := range rs {
		id := string(store.Identity(r))
		if tok, ok := held[id]; ok {
			out = append(out, tok)
			continue
		}
		tok := store.MintToken(runID, []byte(id), 0)
		for attempt := 1; taken[tok]; attempt++ {
			tok = store.MintToken(runID, []byte(id), attempt)
		}
		held[id], taken[tok] = tok, true
		out = append(out, tok)
	}
	return out
}

func testMintDeterministic(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	rs := refs(5, 1, 4, 1, 3)
	want := expectedTokens("run-1", rs)
	create(t, s, h.run("run-1"))
	if diff := cmp.Diff(want, mint(t, s, "run-1", rs)); diff != "" {
		t.Errorf("Mint tokens vs MintToken (-want +got):\n%s", diff)
	}
	// The same id, deleted and created again, mints the same tokens.
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	create(t, s, h.run("run-1"))
	if diff := cmp.Diff(want, mint(t, s, "run-1", rs)); diff != "" {
		t.Errorf("tokens after recreating the run (-want +got):\n%s", diff)
	}
	// Another store (a new store, as after a restart) agrees too.
	s2 := h.newStore(t, Config{Now: storeNow(h)})
	create(t, s2, h.run("run-1"))
	if diff := cmp.Diff(want, mint(t, s2, "run-1", rs)); diff != "" {
		t.Errorf("tokens in a second store (-want +got):\n%s", diff)
	}
}

func storeNow(h *harness) func() time.Time {
	if h.opts.RealTime {
		return nil
	}
	return h.Now
}

func testMintRunsIndependent(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-a"))
	create(t, s, h.run("run-b"))
	rs := refs(1, 2, 3, 4, 5, 6, 7, 8)
	a := mint(t, s, "run-a", rs)
	b := mint(t, s, "run-b", rs)
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	if same == len(a) {
		t.Errorf("runs minted identical tokens %q for the same rows", a)
	}
	if diff := cmp.Diff(expectedTokens("run-b", rs), b); diff != "" {
		t.Errorf("run-b tokens (-want +got):\n%s", diff)
	}
	for _, tok := range a {
		if slices.Contains(b, tok) {
			continue // a chance match of 5 characters; not held by run-b's rule
		}
		if _, ok, err := s.Handle(ctx, "run-b", tok); ok || err != nil {
			t.Errorf("Handle(run-b, run-a's %q) = %v, %v, want false, nil", tok, ok, err)
		}
	}
	// Minting in one run does not grow the other.
	mint(t, s, "run-a", refs(9, 10))
	if n := getRun(t, s, "run-b").Handles; n != len(rs) {
		t.Errorf("Run(run-b).Handles = %d, want %d", n, len(rs))
	}
}

func testMintEmpty(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	toks, err := s.Mint(ctx, "run-1", nil, store.MintLimits{Handles: 1, Bytes: 1})
	if err != nil || len(toks) != 0 {
		t.Errorf("Mint(nil) = %q, %v, want [], nil", toks, err)
	}
	if hs := handles(t, s, "run-1"); len(hs) != 0 {
		t.Errorf("Handles(new run) = %d, want 0", len(hs))
	}
}

func testMintConcurrent(t *testing.T, h *harness) {
	const (
		goroutines = 32
		rounds     = 20
		pool       = 300
		batch      = 25
	)
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	got := make([]map[int]string, goroutines) // identity -> token, per goroutine
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		got[g] = map[int]string{}
		for round := range rounds {
			// Overlapping windows of the pool, different per goroutine.
			var ns []int
			for k := range batch {
				ns = append(ns, (g*7+round*11+k*3)%pool)
			}
			toks, err := s.Mint(ctx, "run-1", refs(ns...), store.MintLimits{})
			if err != nil {
				errs[g] = err
				return
			}
			for k, n := range ns {
				if prev, ok := got[g][n]; ok && prev != toks[k] {
					errs[g] = fmt.Errorf("identity %d got %q then %q", n, prev, toks[k])
					return
				}
				got[g][n] = toks[k]
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	tokenOf := map[int]string{}
	identityOf := map[string]int{}
	for _, m := range got {
		for n, tok := range m {
			if prev, ok := tokenOf[n]; ok && prev != tok {
				t.Errorf("identity %d has two tokens: %q and %q", n, prev, tok)
			}
			if prev, ok := identityOf[tok]; ok && prev != n {
				t.Errorf("token %q has two identities: %d and %d", tok, prev, n)
			}
			tokenOf[n], identityOf[tok] = tok, n
		}
	}
	hs := handles(t, s, "run-1")
	if len(hs) != len(tokenOf) {
		t.Errorf("Handles = %d referents, want %d distinct identities", len(hs), len(tokenOf))
	}
	if n := getRun(t, s, "run-1").Handles; n != len(hs) {
		t.Errorf("Run.Handles = %d, want %d", n, len(hs))
	}
	for n, tok := range tokenOf {
		r, ok, err := s.Handle(ctx, "run-1", tok)
		if err != nil || !ok {
			t.Fatalf("Handle(%q) = %v, %v, want held", tok, ok, err)
		}
		want := ref(n)
		want.Token = tok
		if diff := cmp.Diff(want, r, cmpOpts); diff != "" {
			t.Errorf("Handle(%q) (-want +got):\n%s", tok, diff)
		}
	}
}

func testMintConcurrentLimit(t *testing.T, h *harness) {
	const (
		goroutines = 20
		batch      = 10
		max        = 95
	)
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	ok := mintRacing(t, s, goroutines, batch, store.MintLimits{Handles: max})
	hs := handles(t, s, "run-1")
	won := 0
	for _, w := range ok {
		if w {
			won++
		}
	}
	if want := max / batch * batch; len(hs) != want || won*batch != want {
		t.Errorf("Handles = %d after %d successful batches of %d, want %d", len(hs), won, batch, want)
	}
	wholeBatches(t, hs, batch, ok)
}

// mintRacing mints goroutines disjoint batches of batch new identities on
// run-1 at once under lim, each all or nothing, and reports which were
// minted; any error but ErrHandleLimit fails the test.
func mintRacing(t *testing.T, s Store, goroutines, batch int, lim store.MintLimits) []bool {
	t.Helper()
	errs := make([]error, goroutines)
	ok := make([]bool, goroutines)
	parallel(goroutines, func(g int) {
		var ns []int
		for k := range batch {
			ns = append(ns, g*batch+k)
		}
		_, err := s.Mint(context.Background(), "run-1", refs(ns...), lim)
		switch {
		case err == nil:
			ok[g] = true
		case !errors.Is(err, store.ErrHandleLimit):
			errs[g] = err
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ok
}

// wholeBatches checks that every batch of mintRacing that succeeded is
// held whole, and none that failed left anything.
func wholeBatches(t *testing.T, hs []store.Referent, batch int, ok []bool) {
	t.Helper()
	present := map[string]bool{}
	for _, r := range hs {
		present[string(r.Value)] = true
	}
	for g := range ok {
		for k := range batch {
			if in := present[string(ref(g*batch+k).Value)]; in != ok[g] {
				t.Errorf("batch %d (succeeded %v): identity %d present = %v", g, ok[g], g*batch+k, in)
			}
		}
	}
}

func testHandleLimit(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	held := mint(t, s, "run-1", refs(1, 2))
	steps := []struct {
		name string
		ns   []int
		max  int
		want error
	}{
		{"two new past the cap", []int{3, 4}, 3, store.ErrHandleLimit},
		{"held and two new past the cap", []int{1, 3, 4}, 3, store.ErrHandleLimit},
		{"only held at a cap already reached", []int{2, 1}, 2, nil},
		{"only held above a lowered cap", []int{1}, 1, nil},
		{"one new, twice, up to the cap", []int{3, 1, 3}, 3, nil},
		{"one new past the cap", []int{4}, 3, store.ErrHandleLimit},
		{"zero is no cap", []int{4, 5}, 0, nil},
		{"negative is no cap", []int{6}, -1, nil},
	}
	wantLen := 2
	for _, st := range steps {
		before := handles(t, s, "run-1")
		toks, err := s.Mint(ctx, "run-1", refs(st.ns...), store.MintLimits{Handles: st.max})
		if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: Mint(%v, max %d) = %v, want %v", st.name, st.ns, st.max, err, st.want)
		}
		after := handles(t, s, "run-1")
		if err != nil {
			if toks != nil {
				t.Errorf("%s: refused Mint returned tokens %q", st.name, toks)
			}
			if diff := cmp.Diff(before, after, cmpOpts); diff != "" {
				t.Errorf("%s: refused Mint changed the table (-before +after):\n%s", st.name, diff)
			}
		} else {
			wantLen = len(before)
			seen := map[string]bool{}
			for _, r := range before {
				seen[r.Token] = true
			}
			for _, tok := range toks {
				if !seen[tok] {
					seen[tok] = true
					wantLen++
				}
			}
			if len(after) != wantLen {
				t.Errorf("%s: Handles = %d, want %d", st.name, len(after), wantLen)
			}
		}
		if n := getRun(t, s, "run-1").Handles; n != len(after) {
			t.Errorf("%s: Run.Handles = %d, want %d", st.name, n, len(after))
		}
	}
	if hs := handles(t, s, "run-1"); hs[0].Token != held[0] || hs[1].Token != held[1] || len(hs) != 6 {
		t.Errorf("final table = %d referents starting %q %q, want 6 starting %q", len(hs), hs[0].Token, hs[1].Token, held)
	}
}

// heldBytes is the sum of store.ReferentBytes over a handle table, what
// Run.HandleBytes must say.
func heldBytes(hs []store.Referent) int64 {
	var n int64
	for _, r := range hs {
		n += store.ReferentBytes(r)
	}
	return n
}

// testHandleByteLimit: a mint whose new identities would take the table's
// held bytes past MintLimits.Bytes registers nothing; held identities cost
// nothing; exactly at the cap is allowed.
func testHandleByteLimit(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	mint(t, s, "run-1", refs(1, 2))
	held := map[int]bool{1: true, 2: true}
	if got, want := getRun(t, s, "run-1").HandleBytes, store.ReferentBytes(ref(1))+store.ReferentBytes(ref(2)); got != want {
		t.Fatalf("Run.HandleBytes = %d, want %d", got, want)
	}
	// Each step's byte cap is computed from the table's held bytes and the
	// bytes of the step's new identities (each counted once).
	steps := []struct {
		name    string
		ns      []int
		handles int
		bytes   func(held, fresh int64) int64
		want    error
	}{
		{"two new one byte past the cap", []int{3, 4}, 0, func(h, f int64) int64 { return h + f - 1 }, store.ErrHandleLimit},
		{"held and two new one byte past the cap", []int{1, 3, 4}, 0, func(h, f int64) int64 { return h + f - 1 }, store.ErrHandleLimit},
		{"held and two new exactly at the cap", []int{1, 3, 4}, 0, func(h, f int64) int64 { return h + f }, nil},
		{"only held at a cap already reached", []int{2, 1}, 0, func(h, _ int64) int64 { return h }, nil},
		{"only held above a lowered cap", []int{4}, 0, func(int64, int64) int64 { return 1 }, nil},
		{"one new past a reached cap", []int{5}, 0, func(h, _ int64) int64 { return h }, store.ErrHandleLimit},
		{"one new, twice, exactly at the cap", []int{5, 1, 5}, 0, func(h, f int64) int64 { return h + f }, nil},
		{"byte cap under a roomy handle cap", []int{6}, 100, func(h, f int64) int64 { return h + f - 1 }, store.ErrHandleLimit},
		{"handle cap under a roomy byte cap", []int{6}, 5, func(h, f int64) int64 { return h + f + 100 }, store.ErrHandleLimit},
		{"both caps exactly reached", []int{6}, 6, func(h, f int64) int64 { return h + f }, nil},
		{"zero is no cap", []int{7, 8}, 0, func(int64, int64) int64 { return 0 }, nil},
		{"negative is no cap", []int{9}, 0, func(int64, int64) int64 { return -1 }, nil},
	}
	for _, st := range steps {
		before := handles(t, s, "run-1")
		var fresh int64
		seen := map[int]bool{}
		for _, n := range st.ns {
			if !held[n] && !seen[n] {
				fresh += store.ReferentBytes(ref(n))
			}
			seen[n] = true
		}
		lim := store.MintLimits{Handles: st.handles, Bytes: st.bytes(heldBytes(before), fresh)}
		toks, err := s.Mint(ctx, "run-1", refs(st.ns...), lim)
		if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: Mint(%v, %+v) = %v, want %v", st.name, st.ns, lim, err, st.want)
		}
		after := handles(t, s, "run-1")
		if err != nil {
			if toks != nil {
				t.Errorf("%s: refused Mint returned tokens %q", st.name, toks)
			}
			if diff := cmp.Diff(before, after, cmpOpts); diff != "" {
				t.Errorf("%s: refused Mint changed the table (-before +after):\n%s", st.name, diff)
			}
		} else {
			for n := range seen {
				held[n] = true
			}
			if len(after) != len(held) {
				t.Errorf("%s: Handles = %d, want %d", st.name, len(after), len(held))
			}
		}
		r := getRun(t, s, "run-1")
		if want := heldBytes(after); r.HandleBytes != want {
			t.Errorf("%s: Run.HandleBytes = %d, want %d", st.name, r.HandleBytes, want)
		}
		if r.Handles != len(after) {
			t.Errorf("%s: Run.Handles = %d, want %d", st.name, r.Handles, len(after))
		}
	}
	if n := len(handles(t, s, "run-1")); n != 9 {
		t.Errorf("final table = %d referents, want 9", n)
	}
}

// testMintConcurrentByteLimit: concurrent mints of disjoint batches under a
// byte cap are each all or nothing, the held bytes never pass the cap, and
// every refused batch would still not fit.
func testMintConcurrentByteLimit(t *testing.T, h *harness) {
	const (
		goroutines = 20
		batch      = 10
	)
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	batchBytes := make([]int64, goroutines)
	var all int64
	for g := range goroutines {
		for k := range batch {
			batchBytes[g] += store.ReferentBytes(ref(g*batch + k))
		}
		all += batchBytes[g]
	}
	limit := all / 2
	ok := mintRacing(t, s, goroutines, batch, store.MintLimits{Bytes: limit})
	hs := handles(t, s, "run-1")
	total := heldBytes(hs)
	if total > limit {
		t.Errorf("held bytes = %d, past the cap %d", total, limit)
	}
	if r := getRun(t, s, "run-1"); r.HandleBytes != total {
		t.Errorf("Run.HandleBytes = %d, want %d", r.HandleBytes, total)
	}
	wholeBatches(t, hs, batch, ok)
	for g := range goroutines {
		if !ok[g] && total+batchBytes[g] <= limit {
			t.Errorf("batch %d (%d bytes) refused, but fits the final %d of %d", g, batchBytes[g], total, limit)
		}
	}
}

func testHandlesOrderAndCopies(t *testing.T, h *harness) {
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	in := refs(3, 1, 2)
	toks := mint(t, s, "run-1", in)
	toks = append(toks, mint(t, s, "run-1", refs(2, 9, 1))[1])
	var want []store.Referent
	for i, n := range []int{3, 1, 2, 9} {
		r := ref(n)
		r.Token = toks[i]
		want = append(want, r)
	}
	// Mutate what was passed in.
	in[0].Value[2] = 'X'
	in[0].Label.Confidentiality[0][1] = 'X'
	in[0].Label.Integrity[0][1] = 'X'
	got := handles(t, s, "run-1")
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Fatalf("Handles (-want +got):\n%s", diff)
	}
	// Mutate what came out, in place and by append.
	got[0].Value[2] = 'Y'
	got[0].Label.Confidentiality[0][1] = 'Y'
	got[0].Label.Integrity = append(got[0].Label.Integrity[:0], ifc.Atom(`"Y"`))
	got[1].Value = append(got[1].Value[:3], "Y"...)
	got[2].Token = "cfh:v:yyyyy"
	one, _, err := s.Handle(context.Background(), "run-1", toks[3])
	if err != nil {
		t.Fatal(err)
	}
	one.Value[2] = 'Y'
	if diff := cmp.Diff(want, handles(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("handle table changed through a copy (-want +got):\n%s", diff)
	}
}

func testHandle(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	create(t, s, h.run("run-2"))
	toks := mint(t, s, "run-1", refs(1, 2))
	other := mint(t, s, "run-2", refs(7))[0]
	for i, tok := range toks {
		got, ok, err := s.Handle(ctx, "run-1", tok)
		want := ref(i + 1)
		want.Token = tok
		if err != nil || !ok {
			t.Fatalf("Handle(%q) = %v, %v, want held", tok, ok, err)
		}
		if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
			t.Errorf("Handle(%q) (-want +got):\n%s", tok, diff)
		}
	}
	unknown := []string{
		"", "cfh:v:", "cfh:v:2222", toks[0] + "2", strings.ToUpper(toks[0]),
		" " + toks[0], "cfh:a:" + toks[0][6:], "not a token",
	}
	if !slices.Contains(toks, other) {
		unknown = append(unknown, other)
	}
	for _, tok := range []string{"cfh:v:22222", "cfh:v:zzzzz"} {
		if !slices.Contains(toks, tok) {
			unknown = append(unknown, tok)
		}
	}
	for _, tok := range unknown {
		got, ok, err := s.Handle(ctx, "run-1", tok)
		if err != nil || ok {
			t.Errorf("Handle(run-1, %q) = %v, %v, want false, nil", tok, ok, err)
		}
		if diff := cmp.Diff(store.Referent{}, got, cmpOpts); diff != "" {
			t.Errorf("Handle(run-1, %q) returned a referent: %s", tok, diff)
		}
	}
}

// --- result ---

func sampleResult() store.Result {
	lbl := ifc.Label{Confidentiality: conf(`"A"`), Integrity: []ifc.Atom{ifc.Atom(`"I"`)}}
	return store.Result{
		Value: []byte(`{"summary":"text","cited":{"@link":"doc-1"}}`),
		Documents: []store.Document{
			{ID: "doc-1", Source: "loom_search", Value: []byte(`{"id":"row-1"}`), Label: lbl},
		},
		Receipt:   ifc.Label{Confidentiality: conf(`"B"`)},
		Label:     ifc.Label{Confidentiality: conf(`"A"`, `"B"`)},
		WrittenAt: epoch,
	}
}

func testResult(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	_, err := s.Result(ctx, "run-1")
	wantErr(t, "Result(before PutResult)", err, store.ErrNoResult)
	if getRun(t, s, "run-1").HasResult {
		t.Errorf("Run.HasResult = true before PutResult")
	}
	want := sampleResult()
	if err := s.PutResult(ctx, "run-1", want); err != nil {
		t.Fatalf("PutResult = %v", err)
	}
	got, err := s.Result(ctx, "run-1")
	if err != nil {
		t.Fatalf("Result = %v", err)
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if !getRun(t, s, "run-1").HasResult {
		t.Errorf("Run.HasResult = false after PutResult")
	}
	second := sampleResult()
	second.Value = []byte(`"other"`)
	wantErr(t, "PutResult(second)", s.PutResult(ctx, "run-1", second), store.ErrResultExists)
	got, err = s.Result(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("Result after refused PutResult (-want +got):\n%s", diff)
	}
}

func testResultCopies(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	in := sampleResult()
	if err := s.PutResult(ctx, "run-1", in); err != nil {
		t.Fatal(err)
	}
	in.Value[2] = 'X'
	in.Documents[0].Value[2] = 'X'
	in.Documents[0].Label.Confidentiality[0][1] = 'X'
	in.Label.Confidentiality[1][1] = 'X'
	got, err := s.Result(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	got.Value[2] = 'Y'
	got.Documents[0].ID = "changed"
	got.Receipt.Confidentiality[0][1] = 'Y'
	again, err := s.Result(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleResult(), again, cmpOpts); diff != "" {
		t.Errorf("result changed through a copy (-want +got):\n%s", diff)
	}
}

func testPing(t *testing.T, h *harness) {
	if err := h.store(t, 0).Ping(context.Background()); err != nil {
		t.Errorf("Ping = %v, want nil", err)
	}
}
