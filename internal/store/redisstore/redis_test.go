package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
	"github.com/loom-gateway/gateway/internal/store/storetest"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// redisURL returns the Redis the tests may use (scripts/redis.sh start
// prints it), or skips the test.
func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("LOOM_GATEWAY_TEST_REDIS")
	if u == "" {
		t.Skip("LOOM_GATEWAY_TEST_REDIS is not set (eval \"$(scripts/redis.sh start)\")")
	}
	return u
}

// redisClient returns a client of the test Redis, closed at cleanup.
func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redis.ParseURL(%q) = %v", url, err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// testPrefix returns a key prefix of its own for one store, whose keys are
// dropped at cleanup.
func testPrefix(t *testing.T, c *redis.Client) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "loom-gateway-test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Errorf("cleanup: SCAN %s*: %v", prefix, err)
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup: UNLINK: %v", err)
			}
		}
	})
	return prefix
}

func TestRedis(t *testing.T) {
	url := redisURL(t)
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) storetest.Store {
		c := redisClient(t, url)
		return redisstore.New(c, redisstore.Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses, Now: cfg.Now, Prefix: testPrefix(t, c)})
	})
}

// TestRedisRealTime runs the suite on the wall clock, so runs expire through
// the keys' TTLs as well as the scripts' check.
func TestRedisRealTime(t *testing.T) {
	url := redisURL(t)
	storetest.RunOptions(t, storetest.Options{RealTime: true, TTL: time.Second},
		func(t *testing.T, cfg storetest.Config) storetest.Store {
			c := redisClient(t, url)
			return redisstore.New(c, redisstore.Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses, Prefix: testPrefix(t, c)})
		})
}

