package tests

import (
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// TestWriteDeadlineCoversLoom: a call whose loom runs longer than
// --read-timeout and --busy-wait together, but within --command-timeout,
// is answered: the server's write deadline covers the body, the wait for a
// slot and loom (a write deadline of --read-timeout would cut the
// connection before the answer).
func TestWriteDeadlineCoversLoom(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--read-timeout", "1s", "--busy-wait", "100ms", "--command-timeout", "10s"}})
	g.setBehaviour(t, "case-slow", behaviour{Stdout: `{"hits":[{"title":"late","ifc":{"confidentiality":["work"]}}]}`, Sleep: "2500ms"})
	r := g.newRun(t, client.CreateRunInput{})
	start := time.Now()
	res := r.ok(t, "loom_search", `{"query":"case=slow"}`)
	if took := time.Since(start); took < 2500*time.Millisecond {
		t.Fatalf("answered after %v; the fake loom sleeps 2.5 s", took)
	}
	if res.Admitted != 1 {
		t.Errorf("admitted = %d, want 1", res.Admitted)
	}
}
