package replicas

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// env is what every gateway of the test shares.
type env struct {
	dir       string // the loom link, config, host token
	gateway   string // the gateway binary
	config    string // host config: the sample loom, direct transport
	tokenFile string
	hostToken string
}

// gatewayBin and fakeloomBin are the gateway and tests/fakeloom, built
// once by TestMain (when a Redis is set).
var gatewayBin, fakeloomBin string

// pidServer is the abstract socket on which this process tells the fake
// loom its pid as the test sees it (testkit.ServePids); setUpWith names
// it in each instance directory's pid-server file.
var pidServer string

// stores are the Redis deployments the scenarios of eachStore run on: the
// variable holding each one's --store URL (scripts/redis.sh start sets
// both).
var stores = []struct{ name, env string }{
	{"redis", "LOOM_GATEWAY_TEST_REDIS"},
	{"cluster", "LOOM_GATEWAY_TEST_REDIS_CLUSTER"}, // three shards
}

// eachStore runs scenario as one subtest per entry of stores, skipping
// those whose variable is not set.
func eachStore(t *testing.T, scenario func(t *testing.T, url string)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			url := os.Getenv(s.env)
			if url == "" {
				t.Skip(s.env + " is not set (eval \"$(scripts/redis.sh start)\")")
			}
			scenario(t, url)
		})
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("LOOM_GATEWAY_TEST_REDIS") == "" && os.Getenv("LOOM_GATEWAY_TEST_REDIS_CLUSTER") == "" {
		os.Exit(m.Run()) // every test skips
	}
	dir, err := os.MkdirTemp("", "loom-replicas-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicas:", err)
		os.Exit(1)
	}
	gatewayBin, fakeloomBin = filepath.Join(dir, "gateway"), filepath.Join(dir, "fakeloom")
	for pkg, out := range map[string]string{"./cmd/gateway": gatewayBin, "./tests/fakeloom": fakeloomBin} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Dir = filepath.Join("..", "..")
		if b, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "replicas: go build %s: %v\n%s", pkg, err, b)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	pidServer = testkit.ServePids("loom-replicas-pids-")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// setUp links the gateway as <dir>/loom (under that name the binary is the
// sample loom of --demo) and writes a direct-transport host config for it
// and a host token.
func setUp(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	loom := filepath.Join(dir, "loom")
	if err := os.Symlink(gatewayBin, loom); err != nil {
		t.Fatal(err)
	}
	return setUpWith(t, dir, loom)
}

