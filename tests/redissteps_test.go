package tests

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// commandCalls is INFO commandstats as command -> calls.
func commandCalls(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || name == line {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		out[name], _ = strconv.Atoi(n)
	}
	return out
}

// commandsSince is what c ran since before, less the INFO that reads
// it: command -> calls. A script's own commands count too.
func commandsSince(t *testing.T, c *redis.Client, before map[string]int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, n := range commandCalls(t, c) {
		if d := n - before[name]; d > 0 && name != "info" {
			out[name] = d
		}
	}
	return out
}

// TestRedisStoreRoundTrips: on Redis, a tool call reaches the store in
// two commands (EVALSHA: Begin, which checks the token, and Finish), and
// a run calling past its rate costs one more command per bucket refill,
// not one per refused call, on a gateway's own redis-server.
func TestRedisStoreRoundTrips(t *testing.T) {
	t.Parallel()
	url, rc := redistest.Start(t)
	g := startGateway(t, gwOptions{Flags: []string{"--store", url, "--run-rate", "0.01", "--run-burst", "12"}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"a"},{"id":"b"},{"id":"c"}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"q"}`) // the scripts are loaded by now

	const calls = 10
	before := commandCalls(t, rc)
	for range calls {
		r.ok(t, "loom_search", `{"query":"q"}`)
	}
	got := commandsSince(t, rc, before)
	if got["evalsha"] != 2*calls || outsideScripts(got) != 0 {
		t.Errorf("%d tool calls ran %v in Redis, want %d EVALSHA and no other command sent", calls, got, 2*calls)
	}
	t.Logf("%d tool calls ran %v in Redis", calls, got)

	// The burst of 12 is spent after one more call: the next ones are
	// refused, and only the first of them asks Redis.
	r.ok(t, "loom_search", `{"query":"q"}`)
	before = commandCalls(t, rc)
	start := time.Now()
	for range calls {
		wantProblem(t, r.call(t, "loom_search", `{"query":"q"}`), http.StatusTooManyRequests, "rate_limited")
	}
	// The replica asks the store again after at most a second.
	asks := 1 + int(time.Since(start)/time.Second)
	if got := commandsSince(t, rc, before); got["evalsha"] < 1 || got["evalsha"] > asks || outsideScripts(got) != 0 {
		t.Errorf("%d refused calls ran %v in Redis, want one EVALSHA (at most %d)", calls, got, asks)
	}
}

// outsideScripts counts the commands in got that the store sends itself
// rather than from a script: every one but EVALSHA is a round trip more.
func outsideScripts(got map[string]int) int {
	n := 0
	for _, name := range []string{"eval", "get", "ping", "hello", "client|setinfo", "script|load", "zcount", "zrangebyscore"} {
		n += got[name]
	}
	return n
}
