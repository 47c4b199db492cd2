package tests

import (
	"context"
	"net/http"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// TestRedisFullReleasesInFlight: a call whose record a full Redis
// refuses answers 503 store_unavailable and still gives its in-flight
// mark back (a release only frees memory, so a full Redis runs it): with
// --max-concurrent-per-run 1 and a lease far longer than the test, the
// run calls again at once when memory is freed, not busy.
func TestRedisFullReleasesInFlight(t *testing.T) {
	t.Parallel()
	url, rc := redistest.Start(t)
	g := startGateway(t, gwOptions{Flags: []string{"--store", url, "--max-concurrent-per-run", "1", "--command-timeout", "2m"}})
	g.setBehaviour(t, "case-slow", behaviour{Stdout: `{"hits":[{"id":"a"}]}`, Sleep: "4s"})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"b"}]}`})
	r := g.newRun(t, client.CreateRunInput{})

	done := make(chan reply, 1)
	go func() {
		rep, err := try(context.Background(), r.Agent, r.ID, "loom_search", `{"query":"case=slow"}`)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	g.waitLoomCall(t, "slow")
	redistest.Fill(t, rc)
	wantProblem(t, <-done, http.StatusServiceUnavailable, "store_unavailable")

	if err := rc.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	r.ok(t, "loom_search", `{"query":"after"}`)
}
