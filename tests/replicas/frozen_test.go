package replicas

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRedisFrozen: a Redis that accepts connections but answers nothing
// (SIGSTOP) answers every call 503 store_unavailable within a few seconds
// at the gateway's default timeouts (go-redis's own held each call 10 to
// 20 s), concurrent calls included; once Redis runs again (SIGCONT) the
// same run answers 200.
func TestRedisFrozen(t *testing.T) {
	if os.Getenv("LOOM_GATEWAY_TEST_REDIS") == "" {
		t.Skip("LOOM_GATEWAY_TEST_REDIS is not set")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	// A Redis of this test's own, so stopping it stops no other test.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	srv := exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no", "--dir", dir)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGCONT)
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("redis-server did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	e := setUp(t)
	r := e.start(t, "replica on a frozen Redis", "redis://"+addr+"/0")
	var created struct{ RunID, Token string }
	status, body := do(t, "POST", r.host+"/host/v1/runs", e.hostToken, map[string]any{})
	expect(t, "create run", status, body, http.StatusCreated, &created)
	rn := run{created.RunID, created.Token}
	search := map[string]any{"query": "atlas"}
	if status, body := do(t, "POST", r.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, search); status != http.StatusOK {
		t.Fatalf("before the freeze: %d %s", status, body)
	}

	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   string
		took   time.Duration
	}
	answers := make(chan answer, 8)
	for range cap(answers) {
		go func() {
			start := time.Now()
			status, body := do(t, "POST", r.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, search)
			answers <- answer{status, string(body), time.Since(start)}
		}()
	}
	for range cap(answers) {
		a := <-answers
		if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, `"code":"store_unavailable"`) {
			t.Errorf("on a frozen Redis: %d %s, want 503 store_unavailable", a.status, a.body)
		}
		// go-redis's defaults took 10 to 20 s; the gateway's answer in
		// about 2 (the bound leaves room for a slow machine).
		if a.took > 6*time.Second {
			t.Errorf("on a frozen Redis the answer took %v", a.took)
		}
	}

	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := do(t, "POST", r.agent+"/v1/runs/"+rn.id+"/loom_search", rn.token, search)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGCONT: %d %s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
