package replicas

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/testsupport/redistest"
)

// netOutput is what the Redis server has sent its clients so far.
func netOutput(t *testing.T, rc *redis.Client) int64 {
	t.Helper()
	info, err := rc.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, _ := strconv.ParseInt(rest, 10, 64)
			return n
		}
	}
	t.Fatal("no total_net_output_bytes in INFO stats")
	return 0
}

// fillTable gives rn on r a handle table of calls pages of about 117 KB
// each (a page row as large as the result budget admits), and returns
// one handle it holds.
func fillTable(t *testing.T, e *env, r *replica, rn run, calls int) string {
	t.Helper()
	var held string
	for i := range calls {
		page := map[string]any{"path": fmt.Sprintf("fill-%d.md", i)}
		for j := range 10 {
			page[fmt.Sprintf("b%d", j)] = strings.Repeat("€", 3_900)
		}
		e.behave(t, fmt.Sprintf("fill-%d", i), map[string]any{"stdout": mustJSON(t, page)})
		res := r.call(t, rn, "loom_page_read", map[string]any{"target": fmt.Sprintf("case=fill-%d", i)})
		for _, en := range res.Entries {
			if en.Handle != "" {
				held = en.Handle
			}
		}
	}
	if held == "" {
		t.Fatal("the table holds no handle")
	}
	return held
}

// TestFloodBystander: two replicas on a Redis of the test's own. A run on
// replica A fills its handle table (about 7 MB) and then floods A with
// what used to cost nothing of its budget: result writes naming a
// handle it does not hold, MCP pings and tools/list, catalog reads.
//
//   - A refused result write costs Redis a bounded number of bytes: the
//     writer asks about only the tokens the value names (it used to read
//     the whole table, 7 MB, in one script that held Redis meanwhile).
//   - The flooding run is refused 429 rate_limited once its budget is
//     spent, on every kind of request.
//   - A bystander run calling through replica B meanwhile gets no 503
//     (with the whole table read per write, Redis was held long enough
//     for B's store steps to time out) and no 429.
//
// Timing is not asserted (BENCHMARKS.md section 10 measures the
// bystander's latency on a quiet machine).
func TestFloodBystander(t *testing.T) {
	url, rc := redistest.Start(t)
	e := setUpFakeLoom(t)
	flags := []string{"--run-rate", "20", "--run-burst", "100", "--max-handle-bytes-per-run", "0"}
	a := e.start(t, "replica A", url, flags...)
	b := e.start(t, "replica B", url, flags...)
	flood, bystander := e.newRun(t, a), e.newRun(t, b)
	held := fillTable(t, e, a, flood, 64)
	e.behave(t, "bystander", map[string]any{"stdout": `{"hits":[{"id":"by-1","text":"fine"}]}`})

	// The bucket refills while the table fills: wait for a full one.
	time.Sleep(5 * time.Second)
	unheld := map[string]any{"value": map[string]any{"summary": "done", "source": "cfh:v:zzzzz", "also": held}}
	unheldBody := mustJSON(t, unheld)
	const writes = 10
	before := netOutput(t, rc)
	for i := range writes {
		status, body := do(t, "POST", a.agent+"/v1/runs/"+flood.id+"/result", flood.token, unheld)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "unheld_handle") {
			t.Fatalf("refused write %d: %d %s, want 422 unheld_handle", i+1, status, body)
		}
	}
	perWrite := (netOutput(t, rc) - before) / writes
	t.Logf("a refused result write: %d bytes from Redis (the table holds about 7 MB)", perWrite)
	if perWrite > 4<<10 {
		t.Errorf("a refused result write cost %d bytes from Redis, want at most 4 KiB (what it names, not the table)", perWrite)
	}

	// The flood: 8 workers on A, each sending the four kinds in turn,
	// for 4 s; the bystander calls through B meanwhile.
	kinds := []func() (int, []byte){
		func() (int, []byte) {
			return send(t, "POST", a.agent+"/v1/runs/"+flood.id+"/result", flood.token, unheldBody, nil)
		},
		func() (int, []byte) { return mcp(t, a, flood, `{"jsonrpc":"2.0","id":1,"method":"ping"}`) },
		func() (int, []byte) { return mcp(t, a, flood, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`) },
		func() (int, []byte) {
			return send(t, "GET", a.agent+"/v1/runs/"+flood.id+"/tools", flood.token, "", nil)
		},
	}
	var refused [4]atomic.Int64
	var served, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := i % len(kinds)
				status, body := kinds[k]()
				switch {
				case status == http.StatusTooManyRequests && strings.Contains(string(body), "rate_limited"):
					refused[k].Add(1)
				case status >= 500:
					failed.Add(1)
					t.Errorf("flood request: %d %s", status, body)
				default:
					served.Add(1)
				}
			}
		}()
	}
	var byCalls, byFailed int
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		_, err := b.tryCall(bystander, "loom_search", map[string]any{"query": "case=bystander"})
		byCalls++
		if err != nil {
			byFailed++
			t.Errorf("bystander call %d on B: %v", byCalls, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("flood: %d served, %d refused (result %d, ping %d, tools/list %d, GET tools %d), %d failed; bystander: %d calls, %d failed",
		served.Load(), refused[0].Load()+refused[1].Load()+refused[2].Load()+refused[3].Load(),
		refused[0].Load(), refused[1].Load(), refused[2].Load(), refused[3].Load(), failed.Load(), byCalls, byFailed)
	for k, name := range []string{"result write", "MCP ping", "MCP tools/list", "GET tools"} {
		if refused[k].Load() == 0 {
			t.Errorf("no %s of the flooding run was refused 429 rate_limited once its budget was spent", name)
		}
	}
	// The budget lets through its burst and its rate, not the flood.
	if max := int64(100 + 20*6); served.Load() > max {
		t.Errorf("the flooding run was served %d requests, want at most its budget (%d)", served.Load(), max)
	}
}

// send is one request of the flood, for any goroutine: the status and
// the body, or 0 on a transport error (reported on t).
func send(t *testing.T, method, url, token, body string, header map[string]string) (int, []byte) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// mcp posts one JSON-RPC message to the run's MCP endpoint on r.
func mcp(t *testing.T, r *replica, rn run, body string) (int, []byte) {
	return send(t, "POST", r.agent+"/v1/runs/"+rn.id+"/mcp", rn.token, body,
		map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
