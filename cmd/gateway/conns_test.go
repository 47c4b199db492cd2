package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConnectionCap(t *testing.T) {
	reserve := fdReserve(8) // 288
	tests := []struct {
		name              string
		flag, loom, limit int
		want              int
		wantErr           string
	}{
		{"default under a roomy limit", 0, 8, 20000, 1024, ""},
		{"default shrinks to the room left", 0, 8, 1000, (1000 - reserve) / 2, ""},
		{"limit unreadable: the default", 0, 8, 0, 1024, ""},
		{"limit unreadable: the flag", 5000, 8, 0, 5000, ""},
		{"flag that fits", 5000, 8, 20000, 5000, ""},
		{"flag exactly at the room", (20000 - reserve) / 2, 8, 20000, (20000 - reserve) / 2, ""},
		{"flag past the room", (20000-reserve)/2 + 1, 8, 20000, 0, "--max-connections 9857"},
		{"limit too low for any default", 0, 8, 300, 0, "ulimit -n"},
		{"more loom processes take room", 0, 1000, 5000, (5000 - fdReserve(1000)) / 2, ""},
		{"a huge flag does not overflow", 1 << 62, 8, 20000, 0, "need about 2199023255840 open files"},
		{"the largest flag does not overflow", 1<<63 - 1, 8, 20000, 0, "--max-connections"},
		{"huge loom slots do not overflow", 0, 1 << 62, 20000, 0, "ulimit -n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := connectionCap(tc.flag, tc.loom, tc.limit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("connectionCap(%d, %d, %d) = %d, %v; want an error naming %q", tc.flag, tc.loom, tc.limit, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("connectionCap(%d, %d, %d) = %d, %v; want %d", tc.flag, tc.loom, tc.limit, got, err, tc.want)
			}
		})
	}
}

// limitedServer serves h on a loopback listener capped at max connections
// and returns its URL and limit.
func limitedServer(t *testing.T, max int, h http.Handler) (string, *connLimit) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(max)
	srv := &http.Server{Handler: h, ConnState: l.ConnState, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l.listener(ln))
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), l
}

// get fetches url on a client of its own (its own connection) and returns
// the body.
func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
}

// TestConnLimitClosesIdle: at the cap, a new connection is served at once
// by closing a keep-alive connection that sits idle.
func TestConnLimitClosesIdle(t *testing.T) {
	url, l := limitedServer(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	a, b, c := newClient(), newClient(), newClient()
	get(t, a, url)
	get(t, b, url)
	if n := l.Open(); n != 2 {
		t.Fatalf("%d connections open after two clients, want 2 (kept alive)", n)
	}
	done := make(chan string, 1)
	go func() { done <- get(t, c, url) }()
	select {
	case body := <-done:
		if body != "ok" {
			t.Fatalf("third client got %q", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("third client not served while two connections sat idle")
	}
	if n := l.evicted.Load(); n != 1 {
		t.Errorf("%d idle connections closed, want 1", n)
	}
	if n := l.Open(); n > 2 {
		t.Errorf("%d connections open, cap 2", n)
	}
	// The client whose connection was closed reconnects.
	for _, cl := range []*http.Client{a, b} {
		if body := get(t, cl, url); body != "ok" {
			t.Errorf("a first client got %q after its idle connection was closed", body)
		}
	}
}

// TestConnLimitWaits: at the cap with every connection busy, a new one
// waits (it holds no descriptor of the server) until one closes.
func TestConnLimitWaits(t *testing.T) {
	release := make(chan struct{})
	url, l := limitedServer(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	busy := make(chan string, 2)
	slowA, slowB := newClient(), newClient()
	go func() { busy <- get(t, slowA, url+"/slow") }()
	go func() { busy <- get(t, slowB, url+"/slow") }()
	deadline := time.Now().Add(5 * time.Second)
	for l.Open() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan string, 1)
	go func() { done <- get(t, newClient(), url+"/fast") }()
	for l.waited.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("third client served while two requests held both connections")
	case <-time.After(300 * time.Millisecond):
	}
	if l.waited.Load() != 1 || l.evicted.Load() != 0 || l.Open() != 2 {
		t.Fatalf("waited %d, evicted %d, open %d; want 1, 0, 2", l.waited.Load(), l.evicted.Load(), l.Open())
	}
	// Ending the busy requests frees their connections only once they
	// close; closing one client's idle connection lets the third in.
	close(release)
	<-busy
	<-busy
	select {
	case body := <-done:
		if body != "ok" {
			t.Fatalf("third client got %q", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("third client not served after the busy requests ended")
	}
}

// TestConnLimitClose: Accept waiting at the cap returns when the listener
// closes.
func TestConnLimitClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(1)
	lim := l.listener(ln)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	first, err := lim.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := net.Dial("tcp", ln.Addr().String()) // accepted, then waits for a slot
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := lim.Accept()
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	for l.waited.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	lim.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Accept at the cap returned a connection after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept at the cap did not return after Close")
	}
	// The waiting connection was closed, not handed out.
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := second.Read(make([]byte, 1)); err == nil {
		t.Error("the connection waiting at the cap is still open after Close")
	}
	first.Close()
	if n := l.Open(); n != 0 {
		t.Errorf("%d slots held after every connection closed", n)
	}
}

// TestConnLimitClosesSilent: at the cap with no idle connection, a
// newcomer is served once the oldest connection that has sent nothing has
// been silent for silentGrace, not after the read-header timeout.
func TestConnLimitClosesSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(2)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ConnState:         l.ConnState,
		ReadHeaderTimeout: time.Minute,
	}
	go srv.Serve(l.listener(ln))
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String()
	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Open() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if body := get(t, newClient(), url); body != "ok" {
		t.Fatalf("newcomer got %q", body)
	}
	took := time.Since(start)
	if took < silentGrace/2 || took > 5*silentGrace {
		t.Errorf("newcomer served after %v; want about silentGrace (%v), far below the read-header timeout", took, silentGrace)
	}
	if n := l.hushed.Load(); n != 1 {
		t.Errorf("%d silent connections closed, want 1", n)
	}
	if l.evicted.Load() != 0 {
		t.Errorf("%d idle connections closed, want 0", l.evicted.Load())
	}
	// The oldest silent connection was the one closed.
	silent[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := silent[0].Read(make([]byte, 1)); err == nil {
		t.Error("the oldest silent connection is still open")
	}
}
