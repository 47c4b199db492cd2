package tests

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// TestSlowClients: a client that sends its headers slower than
// --read-header-timeout (slowloris) is cut off on both listeners, and one
// whose body is slower than --read-timeout, or stalls, is answered 408
// request_timeout and cut off, while other clients are served; a body
// over --max-request-bytes answers 413, whether its length is declared or
// chunked; headers over 64 KiB are refused.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	const headerTimeout, readTimeout = time.Second, 2 * time.Second
	g := startGateway(t, gwOptions{Flags: []string{
		"--read-header-timeout", headerTimeout.String(),
		"--read-timeout", readTimeout.String(),
		"--max-request-bytes", "2048",
	}})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[]}`})
	r := g.newRun(t, client.CreateRunInput{})
	listeners := map[string]string{"agent": g.AgentURL, "host": g.HostURL}

	for name, base := range listeners {
		t.Run("slowloris on the "+name+" listener", func(t *testing.T) {
			t.Parallel()
			conn := dial(t, base)
			start := time.Now()
			closed := closedAfter(conn)
			head := "GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: "
			// One byte every 100ms: never a complete header block.
			deadline := time.After(15 * time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case got := <-closed:
					took := time.Since(start)
					if took < headerTimeout-100*time.Millisecond || took > headerTimeout+5*time.Second {
						t.Errorf("cut off after %v, want about --read-header-timeout (%v)", took, headerTimeout)
					}
					// net/http closes the connection, at most after a 400
					// with Connection: close; the handler never runs.
					if len(got) > 0 && !regexp.MustCompile(`^HTTP/1\.1 40[08] [^\r]*\r\n(?s:.*)Connection: close\r\n`).Match(got) {
						t.Errorf("the cut-off connection was answered %q", got)
					}
					return
				case <-deadline:
					t.Fatalf("a slowloris client still connected after 15s (sent %d bytes)", i)
				case <-tick.C:
					b := byte('a')
					if i < len(head) {
						b = head[i]
					}
					if _, err := conn.Write([]byte{b}); err != nil {
						// The server closed; the reader reports when.
						tick.Stop()
					}
				}
			}
		})
	}

	t.Run("slow body", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, g.AgentURL)
		body := `{"query":"` + strings.Repeat("s", 80) + `"}`
		start := time.Now()
		head := "POST /v1/runs/" + r.ID + "/loom_search HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer " + r.Token +
			"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		closed := closedAfter(conn)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(20 * time.Second)
		for i := 0; ; i++ {
			select {
			case got := <-closed:
				took := time.Since(start)
				if took < readTimeout-200*time.Millisecond || took > readTimeout+6*time.Second {
					t.Errorf("cut off after %v, want about --read-timeout (%v)", took, readTimeout)
				}
				// The client is still there: the server gave up
				// reading, 408 request_timeout, not 499 cancelled.
				wantRequestTimeout(t, got)
				for _, c := range g.loomCalls(t) {
					if strings.Contains(strings.Join(c.Argv, " "), "sss") {
						t.Errorf("a body that never arrived ran loom: %q", c.Argv)
					}
				}
				t.Logf("slow body cut off after %v; answered %q", took, firstLine(got))
				return
			case <-deadline:
				t.Fatal("a slow body sender still connected after 20s")
			case <-tick.C:
				if i < len(body) {
					if _, err := conn.Write([]byte{body[i]}); err != nil {
						tick.Stop()
					}
				}
			}
		}
	})

	// A body shorter than its Content-Length, then silence (the sender
	// stalled): 408 request_timeout at --read-timeout on both listeners.
	for name, target := range map[string]struct{ base, path, token string }{
		"agent": {g.AgentURL, "/v1/runs/" + r.ID + "/loom_search", r.Token},
		"host":  {g.HostURL, "/host/v1/runs", g.HostToken},
	} {
		t.Run("stalled body on the "+name+" listener", func(t *testing.T) {
			t.Parallel()
			conn := dial(t, target.base)
			start := time.Now()
			head := "POST " + target.path + " HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer " + target.token +
				"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}"
			if _, err := conn.Write([]byte(head)); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-closedAfter(conn):
				if took := time.Since(start); took < readTimeout-200*time.Millisecond || took > readTimeout+6*time.Second {
					t.Errorf("answered after %v, want about --read-timeout (%v)", took, readTimeout)
				}
				wantRequestTimeout(t, got)
			case <-time.After(20 * time.Second):
				t.Fatal("a stalled body still connected after 20s")
			}
		})
	}

	t.Run("others are served meanwhile", func(t *testing.T) {
		t.Parallel()
		time.Sleep(headerTimeout / 2)
		for i := 0; i < 3; i++ {
			r.ok(t, "loom_search", `{"query":"q"}`)
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("body over --max-request-bytes", func(t *testing.T) {
		t.Parallel()
		url := g.AgentURL + "/v1/runs/" + r.ID + "/loom_search"
		pad := func(n int) string { // a valid search body of exactly n bytes
			s := `{"query":"q","tz":"`
			return s + strings.Repeat("x", n-len(s)-2) + `"}`
		}
		resp, body := rawRequest(t, "POST", url, r.Token, "application/json", strings.NewReader(pad(2049)))
		wantProblemCode(t, resp.StatusCode, body, http.StatusRequestEntityTooLarge, "request_too_large", "")
		// Chunked, without a declared length.
		resp, body = rawRequest(t, "POST", url, r.Token, "application/json", io.MultiReader(strings.NewReader(pad(4096))))
		wantProblemCode(t, resp.StatusCode, body, http.StatusRequestEntityTooLarge, "request_too_large", "")
		// Exactly the cap is read (and refused for its content only).
		resp, body = rawRequest(t, "POST", url, r.Token, "application/json", strings.NewReader(pad(2048)))
		if resp.StatusCode == http.StatusRequestEntityTooLarge {
			t.Errorf("a body of exactly --max-request-bytes answered 413: %s", body)
		}
		// The host listener takes the same cap.
		req, err := http.NewRequest("POST", g.HostURL+"/host/v1/runs", strings.NewReader(`{"runId":"`+strings.Repeat("r", 2100)+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+g.HostToken)
		req.Header.Set("Content-Type", "application/json")
		hresp, err := httpClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		hbody := readAll(t, hresp.Body)
		hresp.Body.Close()
		wantProblemCode(t, hresp.StatusCode, hbody, http.StatusRequestEntityTooLarge, "request_too_large", "")
	})

	t.Run("headers over 64 KiB", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, g.AgentURL)
		req := "GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Big: " + strings.Repeat("b", 80<<10) + "\r\n\r\n"
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("80 KiB of headers answered %d, want 431", resp.StatusCode)
		}
	})

	t.Run("flags", func(t *testing.T) {
		t.Parallel()
		code, out := runGateway(t, nil, "--help")
		if code != 0 {
			t.Fatalf("--help exited %d", code)
		}
		for _, f := range []string{`-read-header-timeout duration\n.*\(default 5s\)`, `-read-timeout duration\n.*\(default 30s\)`} {
			if !regexp.MustCompile(f).MatchString(out) {
				t.Errorf("--help does not match %q:\n%s", f, out)
			}
		}
		for _, bad := range []string{"--read-header-timeout=0s", "--read-timeout=-1s"} {
			if code, out := runGateway(t, nil, bad, "--listen", "127.0.0.1:0", "--host-listen", "unix:"+g.Dir+"/h.sock"); code != 2 || !strings.Contains(out, strings.Split(bad, "=")[0]) {
				t.Errorf("%s: exit %d, want 2 naming the flag\n%s", bad, code, out)
			}
		}
	})
}

// wantRequestTimeout checks the raw answer to a body that did not arrive
// in time: 408 request_timeout with Connection: close, carrying no marker.
func wantRequestTimeout(t *testing.T, got []byte) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("unreadable answer %q: %v", got, err)
	}
	b, _ := io.ReadAll(resp.Body)
	wantProblemCode(t, resp.StatusCode, b, http.StatusRequestTimeout, "request_timeout", "")
	if resp.Header.Get("Content-Type") != "application/problem+json" || !resp.Close {
		t.Errorf("408 with Content-Type %q, Connection %q; want a problem and close", resp.Header.Get("Content-Type"), resp.Header.Get("Connection"))
	}
	for _, m := range markers {
		if bytes.Contains(got, []byte(m)) {
			t.Errorf("the answer carries %s", m)
		}
	}
}

// dial opens a raw TCP connection to the listener of base (http://host:port),
// closed when t ends.
func dial(t testing.TB, base string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedAfter reads conn until the server closes it and then sends what
// was read.
func closedAfter(conn net.Conn) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		var got bytes.Buffer
		_, _ = io.Copy(&got, conn)
		ch <- got.Bytes()
	}()
	return ch
}

// firstLine is the status line of a raw answer.
func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\r\n"))
	return string(line)
}