// setUpWith writes, in dir, a direct-transport host config for the loom at
// cliPath (its instanceDir is dir) and a host token.
func setUpWith(t *testing.T, dir, cliPath string) *env {
	t.Helper()
	e := &env{dir: dir, gateway: gatewayBin, hostToken: "host-" + testkit.RandomHex(16)}
	cfg, _ := json.Marshal(map[string]any{
		"cliPath":   cliPath,
		"transport": map[string]any{"kind": "direct", "instanceDir": dir, "runId": "replicas"},
	})
	e.config = filepath.Join(dir, "loom-retrieval.json")
	e.tokenFile = filepath.Join(dir, "host-token")
	files := map[string][]byte{e.config: cfg, e.tokenFile: []byte(e.hostToken)}
	if pidServer != "" {
		// The fake loom's own /proc (a PID namespace of its own) shows
		// it not its pid as this process sees it: it asks pidServer.
		files[filepath.Join(dir, "pid-server")] = []byte(pidServer)
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// replica is one running gateway process.
type replica struct {
	name      string
	agent     string // http://host:port of the agent listener
	host      string // http://host:port of the host listener
	hostToken string
	cmd       *exec.Cmd
	exited    chan struct{}
	log       *bytes.Buffer
	logMu     *sync.Mutex
}

// start runs a gateway on the store URL with both listeners on free
// loopback ports, and returns once it logs where it listens. It is stopped
// (SIGKILL, if still running) when t ends. Flags go after the test's own.
func (e *env) start(t *testing.T, name, storeURL string, flags ...string) *replica {
	t.Helper()
	args := []string{
		"--store", storeURL,
		"--listen", "127.0.0.1:0",
		"--host-listen", "127.0.0.1:0",
		"--host-token-file", e.tokenFile,
		"--loom-retrieval-config", e.config,
		"--log-format", "json",
		// Room for every concurrent call of the test, however slow the
		// machine: the limiter is not what this test is about.
		"--max-concurrent-loom", "64",
		"--busy-wait", "30s",
	}
	cmd := exec.Command(e.gateway, append(args, flags...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, hostToken: e.hostToken, cmd: cmd, exited: make(chan struct{}), log: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	addrs := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.logMu.Lock()
			r.log.Write(append(sc.Bytes(), '\n'))
			r.logMu.Unlock()
			var line struct{ Msg, Agent, Host string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "gateway listening" {
				addrs <- [2]string{line.Agent, line.Host}
			}
		}
		_ = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.exited
		if t.Failed() {
			t.Logf("%s log:\n%s", name, r.logText())
		}
	})
	select {
	case a := <-addrs:
		r.agent, r.host = "http://"+a[0], "http://"+a[1]
	case <-r.exited:
		t.Fatalf("%s exited before listening:\n%s", name, r.logText())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not listen within 20s:\n%s", name, r.logText())
	}
	return r
}

func (r *replica) logText() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.log.String()
}

// kill ends the process with SIGKILL: no shutdown, no draining.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.exited
}

var client = &http.Client{Timeout: 30 * time.Second}