// TestRedisKeysExpire checks that Redis itself drops every key of an
// expired run (PEXPIREAT), including the keys created after the run.
func TestRedisKeysExpire(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	c := redisClient(t, url)
	prefix := testPrefix(t, c)
	s := redisstore.New(c, redisstore.Options{Prefix: prefix})
	now := time.Now()
	r := store.Run{ID: "short", TokenHash: store.HashToken("t"), CreatedAt: now, ExpiresAt: now.Add(300 * time.Millisecond)}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mint(ctx, "short", []store.Referent{{Kind: "document", Value: []byte(`1`)}}, store.MintLimits{}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendCall(ctx, "short", store.Call{Tool: "loom_search"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResult(ctx, "short", store.Result{Value: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Begin(ctx, "short", store.Begin{MaxInFlight: 1, Lease: time.Hour}); err != nil || !r.Marked {
		t.Fatalf("Begin = Marked %v, %v", r.Marked, err)
	}
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// run, calls, handles, order, result, flight, tok (and the index
	// zsets).
	index := func(k string) bool { return k == prefix+"{idx}runs" || k == prefix+"{idx}created" }
	for _, k := range keys {
		if index(k) {
			continue
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 400*time.Millisecond {
			t.Errorf("PTTL %s = %v, %v, want within the run's 300ms", k, ttl, err)
		}
	}
	if len(keys) != 9 {
		t.Errorf("keys of one run = %q, want 9", keys)
	}
	time.Sleep(500 * time.Millisecond)
	keys, err = c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if keys = slices.DeleteFunc(keys, index); len(keys) != 0 {
		t.Errorf("keys after expiry = %q, want none but the index", keys)
	}
}

// closedPortClient returns a client of a loopback port nobody listens on,
// trying each connection once.
func closedPortClient(t *testing.T) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, DialerRetries: 1, MaxRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisUnavailable points a store at a closed port: every method and
// Ping answer ErrStoreUnavailable, and the context's error when the caller
// went away.
func TestRedisUnavailable(t *testing.T) {
	c := closedPortClient(t)
	s := redisstore.New(c, redisstore.Options{MaxRuns: 10})
	ctx := context.Background()

	calls := map[string]func(ctx context.Context) error{
		"CreateRun": func(ctx context.Context) error {
			return s.CreateRun(ctx, store.Run{ID: "r", TokenHash: store.HashToken("t"), ExpiresAt: time.Now().Add(time.Hour)})
		},
		"Run":        func(ctx context.Context) error { _, err := s.Run(ctx, "r"); return err },
		"RunByToken": func(ctx context.Context) error { _, err := s.RunByToken(ctx, store.HashToken("t")); return err },
		"Runs":       func(ctx context.Context) error { _, err := s.Runs(ctx); return err },
		"DeleteRun":  func(ctx context.Context) error { return s.DeleteRun(ctx, "r") },
		"NextOutput": func(ctx context.Context) error { _, err := s.NextOutput(ctx, "r"); return err },
		"Observe": func(ctx context.Context) error {
			_, err := s.Observe(ctx, "r", ifc.Confidentiality{ifc.Clause(`"A"`)})
			return err
		},
		"AppendCall":          func(ctx context.Context) error { return s.AppendCall(ctx, "r", store.Call{Tool: "loom_search"}) },
		"CallsPage whole log": func(ctx context.Context) error { _, _, err := s.CallsPage(ctx, "r", 0, 0); return err },
		"CallsPage":           func(ctx context.Context) error { _, _, err := s.CallsPage(ctx, "r", 1, 10); return err },
		"Mint": func(ctx context.Context) error {
			_, err := s.Mint(ctx, "r", []store.Referent{{Kind: "document", Value: []byte(`1`)}}, store.MintLimits{})
			return err
		},
		"Handles":   func(ctx context.Context) error { _, err := s.Handles(ctx, "r"); return err },
		"Handle":    func(ctx context.Context) error { _, _, err := s.Handle(ctx, "r", "cfh:v:22222"); return err },
		"PutResult": func(ctx context.Context) error { return s.PutResult(ctx, "r", store.Result{Value: []byte(`1`)}) },
		"Result":    func(ctx context.Context) error { _, err := s.Result(ctx, "r"); return err },
		"Ping":      func(ctx context.Context) error { return s.Ping(ctx) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call(ctx)
			if !errors.Is(err, store.ErrStoreUnavailable) {
				t.Errorf("%s = %v, want ErrStoreUnavailable", name, err)
			}
			for _, other := range []error{store.ErrRunNotFound, store.ErrRunExists, store.ErrNoResult} {
				if errors.Is(err, other) {
					t.Errorf("%s = %v, also %v", name, err, other)
				}
			}
			if name == "Ping" {
				return
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := call(cctx); !errors.Is(err, context.Canceled) {
				t.Errorf("%s(cancelled ctx) = %v, want context.Canceled", name, err)
			}
		})
	}
}

// TestRedisReplicas runs two stores on two clients (two gateway replicas)
// against one run at once: output numbers never repeat or skip, every
// observation lands, and both mint the same token for the same row.
func TestRedisReplicas(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	ca, cb := redisClient(t, url), redisClient(t, url)
	prefix := testPrefix(t, ca)
	replicas := []*redisstore.Store{
		redisstore.New(ca, redisstore.Options{Prefix: prefix}),
		redisstore.New(cb, redisstore.Options{Prefix: prefix}),
	}
	now := time.Now()
	run := store.Run{ID: "shared", TokenHash: store.HashToken("shared"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := replicas[0].CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := replicas[1].CreateRun(ctx, run); !errors.Is(err, store.ErrRunExists) {
		t.Fatalf("CreateRun on the other replica = %v, want ErrRunExists", err)
	}
	got, err := replicas[1].RunByToken(ctx, run.TokenHash)
	if err != nil || got.ID != "shared" {
		t.Fatalf("RunByToken on the other replica = %q, %v", got.ID, err)
	}

	const (
		workers = 8 // per replica
		rounds  = 25
		pool    = 120
	)
	row := func(n int) store.Referent {
		return store.Referent{Kind: "document", Source: "loom_search", LabelSource: "row",
			Value: fmt.Appendf(nil, `{"id":"row-%d"}`, n),
			Label: ifc.Label{Confidentiality: ifc.Confidentiality{ifc.Clause(`"A"`)}}}
	}
	type seen struct {
		seqs   []int64
		tokens map[int]string
		err    error
	}
	results := make([]seen, 2*workers)
	var wg sync.WaitGroup
	for w := range 2 * workers {
		s := replicas[w%2]
		wg.Go(func() {
			res := &results[w]
			res.tokens = map[int]string{}
			for i := range rounds {
				n, err := s.NextOutput(ctx, "shared")
				if err != nil {
					res.err = err
					return
				}
				res.seqs = append(res.seqs, n)
				if _, err := s.Observe(ctx, "shared", ifc.Confidentiality{ifc.Clause(fmt.Sprintf(`"W%d-%d"`, w, i%3))}); err != nil {
					res.err = err
					return
				}
				var rows []store.Referent
				var ns []int
				for k := range 6 {
					m := (w*5 + i*7 + k*11) % pool
					ns = append(ns, m)
					rows = append(rows, row(m))
				}
				toks, err := s.Mint(ctx, "shared", rows, store.MintLimits{})
				if err != nil {
					res.err = err
					return
				}
				for k, m := range ns {
					if prev, ok := res.tokens[m]; ok && prev != toks[k] {
						res.err = fmt.Errorf("row %d: token %s then %s", m, prev, toks[k])
						return
					}
					res.tokens[m] = toks[k]
				}
			}
		})
	}
	wg.Wait()

	var all []int64
	tokenOf := map[int]string{}
	for w, res := range results {
		if res.err != nil {
			t.Fatalf("worker %d: %v", w, res.err)
		}
		all = append(all, res.seqs...)
		for m, tok := range res.tokens {
			if prev, ok := tokenOf[m]; ok && prev != tok {
				t.Errorf("row %d: replicas disagree: %s and %s", m, prev, tok)
			}
			tokenOf[m] = tok
		}
	}
	slices.Sort(all)
	for i, n := range all {
		if n != int64(i+1) {
			t.Fatalf("output numbers sorted[%d] = %d, want %d (duplicate or gap)", i, n, i+1)
		}
	}
	for _, s := range replicas {
		r, err := s.Run(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != 2*workers*rounds {
			t.Errorf("Seq = %d, want %d", r.Seq, 2*workers*rounds)
		}
		// Every worker's three atoms, none twice.
		if len(r.ModelContext) != 2*workers*3 {
			t.Errorf("ModelContext has %d clauses, want %d: %s", len(r.ModelContext), 2*workers*3, r.ModelContext)
		}
		hs, err := s.Handles(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != len(tokenOf) || r.Handles != len(hs) {
			t.Errorf("Handles = %d (Run.Handles %d), want %d distinct rows", len(hs), r.Handles, len(tokenOf))
		}
		for m, tok := range tokenOf {
			ref, ok, err := s.Handle(ctx, "shared", tok)
			if err != nil || !ok {
				t.Fatalf("Handle(%s) = %v, %v", tok, ok, err)
			}
			want := row(m)
			want.Token = tok
			if diff := cmp.Diff(want, ref); diff != "" {
				t.Errorf("Handle(%s) (-want +got):\n%s", tok, diff)
			}
		}
	}
	// The one-result rule across replicas: exactly one of many writers wins.
	var wins, exists int
	var mu sync.Mutex
	for w := range 2 * workers {
		wg.Go(func() {
			err := replicas[w%2].PutResult(ctx, "shared", store.Result{Value: fmt.Appendf(nil, `%d`, w)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrResultExists):
				exists++
			default:
				t.Errorf("PutResult: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || exists != 2*workers-1 {
		t.Errorf("PutResult: %d stored, %d refused, want 1 and %d", wins, exists, 2*workers-1)
	}
}

// TestRedisSizing measures what runs and handles take in Redis, for the
// README's sizing figures. It runs only when asked:
//
//	LOOM_GATEWAY_REDIS_SIZING=1 go test -run TestRedisSizing -v ./internal/store/redisstore/
//
// It reports MEMORY USAGE (SAMPLES 0) of the keys per run and per handle,
// and the used_memory delta of INFO memory (the latter is only meaningful
// on an otherwise idle server).
func TestRedisSizing(t *testing.T) {
	url := redisURL(t)
	if os.Getenv("LOOM_GATEWAY_REDIS_SIZING") == "" {
		t.Skip("LOOM_GATEWAY_REDIS_SIZING is not set")
	}
	const (
		runs    = 10000
		handles = 10000
		calls   = 1000
	)
	ctx := context.Background()
	c := redisClient(t, url)
	prefix := testPrefix(t, c)
	s := redisstore.New(c, redisstore.Options{Prefix: prefix})
	usedMemory := func() int64 {
		info, err := c.InfoMap(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
		return n
	}
	usage := func(pattern string) int64 {
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, k := range keys {
			n, err := c.MemoryUsage(ctx, k, 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		return total
	}

	// Idle runs, as the host API creates them without a ceiling or tools.
	before := usedMemory()
	now := time.Now()
	for i := range runs {
		r := store.Run{ID: fmt.Sprintf("run-%05d", i), TokenHash: store.HashToken(fmt.Sprint("token-", i)),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	runBytes := usage(prefix+"run:*") + usage(prefix+"{idx}*")
	t.Logf("idle run: %d bytes by MEMORY USAGE (run hash, token key, index entries); used_memory delta %d bytes per run",
		runBytes/runs, (usedMemory()-before)/runs)

	// Handles of one run: a search row of the sample loom (287 bytes of
	// value) with a row label of one clause.
	before = usedMemory()
	const row = `{"id":"mail:2026-02-27:atlas-launch-checklist-%05d","source":"mail","title":"Atlas launch checklist","snippet":"Ada: the launch checklist is final. Remaining items: press kit sign-off and the staging freeze on Thursday.","date":"2026-02-27","people":["person:ada-example"],"score":0.92}`
	for i := 0; i < handles; i += 100 {
		var batch []store.Referent
		for j := i; j < i+100; j++ {
			batch = append(batch, store.Referent{Kind: "document", Source: "loom_search", LabelSource: "row",
				Value: fmt.Appendf(nil, row, j),
				Label: ifc.Label{Confidentiality: ifc.Confidentiality{ifc.Clause(`"https://loom.example/facet/work"`)}}})
		}
		if _, err := s.Mint(ctx, "run-00000", batch, store.MintLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("handle (%d-byte row value): %d bytes by MEMORY USAGE (handles hash + order list); used_memory delta %d bytes per handle",
		len(fmt.Sprintf(row, 0)), (usage(prefix+"handles:*")+usage(prefix+"order:*"))/handles, (usedMemory()-before)/handles)

	// Call records of one run: a search call with three admitted entries
	// and one withheld.
	before = usedMemory()
	code := 0
	for i := range calls {
		cl := store.Call{OutputID: fmt.Sprintf("run-00001:loom_search:%d", i+1), Tool: "loom_search", Status: "ok",
			Admitted: 3, Withheld: 1, Observed: ifc.Confidentiality{ifc.Clause(`"https://loom.example/facet/work"`)},
			ExitCode: &code, Duration: 12 * time.Millisecond, StartedAt: now}
		for range 3 {
			cl.Entries = append(cl.Entries, store.CallEntry{Status: "admitted", LabelSource: "row", Handle: "cfh:v:3x5q9",
				Label: ifc.Disclosed{Confidentiality: [][]string{{"https://loom.example/facet/work"}}}})
		}
		cl.Entries = append(cl.Entries, store.CallEntry{Status: "withheld", ReasonCode: "cfc_ceiling_exceeded"})
		if err := s.AppendCall(ctx, "run-00001", cl); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("call record (4 entries): %d bytes by MEMORY USAGE; used_memory delta %d bytes per call",
		usage(prefix+"calls:*")/calls, (usedMemory()-before)/calls)
}

// redisClusterURL returns the Redis Cluster the tests may use, a go-redis
// cluster URL (redis://host:port?addr=host:port&addr=...; scripts/redis.sh
// start prints one for a cluster of three shards), or skips the test.
func redisClusterURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("LOOM_GATEWAY_TEST_REDIS_CLUSTER")
	if u == "" {
		t.Skip("LOOM_GATEWAY_TEST_REDIS_CLUSTER is not set (eval \"$(scripts/redis.sh start)\")")
	}
	return u
}

// redisClusterClient returns a client of the test cluster, closed at
// cleanup.
func redisClusterClient(t *testing.T, url string) *redis.ClusterClient {
	t.Helper()
	opt, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatalf("redis.ParseClusterURL(%q) = %v", url, err)
	}
	c := redis.NewClusterClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisCluster runs the suite on a Redis Cluster, whose scripts refuse
// keys of two slots and whose runs spread over the shards.
func TestRedisCluster(t *testing.T) {
	url := redisClusterURL(t)
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) storetest.Store {
		c := redisClusterClient(t, url)
		prefix := "loom-gateway-test:" + testkit.RandomHex(6) + ":"
		t.Cleanup(func() {
			ctx := context.Background()
			err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
				it := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
				for it.Next(ctx) {
					if err := node.Unlink(ctx, it.Val()).Err(); err != nil {
						return err
					}
				}
				return it.Err()
			})
			if err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
		return redisstore.New(c, redisstore.Options{MaxRuns: cfg.MaxRuns, MaxLabelClauses: cfg.MaxLabelClauses, Now: cfg.Now, Prefix: prefix})
	})
}

// redisReplicas returns two stores on two clients of the test Redis with
// one fresh prefix: two replicas of one deployment.
func redisReplicas(t *testing.T, url string) (a, b storetest.Watcher) {
	t.Helper()
	ca, cb := redisClient(t, url), redisClient(t, url)
	prefix := testPrefix(t, ca)
	return redisstore.New(ca, redisstore.Options{Prefix: prefix}), redisstore.New(cb, redisstore.Options{Prefix: prefix})
}

func TestRedisWatch(t *testing.T) {
	url := redisURL(t)
	storetest.RunWatch(t, func(t *testing.T) (a, b storetest.Watcher) { return redisReplicas(t, url) })
}

// TestRedisClusterWatch runs the watch suite on a Redis Cluster (see
// TestRedisCluster): the delete script publishes on the run's shard, and
// the watch listens on the node of the channel's slot.
func TestRedisClusterWatch(t *testing.T) {
	url := redisClusterURL(t)
	storetest.RunWatch(t, func(t *testing.T) (a, b storetest.Watcher) {
		prefix := "loom-gateway-test:" + testkit.RandomHex(6) + ":"
		// Every run of the suite is deleted: no key is left to drop.
		return redisstore.New(redisClusterClient(t, url), redisstore.Options{Prefix: prefix}),
			redisstore.New(redisClusterClient(t, url), redisstore.Options{Prefix: prefix})
	})
}

// TestRedisDeleteMessage reads the delete messages as any subscriber of
// the channel does: each holds the run id and a store id, never the run's
// token or its hash, and DeleteRun publishes nothing else.
func TestRedisDeleteMessage(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	c := redisClient(t, url)
	prefix := testPrefix(t, c)
	s := redisstore.New(c, redisstore.Options{Prefix: prefix})
	ps := c.Subscribe(ctx, prefix+"deleted")
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil { // the subscription
		t.Fatal(err)
	}
	const token = "the-run-token-of-run-7"
	h := store.HashToken(token)
	now := time.Now()
	for _, id := range []string{"run-7", "other"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, TokenHash: store.HashToken(token + id), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateRun(ctx, store.Run{ID: "tok", TokenHash: h, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var origin string
	for _, id := range []string{"run-7", "other", "tok"} {
		if err := s.DeleteRun(ctx, id); err != nil {
			t.Fatal(err)
		}
		m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			t.Fatalf("received %T %v, want a message", m, m)
		}
		o, got, _ := strings.Cut(msg.Payload, " ")
		if got != id || len(o) != 16 || strings.Trim(o, "0123456789abcdef") != "" {
			t.Errorf("message %q, want a store id of 16 hex digits, a space and %q", msg.Payload, id)
		}
		if origin != "" && o != origin {
			t.Errorf("one store published as %q and %q", origin, o)
		}
		origin = o
		for _, secret := range []string{token, string(h[:]), hex.EncodeToString(h[:])} {
			if strings.Contains(msg.Payload, secret) {
				t.Errorf("message %q holds the token or its hash", msg.Payload)
			}
		}
	}
	// Nothing else was published.
	if m, err := ps.ReceiveTimeout(ctx, 200*time.Millisecond); err == nil {
		t.Errorf("received %v after the deletes, want nothing", m)
	}
	// Another store publishes under another id.
	s2 := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err := s2.CreateRun(ctx, store.Run{ID: "run-8", TokenHash: store.HashToken("8"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s2.DeleteRun(ctx, "run-8"); err != nil {
		t.Fatal(err)
	}
	m, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o, id, _ := strings.Cut(m.Payload, " "); id != "run-8" || o == origin {
		t.Errorf("second store's message %q, want run-8 under a store id other than %q", m.Payload, origin)
	}
}

// TestRedisWatchUnavailable watches through a closed port: every attempt
// fails with ErrStoreUnavailable, none subscribes, the failures are spaced
// by the backoff, and WatchDeletes returns when its context ends.
func TestRedisWatchUnavailable(t *testing.T) {
	c := closedPortClient(t)
	s := redisstore.New(c, redisstore.Options{})

	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var failures []error
	subscribed := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchDeletes(ctx, store.DeleteWatch{
			Deleted:    func(id string) { t.Errorf("reported %q through a closed port", id) },
			Subscribed: func() { mu.Lock(); subscribed++; mu.Unlock() },
			Failed:     func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() },
		})
	}()
	time.Sleep(1500 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchDeletes did not return within 5s of its context's end")
	}
	mu.Lock()
	defer mu.Unlock()
	if subscribed != 0 {
		t.Errorf("Subscribed called %d times through a closed port", subscribed)
	}
	// 100ms, 200ms, 400ms, 800ms of backoff: 3 to 5 attempts in 1.5s.
	if len(failures) < 2 || len(failures) > 6 {
		t.Errorf("%d failures in 1.5s, want 2..6 (a backoff from 100ms doubling): %v", len(failures), failures)
	}
	for _, err := range failures {
		if !errors.Is(err, store.ErrStoreUnavailable) {
			t.Errorf("failure %v, want ErrStoreUnavailable", err)
		}
	}
}

// TestRedisWatchRefused runs the gateway as a Redis user without rights on
// any pub/sub channel: DeleteRun works all the same (its publish is
// refused), and the watch reports the refused subscription, again and
// again, without ever subscribing.
func TestRedisWatchRefused(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	admin := redisClient(t, url)
	prefix := testPrefix(t, admin)
	user, pass := "loom-gateway-test-"+testkit.RandomHex(4), testkit.RandomHex(16)
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">"+pass, "~"+prefix+"*", "resetchannels", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.Username, opt.Password = user, pass
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	s := redisstore.New(c, redisstore.Options{Prefix: prefix})

	wctx, cancel := context.WithCancel(ctx)
	failed := make(chan error, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchDeletes(wctx, store.DeleteWatch{
			Subscribed: func() { t.Error("subscribed without the right to") },
			Failed: func(err error) {
				select {
				case failed <- err:
				default:
				}
			},
		})
	}()
	defer func() { cancel(); <-done }()
	for range 2 {
		select {
		case err := <-failed:
			if !errors.Is(err, store.ErrStoreUnavailable) || !strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("failure %v, want ErrStoreUnavailable and NOPERM", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no failure reported within 10s")
		}
	}

	now := time.Now()
	if err := s.CreateRun(ctx, store.Run{ID: "r", TokenHash: store.HashToken("r"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatalf("DeleteRun without the right to publish = %v, want nil", err)
	}
	if _, err := s.Run(ctx, "r"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Run after the delete = %v, want ErrRunNotFound", err)
	}
}
