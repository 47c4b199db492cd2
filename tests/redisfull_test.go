package tests

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/api/client"
)

// ownRedis starts a redis-server of the test's own on a free loopback
// port (no persistence, maxmemory-policy noeviction), stopped at cleanup,
// and returns its URL and a client. It skips the test without
// redis-server.
func ownRedis(t *testing.T) (string, *redis.Client) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server in PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--maxmemory-policy", "noeviction", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	for end := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("redis-server did not answer PING in 10 s")
		}
	}
	return "redis://" + addr + "/0", c
}

// redisUsed is INFO memory's used_memory.
func redisUsed(t *testing.T, c *redis.Client) int64 {
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

// TestRedisFullRefusesNewWork: on a Redis past maxmemory with noeviction,
// a run creation, a tool call and a result each answer 503
// store_unavailable and add nothing (Redis does not grow), reading the run
// still works, and once memory is freed the same run works again.
func TestRedisFullRefusesNewWork(t *testing.T) {
	t.Parallel()
	url, rc := ownRedis(t)
	g := startGateway(t, gwOptions{Flags: []string{"--store", url}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"a"}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"before"}`)

	bg := context.Background()
	filler := strings.Repeat("f", 64<<10)
	for i := range 32 {
		if err := rc.Set(bg, "filler:"+strconv.Itoa(i), filler, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	full := redisUsed(t, rc)
	if err := rc.ConfigSet(bg, "maxmemory", strconv.FormatInt(full-(1<<20), 10)).Err(); err != nil {
		t.Fatal(err)
	}

	for range 20 {
		resp, err := g.hostClient(t).CreateRunWithResponse(ctx(t), client.CreateRunInput{})
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusServiceUnavailable, "store_unavailable", "")
	}
	r.fails(t, "loom_search", `{"query":"full"}`, http.StatusServiceUnavailable, "store_unavailable")
	r.fails(t, "result", `{"value":{"note":"done"}}`, http.StatusServiceUnavailable, "store_unavailable")
	if s := r.summary(t); s.Calls != 1 || s.Handles != 1 {
		t.Errorf("summary on a full Redis: %d calls, %d handles; want what the call before the fill left (1, 1)", s.Calls, s.Handles)
	}
	if runs := rc.Keys(bg, "*:run:*").Val(); len(runs) > 1 {
		t.Errorf("run keys on a full Redis: %q, want the one run made before", runs)
	}
	if used := redisUsed(t, rc); used > full+(256<<10) {
		t.Errorf("Redis grew from %d to %d bytes while full", full, used)
	}

	if err := rc.ConfigSet(bg, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	r.ok(t, "loom_search", `{"query":"after"}`)
	if rep := r.call(t, "result", `{"value":{"note":"done"}}`); rep.Status != http.StatusCreated {
		t.Errorf("result once memory is freed: status %d\n%s", rep.Status, rep.Body)
	}
	g.newRun(t, client.CreateRunInput{})
}
