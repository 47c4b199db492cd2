package replicas

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCrashLeavesCallsWhole: a replica killed with SIGKILL while many
// calls are finishing leaves every call either recorded with the handles
// it minted or not at all. Sixteen clients call one run on replica A, each
// call answered rows no other call sees (labels of their own, so each
// call also grows the run's model-context label), and A is killed in the
// midst of them; replica B, started on the same store afterwards, finds
// every handle of the run named by a call record, and the run's chain
// (signed with the key both replicas hold) verifies and holds every
// recorded call once and nothing else: a killed call is in it or not.
func TestCrashLeavesCallsWhole(t *testing.T) { eachStore(t, testCrashLeavesCallsWhole) }

func testCrashLeavesCallsWhole(t *testing.T, storeURL string) {
	e := setUpFakeLoom(t)
	const cases, clients = 800, 16
	for i := range cases {
		e.behave(t, fmt.Sprintf("c%d", i), map[string]any{"stdout": fmt.Sprintf(
			`{"hits":[{"id":"c%d-a","ifc":{"confidentiality":["c%d"]}},{"id":"c%d-b","ifc":{"confidentiality":["c%d","work"]}}]}`, i, i, i, i)})
	}
	flags, pub := e.receiptKey(t)
	flags = append(flags, "--max-label-clauses", "0", "--run-rate", "0")
	a := e.start(t, "replica A", storeURL, flags...)
	rn := e.newRun(t, a)

	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for i := w; i < cases; i += clients {
				if _, err := a.tryCall(rn, "loom_search", map[string]any{"query": fmt.Sprintf("case=c%d", i)}); err != nil {
					return // A is gone
				}
			}
		})
	}
	// Kill A once a fair number of calls have run, with the rest in flight.
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(e.dir, "calls.jsonl"))
		if n := bytes.Count(b, []byte("\n")); n >= 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("200 loom calls did not happen within 60s")
		}
		time.Sleep(time.Millisecond)
	}
	a.kill(t)
	wg.Wait()

	b := e.start(t, "replica B", storeURL, flags...)
	t.Cleanup(func() { do(t, "DELETE", b.host+"/host/v1/runs/"+rn.id, e.hostToken, nil) })
	status, body := do(t, "GET", b.host+"/host/v1/runs/"+rn.id+"/handles", e.hostToken, nil)
	var table struct{ Handles []struct{ Token string } }
	expect(t, "B: handles", status, body, http.StatusOK, &table)
	status, body = do(t, "GET", b.host+"/host/v1/runs/"+rn.id+"/calls", e.hostToken, nil)
	var log struct {
		Calls []struct {
			OutputID string
			Status   string
			Entries  []struct{ Handle string }
		}
	}
	expect(t, "B: call log", status, body, http.StatusOK, &log)
	recorded := map[string]bool{}
	for _, c := range log.Calls {
		for _, en := range c.Entries {
			if en.Handle != "" {
				recorded[en.Handle] = true
			}
		}
	}
	missing, held := 0, map[string]bool{}
	for _, h := range table.Handles {
		held[h.Token] = true
		if !recorded[h.Token] {
			missing++
		}
	}
	t.Logf("after the kill: %d calls recorded, %d handles", len(log.Calls), len(table.Handles))
	if missing > 0 {
		t.Errorf("%d of %d handles are named by no call record: a call minted them and was not recorded", missing, len(table.Handles))
	}
	for h := range recorded {
		if !held[h] {
			t.Errorf("a call record names %s, which the table does not hold", h)
		}
	}
	chain := map[string]int{}
	for _, f := range verifiedReceipt(t, e, b, rn, pub, nil) {
		chain[f.OutputID]++
	}
	for _, c := range log.Calls {
		if chain[c.OutputID] != 1 {
			t.Errorf("call %s is %d times in the chain, want once", c.OutputID, chain[c.OutputID])
		}
		delete(chain, c.OutputID)
	}
	if len(chain) != 0 {
		t.Errorf("the chain holds %d calls the call log does not", len(chain))
	}
}
