package tests

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// TestRunCaps: the per-run caps are the core's rules (internal/gateway:
// TestConcurrentPerRun, TestCallLimit, TestLabelLimit); over the built
// binary, each flag reaches the core and its refusal is answered, valid
// against the contract (the checked client): --max-concurrent-per-run
// answers busy (429, its outputId, Retry-After) at once while the run has
// a call in flight, --max-calls-per-run call_limit_reached (409, no
// outputId), --max-label-clauses label_limit_reached (409, its outputId)
// and mints nothing. Another run calls on.
func TestRunCaps(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{
		"--max-concurrent-per-run", "1", "--command-timeout", "20s",
		"--max-calls-per-run", "2",
		"--max-label-clauses", "1",
	}})
	g.setBehaviour(t, "case-hang", behaviour{Sleep: "60s"})
	g.setBehaviour(t, "case-quick", behaviour{Stdout: `{"hits":[]}`})
	g.setBehaviour(t, "case-one", behaviour{Stdout: `{"hits":[{"title":"one","ifc":{"confidentiality":["work"]}}]}`})
	g.setBehaviour(t, "case-two", behaviour{Stdout: `{"hits":[{"title":"two","ifc":{"confidentiality":["work","health"]}}]}`})

	t.Run("in flight", func(t *testing.T) {
		r := g.newRun(t, client.CreateRunInput{})
		hctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := try(hctx, r.Agent, r.ID, "loom_search", `{"query":"case=hang"}`)
			done <- err
		}()
		g.waitLoomCall(t, "hang")

		rep := r.call(t, "loom_search", `{"query":"case=quick"}`)
		p := wantProblem(t, rep, http.StatusTooManyRequests, "busy")
		if want := r.ID + ":loom_search:2"; deref(p.OutputId) != want {
			t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
		}
		if ra, err := strconv.Atoi(rep.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("Retry-After = %q, want a positive number of seconds", rep.Header.Get("Retry-After"))
		}
		other := g.newRun(t, client.CreateRunInput{})
		other.ok(t, "loom_search", `{"query":"case=quick"}`)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled client got %v", err)
		}
	})

	t.Run("calls", func(t *testing.T) {
		r := g.newRun(t, client.CreateRunInput{})
		r.ok(t, "loom_search", `{"query":"case=quick"}`)
		r.ok(t, "loom_search", `{"query":"case=quick"}`)
		p := wantProblem(t, r.call(t, "loom_search", `{"query":"case=quick"}`), http.StatusConflict, "call_limit_reached")
		if p.OutputId != nil {
			t.Errorf("outputId = %q on a refused call, want none", *p.OutputId)
		}
	})

	t.Run("label", func(t *testing.T) {
		r := g.newRun(t, client.CreateRunInput{})
		r.ok(t, "loom_search", `{"query":"case=one"}`)
		p := wantProblem(t, r.call(t, "loom_search", `{"query":"case=two"}`), http.StatusConflict, "label_limit_reached")
		if want := r.ID + ":loom_search:2"; deref(p.OutputId) != want {
			t.Errorf("outputId = %v, want %s", deref(p.OutputId), want)
		}
		if hs := r.handles(t); len(hs) != 1 {
			t.Errorf("%d handles after the refused call, want 1", len(hs))
		}
	})
}
