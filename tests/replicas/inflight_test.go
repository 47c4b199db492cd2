package replicas

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inflightTimeout is the --command-timeout of TestConcurrentPerRunShared,
// and inflightLease the in-flight lease it makes with its --busy-wait of
// 1s: the command timeout, the wait and a 5s grace.
const (
	inflightTimeout = 3 * time.Second
	inflightLease   = inflightTimeout + time.Second + 5*time.Second
)

// TestConcurrentPerRunShared: --max-concurrent-per-run caps a run's calls
// in flight across the replicas on one store. With a cap of 1 and a call
// of the run held in flight on replica A (its loom sleeping), a call of
// the run on replica B answers 429 busy at once, with its outputId and
// Retry-After, and runs no loom; once A's call ends (its command timeout)
// B calls again. After SIGKILL of A mid-call, A's mark holds the run's
// slot until its lease passes, and then B calls again.
func TestConcurrentPerRunShared(t *testing.T) { eachStore(t, testConcurrentPerRunShared) }

func testConcurrentPerRunShared(t *testing.T, url string) {
	e := setUpFakeLoom(t)
	// Registered first, so run last, after the gateways are killed.
	t.Cleanup(func() {
		for _, p := range loomProcesses(e.dir) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
	for _, name := range []string{"held", "crashed"} {
		e.behave(t, name, map[string]any{"sleep": "60s", "grandchild": "60s"})
	}
	e.behave(t, "quick", map[string]any{"stdout": `{"hits":[]}`})
	flags := []string{"--max-concurrent-per-run", "1", "--command-timeout", inflightTimeout.String(), "--busy-wait", "1s"}
	a := e.start(t, "replica A", url, flags...)
	b := e.start(t, "replica B", url, flags...)
	rn := e.newRun(t, a)
	t.Cleanup(func() { do(t, "DELETE", b.host+"/host/v1/runs/"+rn.id, e.hostToken, nil) })
	quick := map[string]any{"query": "case=quick"}

	held := a.callAsync(rn, "loom_search", `{"query":"case=held"}`)
	e.waitLoomCall(t, "held")
	wantBusy(t, b, rn, rn.id+":loom_search:2")
	if n := e.loomCalls(t, "quick"); n != 0 {
		t.Errorf("B's refused call ran loom (%d calls)", n)
	}
	res := <-held
	if res.err != nil || res.status != http.StatusBadGateway {
		t.Fatalf("A's held call = %d %s %v, want 502 command_failed at its timeout", res.status, res.body, res.err)
	}
	b.call(t, rn, "loom_search", quick)

	// A killed mid-call never gives its mark back: it holds the slot
	// until its lease passes.
	crashed := a.callAsync(rn, "loom_search", `{"query":"case=crashed"}`)
	e.waitLoomCall(t, "crashed")
	begun := time.Now()
	a.kill(t)
	<-crashed
	wantBusy(t, b, rn, "")
	for {
		status, body := do(t, "POST", b.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, quick)
		took := time.Since(begun)
		if status == http.StatusOK {
			t.Logf("B called again %v after A was killed (lease %v)", took.Round(time.Millisecond), inflightLease)
			if took < inflightTimeout {
				t.Errorf("B called again %v after A was killed, before any call of A could have ended (%v)", took, inflightTimeout)
			}
			break
		}
		var p struct{ Code string }
		_ = json.Unmarshal(body, &p)
		if status != http.StatusTooManyRequests || p.Code != "busy" {
			t.Fatalf("B while A's mark is held = %d %s, want 429 busy", status, body)
		}
		if took > inflightLease+5*time.Second {
			t.Fatalf("B still busy %v after A was killed: the mark outlived its lease of %v", took, inflightLease)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// wantBusy calls the run on r and wants 429 busy with Retry-After and,
// unless outputID is "", that outputId.
func wantBusy(t *testing.T, r *replica, rn run, outputID string) {
	t.Helper()
	start := time.Now()
	req, err := http.NewRequest("POST", r.agent+"/v1/runs/"+rn.id+"/loom_search", strings.NewReader(`{"query":"case=quick"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rn.token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("%s answered after %v, want at once", r.name, took)
	}
	var p struct {
		Code     string `json:"code"`
		OutputID string `json:"outputId"`
	}
	_ = json.Unmarshal(body, &p)
	if resp.StatusCode != http.StatusTooManyRequests || p.Code != "busy" {
		t.Fatalf("%s: a call of the run with one in flight = %d %s, want 429 busy", r.name, resp.StatusCode, body)
	}
	if outputID != "" && p.OutputID != outputID {
		t.Errorf("%s: busy outputId %q, want %q", r.name, p.OutputID, outputID)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds", r.name, resp.Header.Get("Retry-After"))
	}
}

// loomCalls counts the fake loom's invocations with case=name.
func (e *env) loomCalls(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "calls.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Case string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Case == name {
			n++
		}
	}
	return n
}
