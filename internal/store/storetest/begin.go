package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/store"
)

// --- beginning an output: the rate bucket and the output number ---

func testBegin(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	want := h.run("run-1")
	create(t, s, want)
	create(t, s, h.run("run-2"))
	for n := int64(1); n <= 3; n++ {
		got, err := s.Begin(ctx, "run-1", store.Begin{})
		if err != nil || got.Seq != n {
			t.Fatalf("Begin(run-1) = Seq %d, %v, want %d, nil", got.Seq, err, n)
		}
		if got.ID != want.ID || got.TokenHash != want.TokenHash || !got.ExpiresAt.Equal(want.ExpiresAt) {
			t.Fatalf("Begin(run-1) = run %q, want the run as created", got.ID)
		}
	}
	if n, err := s.NextOutput(ctx, "run-1"); err != nil || n != 4 {
		t.Errorf("NextOutput after three Begins = %d, %v, want 4, nil (one sequence)", n, err)
	}
	if got, err := s.Begin(ctx, "run-2", store.Begin{}); err != nil || got.Seq != 1 {
		t.Errorf("Begin(run-2) = Seq %d, %v, want 1, nil (sequences are per run)", got.Seq, err)
	}
	_, err := s.Begin(ctx, "nope", store.Begin{Rate: store.Rate{PerSecond: 1, Burst: 1}})
	wantErr(t, "Begin(unknown run)", err, store.ErrRunNotFound)
}

func testBeginRate(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	create(t, s, h.run("run-2"))
	rate := store.Rate{PerSecond: 10, Burst: 3}
	begin := func(id string) (store.Run, error) { return s.Begin(ctx, id, store.Begin{Rate: rate}) }
	for i := range 3 {
		if _, err := begin("run-1"); err != nil {
			t.Fatalf("Begin #%d within the burst = %v, want nil", i+1, err)
		}
	}
	_, err := begin("run-1")
	var rl *store.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, store.ErrRateLimited) {
		t.Fatalf("Begin past the burst = %v, want a *RateLimitError", err)
	}
	if rl.RetryAfter <= 0 || rl.RetryAfter > 100*time.Millisecond {
		t.Errorf("RetryAfter = %v, want (0, 100ms] at 10 calls a second", rl.RetryAfter)
	}
	if seq := getRun(t, s, "run-1").Seq; seq != 3 {
		t.Errorf("Seq after a refusal = %d, want 3 (nothing taken)", seq)
	}
	if _, err := begin("run-2"); err != nil {
		t.Errorf("Begin(run-2) = %v, want nil (buckets are per run)", err)
	}
	if h.opts.RealTime {
		return // the refill below is timed exactly on the fake clock
	}
	h.advance(100 * time.Millisecond)
	if _, err := begin("run-1"); err != nil {
		t.Errorf("Begin 100ms later = %v, want nil (one call refilled)", err)
	}
	_, err = begin("run-1")
	wantErr(t, "Begin again at once", err, store.ErrRateLimited)
	h.advance(time.Minute)
	for i := range 3 {
		if _, err := begin("run-1"); err != nil {
			t.Fatalf("Begin #%d a minute later = %v, want nil", i+1, err)
		}
	}
	_, err = begin("run-1")
	wantErr(t, "Begin past a refilled burst", err, store.ErrRateLimited)

	// A recreated run starts with a full bucket.
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatalf("DeleteRun = %v", err)
	}
	create(t, s, h.run("run-1"))
	if _, err := begin("run-1"); err != nil {
		t.Errorf("Begin of a recreated run = %v, want nil", err)
	}
}

// testBeginRateConcurrent races many Begins of one run at a rate that
// refills nothing meanwhile: exactly the burst gets through, and each of
// them a number of its own.
func testBeginRateConcurrent(t *testing.T, h *harness) {
	const goroutines, burst = 40, 7
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	seqs := make([]int64, goroutines)
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		r, err := s.Begin(ctx, "run-1", store.Begin{Rate: store.Rate{PerSecond: 1e-6, Burst: burst}})
		seqs[g], errs[g] = r.Seq, err
	})
	seen := map[int64]bool{}
	for g, err := range errs {
		switch {
		case err == nil:
			if seen[seqs[g]] {
				t.Errorf("Seq %d taken twice", seqs[g])
			}
			seen[seqs[g]] = true
		case !errors.Is(err, store.ErrRateLimited):
			t.Errorf("Begin = %v, want nil or ErrRateLimited", err)
		}
	}
	if len(seen) != burst {
		t.Errorf("%d Begins got through, want the burst, %d", len(seen), burst)
	}
	if seq := getRun(t, s, "run-1").Seq; seq != burst {
		t.Errorf("Seq = %d, want %d", seq, burst)
	}
}

// testBeginToken: Begin with a token hash opens only the run stored with
// it; another hash, or the hash of another run, takes nothing.
func testBeginToken(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	r1, r2 := h.run("run-1"), h.run("run-2")
	create(t, s, r1)
	create(t, s, r2)
	rate := store.Rate{PerSecond: 1e-6, Burst: 1}
	for _, tok := range []store.TokenHash{r2.TokenHash, store.HashToken("not a token")} {
		_, err := s.Begin(ctx, "run-1", store.Begin{Token: &tok, Rate: rate})
		wantErr(t, "Begin(run-1) with another token", err, store.ErrRunNotFound)
	}
	got, err := s.Begin(ctx, "run-1", store.Begin{Token: &r1.TokenHash, Rate: rate})
	if err != nil || got.Seq != 1 || got.ID != "run-1" {
		t.Fatalf("Begin(run-1) with its token = Seq %d, %v, want 1, nil (the refusals took nothing)", got.Seq, err)
	}
	if _, err := s.Begin(ctx, "nope", store.Begin{Token: &r1.TokenHash}); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Begin(unknown run) = %v, want ErrRunNotFound", err)
	}
}

// testBeginMaxSeq: past MaxSeq numbers Begin takes nothing, not even a
// call from the bucket, and answers ErrOutputLimit before ErrRateLimited.
func testBeginMaxSeq(t *testing.T, h *harness) {
	ctx := context.Background()
	s := h.store(t, 0)
	create(t, s, h.run("run-1"))
	b := store.Begin{Rate: store.Rate{PerSecond: 1e-6, Burst: 3}, MaxCalls: 2}
	for n := int64(1); n <= 2; n++ {
		if got, err := s.Begin(ctx, "run-1", b); err != nil || got.Seq != n {
			t.Fatalf("Begin #%d = Seq %d, %v, want %d, nil", n, got.Seq, err, n)
		}
	}
	for range 3 {
		_, err := s.Begin(ctx, "run-1", b)
		wantErr(t, "Begin past MaxSeq", err, store.ErrCallLimit)
	}
	if seq := getRun(t, s, "run-1").Seq; seq != 2 {
		t.Errorf("Seq = %d, want 2 (a refusal takes no number)", seq)
	}
	b.MaxCalls = 0
	if got, err := s.Begin(ctx, "run-1", b); err != nil || got.Seq != 3 {
		t.Errorf("Begin with no cap = Seq %d, %v, want 3, nil (the refusals took no call from the bucket)", got.Seq, err)
	}
}
