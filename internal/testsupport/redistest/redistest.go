// Package redistest starts a redis-server of a test's own and fills it
// to its maxmemory, for the tests of the Redis store and of the gateway
// over it.
package redistest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start starts a redis-server of the test's own on a free loopback port
// (no persistence, maxmemory-policy noeviction), stopped at cleanup, and
// returns its URL and a client of it, closed at cleanup. It skips the
// test without redis-server.
func Start(t testing.TB) (string, *redis.Client) {
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

// Fill writes 2 MiB of filler keys, then sets maxmemory 1 MiB below what
// Redis uses, and returns what it uses then: Redis is full, whatever a
// refused command's buffers give back, and stays so until maxmemory is
// raised (CONFIG SET maxmemory 0).
func Fill(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	filler := strings.Repeat("f", 64<<10)
	for i := range 32 {
		if err := c.Set(ctx, "filler:"+strconv.Itoa(i), filler, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	full := Used(t, c)
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(full-(1<<20), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "filler:more", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET on a full Redis = %v, want an OOM error", err)
	}
	return full
}

// Used is INFO memory's used_memory.
func Used(t testing.TB, c *redis.Client) int64 {
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
