package tests

import (
	"context"
	"net/http"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// TestRedisFullRefusesNewWork: on a Redis past maxmemory with noeviction,
// a run creation, a tool call and a result each answer 503
// store_unavailable and add nothing (Redis does not grow), reading the run
// still works, and once memory is freed the same run works again.
func TestRedisFullRefusesNewWork(t *testing.T) {
	t.Parallel()
	url, rc := redistest.Start(t)
	g := startGateway(t, gwOptions{Flags: []string{"--store", url}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"a"}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	r.ok(t, "loom_search", `{"query":"before"}`)

	bg := context.Background()
	full := redistest.Fill(t, rc)

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
	if used := redistest.Used(t, rc); used > full+(256<<10) {
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
