package tests

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConnectionCap: with --max-connections 2 on the agent listener, two
// connections that send nothing hold both slots only for about a second
// (not --read-header-timeout, 20s here), and two idle keep-alive
// connections give way to a new client at once.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--max-connections", "2", "--read-header-timeout", "20s"}})
	addr := strings.TrimPrefix(g.AgentURL, "http://")
	fetch := func(c *http.Client) error {
		resp, err := c.Get(g.AgentURL + "/openapi.yaml")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /openapi.yaml: %d", resp.StatusCode)
		}
		return nil
	}
	newClient := func() *http.Client {
		return &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	}

	// Two silent connections: the third client waits until the older has
	// been silent a second, which is then closed for it.
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(100 * time.Millisecond) // both accepted
	start := time.Now()
	if err := fetch(newClient()); err != nil {
		t.Fatalf("a client behind two silent connections: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("served after %v with two silent connections holding the cap of 2; want about a second, not --read-header-timeout (20s)", waited)
	}
	if n := g.metric(t, `loom_gateway_connections_at_cap_total{listener="agent"}`); n < 1 {
		t.Errorf("connections_at_cap_total{agent} = %v, want >= 1", n)
	}
	if n := g.metric(t, `loom_gateway_connections_silent_closed_total{listener="agent"}`); n < 1 {
		t.Errorf("connections_silent_closed_total{agent} = %v, want >= 1", n)
	}

	// Two idle keep-alive connections: a third client is served at once.
	a, b := newClient(), newClient()
	if err := fetch(a); err != nil {
		t.Fatal(err)
	}
	if err := fetch(b); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := fetch(newClient()); err != nil {
		t.Fatalf("a client behind two idle connections: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("served after %v behind two idle connections; want at once (without eviction it waits for --idle-timeout, 2m)", waited)
	}
	if n := g.metric(t, `loom_gateway_connections_idle_closed_total{listener="agent"}`); n < 1 {
		t.Errorf("connections_idle_closed_total{agent} = %v, want >= 1", n)
	}
	if n := g.metric(t, `loom_gateway_connections_open{listener="agent"}`); n > 2 {
		t.Errorf("connections_open{agent} = %v over the cap of 2", n)
	}
	// The clients whose connections were closed reconnect.
	for _, c := range []*http.Client{a, b} {
		if err := fetch(c); err != nil {
			t.Errorf("a client whose idle connection was closed: %v", err)
		}
	}
}

// metric reads one sample of /metrics on the host listener (-1 when
// absent).
func (g *gateway) metric(t testing.TB, series string) float64 {
	t.Helper()
	resp, body := rawRequest(t, "GET", g.HostURL+"/metrics", g.HostToken, "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}
