package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// loadEnv sets the duration of TestLoad (a Go duration, e.g. 60s); without
// it the test runs its short form of 5s. loadReportEnv names a file the
// figures are written to as Markdown.
const (
	loadEnv       = "LOOM_GATEWAY_LOAD"
	loadReportEnv = "LOOM_GATEWAY_LOAD_REPORT"
)

// TestLoad drives one gateway over a fast fake loom with many runs and
// concurrent calls: 16 workers each create a run, make 20 rounds of two
// concurrent calls on it (search, page read, profile, describe_handle),
// read its call log every 5 rounds, delete it and start over, for 5s (or
// $LOOM_GATEWAY_LOAD). The loom limiter (--max-concurrent-loom 8,
// --busy-wait 500ms) is deliberately too small for 32 calls in flight.
//
// It requires: no answer but 200 and busy (429 with Retry-After) to a tool
// call, and the expected answers of the host API; no planted marker in any
// answer; no loom process left; and, measured from outside through
// /proc/<pid>/status and /proc/<pid>/fd (and go_goroutines of the host
// listener's /metrics when it serves one), resident memory, threads, file
// descriptors and goroutines stable after warm-up (the first quarter).
func TestLoad(t *testing.T) {
	t.Parallel()
	duration, long := 5*time.Second, false
	if v := os.Getenv(loadEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: not a positive duration", loadEnv, v)
		}
		duration, long = d, true
	}
	warmup := duration / 4

	g := startGateway(t, gwOptions{Flags: []string{"--max-concurrent-loom", "8", "--busy-wait", "500ms", "--command-timeout", "20s", "--log-level", "warn"}})
	g.setBehaviour(t, "search", behaviour{Stdout: fill(`{"query":"q","hits":[{"id":"w1","snippet":"work","ifc":{"confidentiality":["{W}"]}},{"id":"u","snippet":"unlabeled"},{"id":"h","snippet":"{X}","ifc":{"confidentiality":["{H}"]}}]}`)})
	g.setBehaviour(t, "page.read", behaviour{Stdout: fill(`{"path":"a.md","body":"page","ifc":{"confidentiality":["{W}"]}}`)})
	g.setBehaviour(t, "profile", behaviour{Stdout: `{"name":"Ada","hasProfile":true}`})
	pid := g.cmd.Process.Pid

	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, DisableCompression: true}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 60 * time.Second}

	var st loadStats
	do := func(method, url, token, body string) (int, http.Header, []byte, time.Duration, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, url, rd)
		if err != nil {
			return 0, nil, nil, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, nil, 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		for _, m := range markers {
			if bytes.Contains(b, []byte(m)) {
				st.fail("%s %s carries %s", method, req.URL.Path, m)
			}
		}
		return resp.StatusCode, resp.Header, b, took, err
	}

	// tool makes one agent call and classifies its answer.
	tool := func(runID, token, route, body string) []string {
		status, hdr, b, took, err := do("POST", g.AgentURL+"/v1/runs/"+runID+"/"+route, token, body)
		st.calls.Add(1)
		switch {
		case err != nil:
			st.fail("%s: %v", route, err)
		case status == http.StatusOK:
			st.ok.Add(1)
			st.latency(took)
			var res struct {
				OutputID string `json:"outputId"`
				Entries  []struct {
					Handle string `json:"handle"`
				} `json:"entries"`
			}
			if err := json.Unmarshal(b, &res); err != nil {
				st.fail("%s: 200 that is not JSON: %.200s", route, b)
				return nil
			}
			var hs []string
			for _, e := range res.Entries {
				if e.Handle != "" {
					hs = append(hs, e.Handle)
				}
			}
			return hs
		case status == http.StatusTooManyRequests:
			var p struct{ Code string }
			_ = json.Unmarshal(b, &p)
			if ra, err := strconv.Atoi(hdr.Get("Retry-After")); p.Code != "busy" || err != nil || ra < 1 {
				st.fail("%s: 429 %s with Retry-After %q", route, p.Code, hdr.Get("Retry-After"))
				return nil
			}
			st.busy.Add(1)
		default:
			st.fail("%s: %d %.300s", route, status, b)
		}
		return nil
	}

	host := func(method, path, body string, want int) []byte {
		status, _, b, _, err := do(method, g.HostURL+path, g.HostToken, body)
		st.hostCalls.Add(1)
		if err != nil || status != want {
			st.fail("%s %s: %d %v %.300s", method, path, status, err, b)
			return nil
		}
		return b
	}

	sample := func() loadSample {
		s, err := procStatus(pid)
		if err != nil {
			st.fail("reading the gateway's /proc: %v", err)
		}
		cpu, err := procCPU(pid)
		if err != nil {
			st.fail("reading the gateway's /proc: %v", err)
		}
		return loadSample{rss: s["VmRSS"], hwm: s["VmHWM"], threads: s["Threads"], fds: s["FDs"], goroutines: goroutines(hc, g), cpu: cpu}
	}
	settle := func() {
		transport.CloseIdleConnections()
		sharedTransport.CloseIdleConnections()
		time.Sleep(500 * time.Millisecond)
	}

	settle()
	start := sample()
	began := time.Now()
	deadline := began.Add(duration)
	var warm loadSample
	warmDone := make(chan struct{})
	go func() {
		time.Sleep(warmup)
		warm = sample()
		close(warmDone)
	}()

	var wg sync.WaitGroup
	var runs atomic.Int64
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(began.UnixNano())))
			for time.Now().Before(deadline) {
				b := host("POST", "/host/v1/runs", `{"maxConfidentiality":["`+atomWork+`"]}`, http.StatusCreated)
				var created struct{ RunId, Token string }
				if b == nil || json.Unmarshal(b, &created) != nil {
					return
				}
				runs.Add(1)
				var mu sync.Mutex
				var handles []string
				for round := 0; round < 20 && time.Now().Before(deadline); round++ {
					var pair sync.WaitGroup
					for k := 0; k < 2; k++ {
						route, body := "loom_search", `{"query":"q"}`
						switch n := rng.IntN(10); {
						case n < 2:
							route, body = "loom_page_read", `{"target":"a.md"}`
						case n < 3:
							route, body = "loom_profile", `{}`
						case n < 5:
							mu.Lock()
							tok := "cfh:v:22222"
							if len(handles) > 0 {
								tok = handles[rng.IntN(len(handles))]
							}
							mu.Unlock()
							route, body = "describe_handle", `{"token":"`+tok+`"}`
						}
						pair.Add(1)
						go func() {
							defer pair.Done()
							if hs := tool(created.RunId, created.Token, route, body); len(hs) > 0 {
								mu.Lock()
								handles = append(handles, hs...)
								mu.Unlock()
							}
						}()
					}
					pair.Wait()
					if round%5 == 4 {
						host("GET", "/host/v1/runs/"+created.RunId+"/calls", "", http.StatusOK)
					}
				}
				host("DELETE", "/host/v1/runs/"+created.RunId, "", http.StatusNoContent)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	<-warmDone
	settle()
	g.noLoomProcesses(t, "")
	// Connections close asynchronously: give the gateway up to 5s to
	// let go of them.
	end := sample()
	for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait) && (end.fds > start.fds+4 || end.goroutines > start.goroutines+8); {
		time.Sleep(250 * time.Millisecond)
		transport.CloseIdleConnections()
		end = sample()
	}

	calls, ok, busy := st.calls.Load(), st.ok.Load(), st.busy.Load()
	p50, p99 := st.percentile(50), st.percentile(99)
	report := fmt.Sprintf(`| figure | value |
| --- | --- |
| duration | %v (warm-up %v) |
| runs created and deleted | %d |
| tool calls | %d (%.0f/s) |
| host API calls | %d |
| 200 | %d |
| busy (429 with Retry-After) | %d |
| unexpected answers | %d |
| latency of a 200, p50 / p99 | %v / %v |
| gateway CPU time during the load (per request) | %v (%v) |
| RSS start / after warm-up / end (peak) | %s / %s / %s (%s) |
| threads start / after warm-up / end | %d / %d / %d |
| open fds start / after warm-up / end | %d / %d / %d |
| goroutines start / after warm-up / end | %s / %s / %s |
| loom processes left | 0 |
`, elapsed.Round(time.Millisecond), warmup, runs.Load(), calls, float64(calls)/elapsed.Seconds(), st.hostCalls.Load(), ok, busy, st.failures.Load(),
		p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond),
		(end.cpu - start.cpu).Round(10*time.Millisecond), ((end.cpu - start.cpu) / time.Duration(max(calls+st.hostCalls.Load(), 1))).Round(time.Microsecond),
		mib(start.rss), mib(warm.rss), mib(end.rss), mib(end.hwm),
		start.threads, warm.threads, end.threads, start.fds, warm.fds, end.fds,
		count(start.goroutines), count(warm.goroutines), count(end.goroutines))
	t.Logf("load figures (race detector %v):\n%s", testkit.RaceEnabled, report)
	if path := os.Getenv(loadReportEnv); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}

	for _, f := range st.firstFailures() {
		t.Error(f)
	}
	if n := st.failures.Load(); n > 0 {
		t.Errorf("%d unexpected answers", n)
	}
	if ok < 20 {
		t.Errorf("only %d successful calls in %v", ok, elapsed)
	}
	// Stable after warm-up. The short form runs under the race detector on
	// a busy machine, so its bounds are loose.
	rssSlack, rssFactor := int64(16<<10), 1.25
	if !long {
		rssSlack, rssFactor = 96<<10, 2
	}
	if limit := int64(float64(warm.rss)*rssFactor) + rssSlack; end.rss > limit {
		t.Errorf("RSS grew after warm-up: %s then %s (limit %s)", mib(warm.rss), mib(end.rss), mib(limit))
	}
	if end.fds > start.fds+4 {
		t.Errorf("open file descriptors: %d before the load, %d after it", start.fds, end.fds)
	}
	// A loom process in flight holds a thread in wait; --max-concurrent-loom
	// bounds them, so the count settles once the limiter has been full.
	threadSlack := int64(8)
	if !long {
		threadSlack = 16
	}
	if limit := max(warm.threads+threadSlack, warm.threads*3/2); end.threads > limit {
		t.Errorf("threads grew after warm-up: %d then %d", warm.threads, end.threads)
	}
	if start.goroutines >= 0 && end.goroutines >= 0 && end.goroutines > start.goroutines+8 {
		t.Errorf("goroutines: %d before the load, %d after it", start.goroutines, end.goroutines)
	}
}

