package redisstore_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/redisstore"
)

// startRedis starts a redis-server of the test's own on a free loopback
// port, with no persistence and maxmemory-policy noeviction, stopped at
// cleanup, and returns a client of it. It skips the test without
// redis-server.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server in PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--maxmemory-policy", "noeviction", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
	t.Cleanup(func() { c.Close() })
	for end := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("redis-server did not answer PING in 10 s")
		}
	}
	return c
}

// fillRedis writes 2 MiB of filler keys, then sets maxmemory 1 MiB below
// what Redis uses: Redis is full, whatever a refused command's buffers
// give back, and stays so until maxmemory is raised.
func fillRedis(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	filler := strings.Repeat("f", 64<<10)
	for i := range 32 {
		if err := c.Set(ctx, "filler:"+strconv.Itoa(i), filler, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(usedMemory(t, c)-(1<<20), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "filler:more", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET on a full Redis = %v, want an OOM error", err)
	}
}

func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// TestRedisFull: on a Redis at maxmemory with noeviction, every method
// that adds data (a run, an output number, a label, a call record, a
// handle, a result) fails with ErrStoreUnavailable and writes nothing,
// while reads and a deletion (which frees memory) work; once memory is
// freed the same run takes writes again.
func TestRedisFull(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	s := redisstore.New(c, redisstore.Options{MaxRuns: 100})
	now := time.Now()
	newRun := func(id string) store.Run {
		return store.Run{ID: id, TokenHash: store.HashToken("token-" + id), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	for _, id := range []string{"kept", "deleted"} {
		if err := s.CreateRun(ctx, newRun(id)); err != nil {
			t.Fatalf("CreateRun(%s) before the fill = %v", id, err)
		}
	}
	ref := store.Referent{Kind: "document", Source: "loom_search", Value: []byte(`"doc-1"`)}
	writes := map[string]func() error{
		"CreateRun":  func() error { return s.CreateRun(ctx, newRun("new")) },
		"NextOutput": func() error { _, err := s.NextOutput(ctx, "kept"); return err },
		"Observe": func() error {
			_, err := s.Observe(ctx, "kept", ifc.Confidentiality{ifc.Clause(`"A"`)})
			return err
		},
		"AppendCall": func() error {
			return s.AppendCall(ctx, "kept", store.Call{OutputID: "kept:loom_search:1", Tool: "loom_search", Status: "ok"})
		},
		"Mint": func() error {
			_, err := s.Mint(ctx, "kept", []store.Referent{ref}, store.MintLimits{})
			return err
		},
		"PutResult": func() error { return s.PutResult(ctx, "kept", store.Result{Value: []byte(`1`), WrittenAt: now}) },
	}

	fillRedis(t, c)
	for name, write := range writes {
		if err := write(); !errors.Is(err, store.ErrStoreUnavailable) {
			t.Errorf("%s on a full Redis = %v, want ErrStoreUnavailable", name, err)
		}
	}
	if _, err := s.Run(ctx, "new"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Run(new) after a refused CreateRun = %v, want ErrRunNotFound", err)
	}
	if runs, err := s.Runs(ctx); err != nil || len(runs) != 2 {
		t.Errorf("Runs on a full Redis = %d runs, %v; want the two made before", len(runs), err)
	}
	r, err := s.Run(ctx, "kept")
	if err != nil {
		t.Fatalf("Run(kept) on a full Redis = %v", err)
	}
	if r.Seq != 0 || r.Calls != 0 || r.Handles != 0 || r.HasResult || len(r.ModelContext) != 0 {
		t.Errorf("refused writes left %+v", r)
	}
	if err := s.DeleteRun(ctx, "deleted"); err != nil {
		t.Errorf("DeleteRun on a full Redis = %v, want nil (it frees memory)", err)
	}

	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for name, write := range writes {
		if err := write(); err != nil {
			t.Errorf("%s once memory is freed = %v", name, err)
		}
	}
}