// do sends a JSON request and returns the status and the body.
func do(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// expect decodes a response with the wanted status into v (unless nil).
func expect(t *testing.T, what string, status int, body []byte, want int, v any) {
	t.Helper()
	if status != want {
		t.Fatalf("%s = %d, want %d: %s", what, status, want, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v: %s", what, err, body)
		}
	}
}

// toolResult is the part of a tool's answer the test reads.
type toolResult struct {
	OutputID string `json:"outputId"`
	Entries  []struct {
		Status      string          `json:"status"`
		Value       json.RawMessage `json:"value"`
		Label       json.RawMessage `json:"label"`
		LabelSource string          `json:"labelSource"`
		Handle      string          `json:"handle"`
	} `json:"entries"`
}

// handles maps each admitted row to its handle. A row is its value, label
// and label source: a row without a label of its own takes the run's
// model-context label of the moment (labelSource "query"), so the same
// value read under another label is another referent with another token.
func (r toolResult) handles() map[string]string {
	m := map[string]string{}
	for _, e := range r.Entries {
		if e.Status == "admitted" {
			m[string(e.Value)+" "+string(e.Label)+" "+e.LabelSource] = e.Handle
		}
	}
	return m
}

// sameTokens checks that the rows in both maps have one token, and returns
// how many rows that is.
func sameTokens(t *testing.T, what string, x, y map[string]string) int {
	t.Helper()
	n := 0
	for row, tok := range x {
		if other, ok := y[row]; ok {
			n++
			if other != tok {
				t.Errorf("%s: row %s has tokens %s and %s", what, row, tok, other)
			}
		}
	}
	return n
}

// seq is the n of an outputId "<run>:<tool>:<n>".
func seq(t *testing.T, outputID string) int {
	t.Helper()
	i := strings.LastIndexByte(outputID, ':')
	n, err := strconv.Atoi(outputID[i+1:])
	if err != nil {
		t.Fatalf("outputId %q: %v", outputID, err)
	}
	return n
}

// run is a run as the agent sees it.
type run struct{ id, token string }

func (r *replica) call(t *testing.T, rn run, tool string, input any) toolResult {
	t.Helper()
	res, err := r.tryCall(rn, tool, input)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryCall is call for other goroutines than the test's.
func (r *replica) tryCall(rn run, tool string, input any) (toolResult, error) {
	b, _ := json.Marshal(input)
	req, err := http.NewRequest("POST", r.agent+"/v1/runs/"+rn.id+"/"+tool, bytes.NewReader(b))
	if err != nil {
		return toolResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rn.token)
	resp, err := client.Do(req)
	if err != nil {
		return toolResult{}, fmt.Errorf("%s %s: %w", r.name, tool, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return toolResult{}, err
	}
	var res toolResult
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("%s %s = %d, want 200: %s", r.name, tool, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return res, fmt.Errorf("%s %s: %w: %s", r.name, tool, err, body)
	}
	return res, nil
}

func (r *replica) describe(t *testing.T, rn run, token string) (known bool, referent json.RawMessage) {
	t.Helper()
	status, body := do(t, "POST", r.agent+"/v1/runs/"+rn.id+"/describe_handle", rn.token, map[string]string{"token": token})
	var res struct {
		Known    bool            `json:"known"`
		Referent json.RawMessage `json:"referent"`
	}
	expect(t, r.name+" describe_handle", status, body, http.StatusOK, &res)
	return res.Known, res.Referent
}

// calls is one concurrent call of the test: the tool and its input.
type call struct {
	tool  string
	input map[string]any
}

var mix = []call{
	{"loom_search", map[string]any{"query": "atlas"}},
	{"loom_page_discover", map[string]any{"kind": "projects"}},
	{"loom_search", map[string]any{"query": "launch"}},
	{"loom_calendar_list", map[string]any{"all": true}},
	{"loom_people", map[string]any{"query": "ada@example.com"}},
}

// TestReplicas runs two gateways on one store, on a Redis and on a Redis
// Cluster: a run created on A is called on B, handles minted on A resolve
// on B, concurrent calls split across both keep one sequence and one token
// per row, and B (then a new C) carries on when A is killed mid-run.
func TestReplicas(t *testing.T) { eachStore(t, testReplicas) }

func testReplicas(t *testing.T, url string) {
	e := setUp(t)
	a := e.start(t, "replica A", url)
	b := e.start(t, "replica B", url)

	// A run created through A.
	rn := run{id: "replicas-" + testkit.RandomHex(6)}
	status, body := do(t, "POST", a.host+"/host/v1/runs", e.hostToken, map[string]any{"runId": rn.id, "ttlSeconds": 600})
	var created struct{ RunID, Token string }
	expect(t, "A: create run", status, body, http.StatusCreated, &created)
	rn.token = created.Token
	t.Cleanup(func() {
		// Through B: A may be dead by then.
		do(t, "DELETE", b.host+"/host/v1/runs/"+rn.id, e.hostToken, nil)
	})
	// The same id through B is taken.
	status, body = do(t, "POST", b.host+"/host/v1/runs", e.hostToken, map[string]any{"runId": rn.id})
	expect(t, "B: create the same run id", status, body, http.StatusConflict, nil)

	// Called on B, then the same call on A: one sequence, one token per row.
	onB := b.call(t, rn, "loom_search", map[string]any{"query": "atlas"})
	onA := a.call(t, rn, "loom_search", map[string]any{"query": "atlas"})
	if seq(t, onB.OutputID) != 1 || seq(t, onA.OutputID) != 2 {
		t.Errorf("outputIds = %s then %s, want :1 then :2", onB.OutputID, onA.OutputID)
	}
	if n := sameTokens(t, "A and B", onA.handles(), onB.handles()); n == 0 {
		t.Fatalf("no row admitted on both A and B: %+v %+v", onA, onB)
	}

	// A handle minted on A resolves on B.
	pages := a.call(t, rn, "loom_page_discover", map[string]any{"kind": "projects"})
	var mintedOnA string
	for _, tok := range pages.handles() {
		mintedOnA = tok
		break
	}
	if mintedOnA == "" {
		t.Fatalf("page_discover admitted nothing: %+v", pages)
	}
	if known, ref := b.describe(t, rn, mintedOnA); !known || len(ref) == 0 {
		t.Errorf("B: describe_handle(%s minted on A) = known %v, referent %s", mintedOnA, known, ref)
	}
	// An observation posted on A is the run's label on B.
	status, body = do(t, "POST", a.host+"/host/v1/runs/"+rn.id+"/observations", e.hostToken,
		map[string]any{"label": map[string]any{"confidentiality": []string{"https://loom.example/facet/replica-test"}}})
	expect(t, "A: observation", status, body, http.StatusNoContent, nil)
	var summary struct {
		ModelContextLabel struct{ Confidentiality json.RawMessage } `json:"modelContextLabel"`
		Calls, Handles    int
		HasResult         bool `json:"hasResult"`
	}
	status, body = do(t, "GET", b.host+"/host/v1/runs/"+rn.id, e.hostToken, nil)
	expect(t, "B: run summary", status, body, http.StatusOK, &summary)
	if !bytes.Contains(summary.ModelContextLabel.Confidentiality, []byte("replica-test")) {
		t.Errorf("B: modelContextLabel = %s, want the observation made on A", summary.ModelContextLabel.Confidentiality)
	}

	// Concurrent calls of the run, split across A and B.
	const concurrent = 30
	before := 4 // outputs so far: two searches, page_discover, describe_handle
	results := make([]toolResult, concurrent)
	errs := make([]error, concurrent)
	var wg sync.WaitGroup
	for i := range concurrent {
		r := []*replica{a, b}[i%2]
		c := mix[i%len(mix)]
		wg.Go(func() { results[i], errs[i] = r.tryCall(rn, c.tool, c.input) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var numbers []int
	tokenOf := map[string]string{} // row -> token, across both replicas
	for i, res := range results {
		numbers = append(numbers, seq(t, res.OutputID))
		for row, tok := range res.handles() {
			if prev, ok := tokenOf[row]; ok && prev != tok {
				t.Errorf("call %d: row %s has tokens %s and %s", i, row, prev, tok)
			}
			tokenOf[row] = tok
		}
	}
	slices.Sort(numbers)
	for i, n := range numbers {
		if n != before+1+i {
			t.Fatalf("outputIds of the concurrent calls, sorted = %v, want %d..%d each once", numbers, before+1, before+concurrent)
		}
	}
	sameTokens(t, "before and in the concurrent calls", onA.handles(), tokenOf)

	// A dies mid-run, with calls in flight on both replicas: B's all
	// succeed, and B carries on with the same run and handles.
	const burst = 6
	bErrs, aErrs := make([]error, burst), make([]error, burst)
	var inflight sync.WaitGroup
	for i := range burst {
		c := mix[i%len(mix)]
		inflight.Go(func() { _, bErrs[i] = b.tryCall(rn, c.tool, c.input) })
		inflight.Go(func() { _, aErrs[i] = a.tryCall(rn, c.tool, c.input) }) // may die with A
	}
	time.Sleep(10 * time.Millisecond)
	a.kill(t)
	inflight.Wait()
	lost := 0
	for _, err := range aErrs {
		if err != nil {
			lost++
		}
	}
	t.Logf("A killed with calls in flight: %d of its %d calls failed", lost, burst)
	if err := errors.Join(bErrs...); err != nil {
		t.Fatalf("B's calls while A died: %v", err)
	}
	next := b.call(t, rn, "loom_search", map[string]any{"query": "atlas"})
	if got, last := seq(t, next.OutputID), before+concurrent+burst; got <= last {
		t.Errorf("B after A died: outputId %s, want past :%d", next.OutputID, last)
	}
	if n := sameTokens(t, "A, then B after A died", onA.handles(), next.handles()); n == 0 {
		t.Errorf("no row admitted on A and again on B after A died")
	}
	if known, _ := b.describe(t, rn, mintedOnA); !known {
		t.Errorf("B after A died: describe_handle(%s) not known", mintedOnA)
	}
	// The result writer on B cites handles minted on A.
	var cite []string
	for _, tok := range onA.handles() {
		cite = append(cite, tok)
	}
	cite = append(cite, mintedOnA)
	status, body = do(t, "POST", b.agent+"/v1/runs/"+rn.id+"/result", rn.token,
		map[string]any{"value": map[string]any{"summary": "from replica B", "sources": cite}})
	var written struct{ Documents int }
	expect(t, "B: result citing handles minted on A", status, body, http.StatusCreated, &written)
	if written.Documents != len(cite) {
		t.Errorf("B: result documents = %d, want %d", written.Documents, len(cite))
	}
	status, body = do(t, "POST", b.agent+"/v1/runs/"+rn.id+"/result", rn.token, map[string]any{"value": "again"})
	expect(t, "B: second result", status, body, http.StatusConflict, nil)

	// The host view on B holds every call, A's included.
	var calls struct{ Calls []struct{ OutputID string } }
	status, body = do(t, "GET", b.host+"/host/v1/runs/"+rn.id+"/calls", e.hostToken, nil)
	expect(t, "B: calls", status, body, http.StatusOK, &calls)
	// Every call up to the burst, B's of the burst, B's two since (A's calls
	// of the burst are logged when they finished before A died).
	ids := map[string]bool{}
	for _, c := range calls.Calls {
		if ids[c.OutputID] {
			t.Errorf("B: outputId %s logged twice", c.OutputID)
		}
		ids[c.OutputID] = true
	}
	if least, most := before+concurrent+burst+2, before+concurrent+2*burst+2; len(ids) < least || len(ids) > most {
		t.Errorf("B: %d calls logged, want %d..%d (both replicas')", len(ids), least, most)
	}
	status, body = do(t, "GET", b.host+"/host/v1/runs/"+rn.id, e.hostToken, nil)
	expect(t, "B: run summary", status, body, http.StatusOK, &summary)
	if !summary.HasResult || summary.Handles < len(tokenOf) {
		t.Errorf("B: summary hasResult %v, handles %d, want true and >= %d", summary.HasResult, summary.Handles, len(tokenOf))
	}

	// A replica started after A died serves the run too.
	c := e.start(t, "replica C", url)
	if known, _ := c.describe(t, rn, mintedOnA); !known {
		t.Errorf("C: describe_handle(%s) not known", mintedOnA)
	}
}

// TestRedisDown starts a gateway on a Redis that is not there: /readyz is
// 503 and every run operation answers 503 store_unavailable.
func TestRedisDown(t *testing.T) {
	if os.Getenv("LOOM_GATEWAY_TEST_REDIS") == "" {
		t.Skip("LOOM_GATEWAY_TEST_REDIS is not set")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	e := setUp(t)
	r := e.start(t, "replica on a closed port", "redis://"+closed+"/0")

	status, body := do(t, "GET", r.host+"/readyz", e.hostToken, nil)
	if status != http.StatusServiceUnavailable || !bytes.Contains(body, []byte(`"store":"unreachable"`)) {
		t.Errorf("/readyz = %d %s, want 503 with store unreachable", status, body)
	}
	for _, req := range []struct{ method, url, token string }{
		{"POST", r.host + "/host/v1/runs", e.hostToken},
		{"GET", r.host + "/host/v1/runs", e.hostToken},
		{"POST", r.agent + "/v1/runs/any/loom_search", "some-run-token"},
	} {
		var in any
		if req.method == "POST" {
			in = map[string]any{"query": "atlas"}
			if strings.HasSuffix(req.url, "/host/v1/runs") {
				in = map[string]any{}
			}
		}
		status, body := do(t, req.method, req.url, req.token, in)
		var p struct{ Code string }
		_ = json.Unmarshal(body, &p)
		if status != http.StatusServiceUnavailable || p.Code != "store_unavailable" {
			t.Errorf("%s %s = %d %s, want 503 store_unavailable", req.method, req.url, status, body)
		}
	}
}
