package tests

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// TestConcurrentPerRunReached: over the binary, with
// --max-concurrent-per-run 1, a run with a call in flight answers a second
// call busy at once (429, its outputId, Retry-After) without starting
// loom; another run still calls.
func TestConcurrentPerRunReached(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--max-concurrent-per-run", "1", "--command-timeout", "20s"}})
	g.setBehaviour(t, "case-hang", behaviour{Sleep: "60s"})
	g.setBehaviour(t, "case-quick", behaviour{Stdout: `{"hits":[]}`})

	r := g.newRun(t, client.CreateRunInput{})
	hctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := try(hctx, r.Agent, r.ID, "loom_search", `{"query":"case=hang"}`)
		done <- err
	}()
	g.waitLoomCall(t, "hang")

	start := time.Now()
	rep := r.call(t, "loom_search", `{"query":"case=quick"}`)
	p := wantProblem(t, rep, http.StatusTooManyRequests, "busy")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("busy after %v, want at once", took)
	}
	if want := r.ID + ":loom_search:2"; deref(p.OutputId) != want {
		t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
	}
	if ra, err := strconv.Atoi(rep.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q, want a positive number of seconds", rep.Header.Get("Retry-After"))
	}
	for _, c := range g.loomCalls(t) {
		if c.Case == "quick" {
			t.Errorf("the refused call ran loom: %v", c.Argv)
		}
	}

	other := g.newRun(t, client.CreateRunInput{})
	other.ok(t, "loom_search", `{"query":"case=quick"}`)

	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled client got %v", err)
	}
}