// loadStats are the counters of TestLoad, safe for concurrent use.
type loadStats struct {
	calls, ok, busy, hostCalls, failures atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	first     []string
}

func (s *loadStats) fail(format string, args ...any) {
	s.failures.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.first) < 10 {
		s.first = append(s.first, fmt.Sprintf(format, args...))
	}
}

func (s *loadStats) firstFailures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.first)
}

func (s *loadStats) latency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, d)
}

func (s *loadStats) percentile(p int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, len(l)*p/100)]
}

// loadSample is the gateway process's state at one instant.
type loadSample struct {
	rss, hwm     int64         // kB
	cpu          time.Duration // user + system since the process started
	threads, fds int64
	goroutines   int64 // -1 when the host listener serves no /metrics
}

// goroutines reads go_goroutines from the host listener's /metrics (host
// token); -1 when it serves none.
func goroutines(hc *http.Client, g *gateway) int64 {
	req, err := http.NewRequestWithContext(context.Background(), "GET", g.HostURL+"/metrics", nil)
	if err != nil {
		return -1
	}
	req.Header.Set("Authorization", "Bearer "+g.HostToken)
	resp, err := hc.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return int64(n)
			}
		}
	}
	return -1
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

func count(n int64) string {
	if n < 0 {
		return "n/a"
	}
	return strconv.FormatInt(n, 10)
}
