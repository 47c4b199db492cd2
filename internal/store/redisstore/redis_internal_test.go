package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/store"
)

// internalRedis returns a store on the test Redis under a prefix of its
// own, or skips the test.
func internalRedis(t testing.TB) (*Store, *redis.Client) {
	t.Helper()
	c := redis.NewClient(testRedisOptions(t))
	prefix := fmt.Sprintf("loom-gateway-itest:%d:", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
		c.Close()
	})
	return New(c, Options{Prefix: prefix}), c
}

// testRedisOptions returns the options of the test server's URL
// (LOOM_GATEWAY_TEST_REDIS), or skips t when there is none.
func testRedisOptions(t testing.TB) *redis.Options {
	t.Helper()
	url := os.Getenv("LOOM_GATEWAY_TEST_REDIS")
	if url == "" {
		t.Skip("LOOM_GATEWAY_TEST_REDIS is not set")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// colliding returns two referents of the run whose first tokens collide,
// found by the birthday bound (a few thousand tries in 30^5 tokens).
func colliding(t *testing.T, runID string) (a, b store.Referent) {
	t.Helper()
	seen := map[string]store.Referent{}
	for i := range 200000 {
		r := store.Referent{Kind: "document", Source: "loom_search", LabelSource: "row", Value: fmt.Appendf(nil, `{"n":%d}`, i)}
		tok := store.MintToken(runID, store.Identity(r), 0)
		if prev, ok := seen[tok]; ok {
			return prev, r
		}
		seen[tok] = r
	}
	t.Fatal("no collision in 200000 identities")
	return
}

// TestRedisMintCollision mints two identities whose first tokens collide,
// one call after the other and in one batch, with a single candidate per
// referent at first so that the script asks for more.
func TestRedisMintCollision(t *testing.T) {
	s, _ := internalRedis(t)
	s.candidates = 1
	ctx := context.Background()
	a, b := colliding(t, "run-c")
	want := []string{store.MintToken("run-c", store.Identity(a), 0), store.MintToken("run-c", store.Identity(b), 1)}
	for _, batched := range []bool{false, true} {
		if err := s.CreateRun(ctx, store.Run{ID: "run-c", TokenHash: store.HashToken("c"), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		var got []string
		if batched {
			toks, err := s.Mint(ctx, "run-c", []store.Referent{a, b, a}, store.MintLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if toks[2] != toks[0] {
				t.Errorf("batched: one identity twice got %s and %s", toks[0], toks[2])
			}
			got = toks[:2]
		} else {
			for _, r := range []store.Referent{a, b} {
				toks, err := s.Mint(ctx, "run-c", []store.Referent{r}, store.MintLimits{})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, toks[0])
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("batched %v: tokens (-want +got):\n%s", batched, diff)
		}
		for i, r := range []store.Referent{a, b} {
			h, ok, err := s.Handle(ctx, "run-c", want[i])
			if err != nil || !ok || string(h.Value) != string(r.Value) {
				t.Errorf("Handle(%s) = %s, %v, %v, want %s", want[i], h.Value, ok, err, r.Value)
			}
		}
		if err := s.DeleteRun(ctx, "run-c"); err != nil {
			t.Fatal(err)
		}
	}
}

// failScript makes every call of one script fail as if Redis went away
// after the command was sent.
type failScript struct{ sha string }

func (f failScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f failScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (f failScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[0] == "evalsha" && args[1] == f.sha {
			err := errors.New("connection reset (injected)")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// TestRedisCreateRunUndo fails the second step of CreateRun: the run is not
// there, and its id, token hash and place under the limit are free again.
func TestRedisCreateRunUndo(t *testing.T) {
	s, c := internalRedis(t)
	s.maxRuns = 1
	ctx := context.Background()
	r := store.Run{ID: "run-u", TokenHash: store.HashToken("u"), ExpiresAt: time.Now().Add(time.Hour)}

	opt, err := redis.ParseURL(os.Getenv("LOOM_GATEWAY_TEST_REDIS"))
	if err != nil {
		t.Fatal(err)
	}
	broken := redis.NewClient(opt)
	defer broken.Close()
	broken.AddHook(failScript{sha: scriptCreate.sha})
	bs := New(broken, Options{Prefix: s.prefix, MaxRuns: 1})
	if err := bs.CreateRun(ctx, r); !errors.Is(err, store.ErrStoreUnavailable) {
		t.Fatalf("CreateRun(second step fails) = %v, want ErrStoreUnavailable", err)
	}
	if _, err := s.Run(ctx, "run-u"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Run after the failed create = %v, want ErrRunNotFound", err)
	}
	if n, err := c.ZCard(ctx, s.runsKey()).Result(); err != nil || n != 0 {
		t.Errorf("index holds %d runs, %v, want 0", n, err)
	}
	if n, err := c.Exists(ctx, s.tokKey(r.TokenHash)).Result(); err != nil || n != 0 {
		t.Errorf("token key exists = %d, %v, want 0", n, err)
	}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Errorf("CreateRun again = %v, want nil", err)
	}
}

// TestRedisExpiryEdges: a run created already expired is accepted and
// gone; a run without ExpiresAt never expires and its keys have no TTL.
func TestRedisExpiryEdges(t *testing.T) {
	s, c := internalRedis(t)
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateRun(ctx, store.Run{ID: "past", TokenHash: store.HashToken("p"), CreatedAt: now, ExpiresAt: now.Add(-time.Second)}); err != nil {
		t.Fatalf("CreateRun(expired) = %v, want nil", err)
	}
	if _, err := s.Run(ctx, "past"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Run(created expired) = %v, want ErrRunNotFound", err)
	}
	if _, err := s.RunByToken(ctx, store.HashToken("p")); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("RunByToken(created expired) = %v, want ErrRunNotFound", err)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "forever", TokenHash: store.HashToken("f"), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mint(ctx, "forever", []store.Referent{{Kind: "document", Value: []byte(`1`)}}, store.MintLimits{}); err != nil {
		t.Fatal(err)
	}
	k := s.keys("forever")
	for _, key := range []string{k.run, k.handles, k.order, s.tokKey(store.HashToken("f"))} {
		if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl != -1 {
			t.Errorf("PTTL %s = %v, %v, want -1 (no expiry)", key, ttl, err)
		}
	}
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID != "forever" || !runs[0].ExpiresAt.IsZero() {
		t.Errorf("Runs = %+v, %v, want [forever] with a zero ExpiresAt", runs, err)
	}
	if r, err := s.RunByToken(ctx, store.HashToken("f")); err != nil || r.ID != "forever" {
		t.Errorf("RunByToken(forever) = %q, %v", r.ID, err)
	}
}

// dropProxy forwards TCP to Redis and, while drops > 0, closes a
// connection instead of passing back the first reply it sees: the command
// ran on the server but its reply is lost.
type dropProxy struct {
	ln     net.Listener
	target string
	drops  atomic.Int32
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *dropProxy) serve(c net.Conn) {
	defer c.Close()
	r, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer r.Close()
	go func() { _, _ = io.Copy(r, c); r.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if p.drops.Load() > 0 && p.drops.Add(-1) >= 0 {
				return // the reply is lost
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestRedisWritesNotReplayed loses the reply of a write: go-redis retries
// reads, but must not send a write again, or an output number would be
// taken twice and a stored result refused as a duplicate.
func TestRedisWritesNotReplayed(t *testing.T) {
	s, c := internalRedis(t)
	ctx := context.Background()
	if err := s.CreateRun(ctx, store.Run{ID: "run-w", TokenHash: store.HashToken("w"), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// Load the scripts, so that the proxy's lost reply is the script's.
	if _, err := s.NextOutput(ctx, "run-w"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResult(ctx, "no-such-run", store.Result{}); !errors.Is(err, store.ErrRunNotFound) {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, "run-w"); err != nil {
		t.Fatal(err)
	}
	p := newDropProxy(t, c.Options().Addr)
	opt, err := redis.ParseURL(os.Getenv("LOOM_GATEWAY_TEST_REDIS"))
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr = p.ln.Addr().String()
	pc := redis.NewClient(opt)
	defer pc.Close()
	ps := New(pc, Options{Prefix: s.prefix})
	// Each lost reply closes a connection; warm a new one first, so that the
	// reply lost is the command's and not the connection handshake's.
	warm := func() {
		t.Helper()
		if err := ps.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}

	warm()
	p.drops.Store(1)
	if _, err := ps.NextOutput(ctx, "run-w"); !errors.Is(err, store.ErrStoreUnavailable) {
		t.Errorf("NextOutput(reply lost) = %v, want ErrStoreUnavailable", err)
	}
	if r, err := s.Run(ctx, "run-w"); err != nil || r.Seq != 2 {
		t.Errorf("Seq after one lost NextOutput reply = %d, %v, want 2 (sent once)", r.Seq, err)
	}
	warm()
	p.drops.Store(1)
	if err := ps.PutResult(ctx, "run-w", store.Result{Value: []byte(`1`)}); !errors.Is(err, store.ErrStoreUnavailable) {
		t.Errorf("PutResult(reply lost) = %v, want ErrStoreUnavailable", err)
	}
	if _, err := s.Result(ctx, "run-w"); err != nil {
		t.Errorf("Result after the lost PutResult reply = %v, want it stored once", err)
	}
	// A read whose reply is lost is sent again and succeeds.
	warm()
	p.drops.Store(1)
	if r, err := ps.Run(ctx, "run-w"); err != nil || r.Seq != 2 {
		t.Errorf("Run(one reply lost) = %d, %v, want 2, nil (retried)", r.Seq, err)
	}
}

// TestRedisHandlesPaged: the handle table is read a bounded page a
// script: at most handlesPage referents, and none more once a page's
// records reach handlesPageBytes, whatever the table holds.
func TestRedisHandlesPaged(t *testing.T) {
	s, _ := internalRedis(t)
	ctx := context.Background()
	r := store.Run{ID: "run-p", TokenHash: store.HashToken("p"), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	var refs []store.Referent
	for i := range 600 {
		v := fmt.Sprintf(`{"id":%d}`, i)
		if i%60 == 5 {
			v = fmt.Sprintf(`{"id":%d,"text":"%s"}`, i, strings.Repeat("x", 1<<20))
		}
		refs = append(refs, store.Referent{Kind: "document", Source: "loom_search", Value: []byte(v), LabelSource: "row"})
	}
	for i := 0; i < len(refs); i += 100 {
		if _, err := s.Mint(ctx, r.ID, refs[i:i+100], store.MintLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	k := s.keys(r.ID)
	pages, read := 0, 0
	for read < len(refs) {
		v, err := s.eval(ctx, false, scriptHandles, []string{k.run, k.handles, k.order}, s.nowUS(), read, handlesPage, handlesPageBytes)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := asSlice(v)
		recs, _ := asSlice(a[3])
		bytes, largest := 0, 0
		for _, rec := range recs {
			n := len(rec.(string))
			bytes += n
			largest = max(largest, n)
		}
		if len(recs) == 0 || len(recs) > handlesPage || bytes-largest >= handlesPageBytes {
			t.Fatalf("page %d: %d referents, %d bytes (largest %d), want 1 to %d referents and under %d bytes before its last", pages+1, len(recs), bytes, largest, handlesPage, handlesPageBytes)
		}
		read += len(recs)
		pages++
	}
	if pages < 3 {
		t.Errorf("600 referents, 10 of 1 MiB, read in %d pages, want at least 3", pages)
	}
	got, err := s.Handles(ctx, r.ID)
	if err != nil || len(got) != len(refs) {
		t.Fatalf("Handles = %d referents, %v; want %d", len(got), err, len(refs))
	}
}
