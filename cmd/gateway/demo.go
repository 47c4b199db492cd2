package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// demoSetup is the --demo sample Loom: the gateway's own executable linked
// as <dir>/loom (main runs sampleloom under that name), a direct-transport
// host config pointing at it, and a host token for a TCP host listener.
type demoSetup struct {
	dir       string
	hostToken string
	quietLog  bool   // the log level was lowered to warn (no --log-level given)
	config    string // --loom-retrieval-config given with --demo: its loom runs, not the sample's
	host      string // the first --allowed-hosts name: the Host the agent listener answers
}

// demoCeiling is the demo run's ceiling (maxConfidentiality): work only, so the sample
// Loom's health rows come back withheld.
const demoCeiling = `["https://loom.example/facet/work"]`

func setUpDemo(o *options) (*demoSetup, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo: cannot find own executable: %w", err)
	}
	dir, err := os.MkdirTemp("", "loom-gateway-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	tok := make([]byte, 32)
	_, _ = rand.Read(tok)
	s := &demoSetup{dir: dir, hostToken: base64.RawURLEncoding.EncodeToString(tok), quietLog: o.demoQuietLog}
	cli := filepath.Join(dir, "loom")
	if err := os.Symlink(exe, cli); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("demo: %w", err)
	}
	cfg := map[string]any{
		"cliPath":   cli,
		"transport": map[string]any{"kind": "direct", "instanceDir": dir, "runId": "demo"},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	cfgPath := filepath.Join(dir, "loom-retrieval.json")
	tokenPath := filepath.Join(dir, "host-token")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(tokenPath, []byte(s.hostToken), 0o600); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("demo: %w", err)
	}
	if o.configPath == "" {
		o.configPath = cfgPath
	} else {
		s.config = o.configPath
	}
	if len(o.allowedHosts) > 0 {
		s.host = o.allowedHosts[0]
	}
	if o.hostListen == "unix:/tmp/loom-gateway-host.sock" {
		o.hostListen = "127.0.0.1:8081"
	}
	if o.hostTokenFile == "" {
		o.hostTokenFile = tokenPath
	}
	return s, nil
}

func (s *demoSetup) cleanup() { _ = os.RemoveAll(s.dir) }

// start creates the demo run through the host API, at hostAddr (a TCP
// address or a unix socket), and prints the lines to try it.
func (s *demoSetup) start(ctx context.Context, d *deps, agentAddr string, hostAddr net.Addr, w io.Writer) error {
	hostURL, client, socket := "http://"+hostAddr.String(), http.DefaultClient, ""
	if hostAddr.Network() == "unix" {
		// The host's own requests, and the lines printed, go through the
		// socket: curl's --unix-socket, a Host of localhost.
		socket = hostAddr.String()
		hostURL = "http://localhost"
		client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", socket)
		}}}
		defer client.CloseIdleConnections()
	}
	body := `{"runId":"demo","maxConfidentiality":` + demoCeiling + `,"ttlSeconds":86400}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hostURL+"/host/v1/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.HostToken)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("demo: create run: %w", err)
	}
	defer resp.Body.Close()
	var created struct{ RunID, Token string }
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &created) != nil {
		return fmt.Errorf("demo: create run: status %d", resp.StatusCode)
	}
	agentURL := "http://" + agentAddr + "/v1/runs/" + created.RunID
	handle, err := demoHandle(ctx, agentURL, created.Token, s.host)
	if err != nil && s.config == "" {
		return err // the sample Loom always admits a row: this is a broken gateway
	}
	auth := `-H "Authorization: Bearer ` + created.Token + `" -H 'Content-Type: application/json'`
	if s.host != "" {
		auth += ` -H 'Host: ` + s.host + `'`
	}
	var out bytes.Buffer
	loomName := "sample Loom"
	if s.config != "" {
		loomName = "the loom of " + s.config + " (--loom-retrieval-config), not the sample Loom"
	}
	fmt.Fprintf(&out, "\nloom-gateway demo: %s, run %q with ceiling %s\n", loomName, created.RunID, demoCeiling)
	if err != nil {
		fmt.Fprintf(&out, "(the demo's own loom_search {\"query\":\"atlas\"} found no handle: %v; describe_handle and result need a handle from a search of yours)\n\n", strings.TrimPrefix(err.Error(), "demo: "))
	} else {
		fmt.Fprintf(&out, "(the demo made one loom_search itself, so the run holds handles: %s is the first it admitted)\n\n", handle)
	}
	if s.host != "" {
		fmt.Fprintf(&out, "The agent listener answers the Host %s only (--allowed-hosts): the agent lines below send it, and the README's need -H 'Host: %s' too.\n\n", s.host, s.host)
	}
	if socket != "" {
		fmt.Fprintf(&out, "The host listener is the unix socket %s (--host-listen): the host lines below reach it with curl --unix-socket, and the README's host lines need --unix-socket %s too.\n\n", socket, shellWord(socket))
	}
	fmt.Fprintf(&out, "For the README's lines, in another shell:\n")
	fmt.Fprintf(&out, "  export AGENT_URL=http://%s HOST_URL=%s TOKEN=%s HOST_TOKEN=%s\n\n", agentAddr, hostURL, created.Token, d.HostToken)
	fmt.Fprintf(&out, "Agent API (run token):\n")
	lines := []struct{ tool, body string }{
		{"loom_search", `{"query":"atlas"}`},
		{"loom_page_discover", `{"kind":"projects"}`},
		{"loom_page_inspect", `{"target":"Projects/Atlas"}`},
		{"loom_page_read", `{"target":"Projects/Atlas/brief.md"}`},
		{"loom_people", `{"query":"ada@example.com"}`},
		{"loom_calendar_list", `{"all":true}`},
		{"loom_context", `{"read":"where"}`},
		{"loom_profile", `{}`},
	}
	if handle != "" {
		lines = append(lines, []struct{ tool, body string }{
			{"describe_handle", `{"token":"` + handle + `"}`},
			{"result", `{"value":{"summary":"Atlas launches Thursday","source":"` + handle + `"}}`},
		}...)
	}
	for _, l := range lines {
		fmt.Fprintf(&out, "  curl -s %s %s/%s -d '%s'\n", auth, agentURL, l.tool, l.body)
	}
	if handle != "" {
		fmt.Fprintf(&out, "  # a run takes one result: the line above answers 201 once, then 409 result_exists\n")
	}
	fmt.Fprintf(&out, "\nHost API (host token):\n")
	hostAuth := `-H "Authorization: Bearer ` + d.HostToken + `"`
	if socket != "" {
		hostAuth = "--unix-socket " + shellWord(socket) + " " + hostAuth
	}
	for _, p := range []string{"calls", "handles", "result"} {
		fmt.Fprintf(&out, "  curl -s %s %s/host/v1/runs/%s/%s\n", hostAuth, hostURL, created.RunID, p)
	}
	if socket != "" {
		fmt.Fprintf(&out, "\nConsole: a browser cannot open the unix socket %s; forward it (ssh -L 8081:%s HOST, then http://localhost:8081/console/) or start with --host-listen 127.0.0.1:8081\nHost token (the console asks for it): %s\n", socket, socket, d.HostToken)
	} else {
		fmt.Fprintf(&out, "\nConsole: %s/console/\nHost token (the console asks for it): %s\n", hostURL, d.HostToken)
	}
	fmt.Fprintf(&out, "Run token of %q (the console's \"Try a tool\" asks for it): %s\n", created.RunID, created.Token)
	if s.quietLog {
		fmt.Fprintf(&out, "Logs: warnings and errors only (--log-level info shows every request)\n")
	}
	fmt.Fprintf(&out, "\n")
	_, err = w.Write(out.Bytes())
	return err
}

// demoHandle makes the demo's first search over the agent API and returns
// the handle of its first admitted entry, so the printed describe_handle
// and result lines work as they are. host, when set, is the Host the
// request names (the agent listener answers --allowed-hosts only).
func demoHandle(ctx context.Context, agentURL, token, host string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, agentURL+"/loom_search", strings.NewReader(`{"query":"atlas"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("demo: first search: %w", err)
	}
	defer resp.Body.Close()
	var res struct {
		Code    string `json:"code"`
		Entries []struct {
			Status string `json:"status"`
			Handle string `json:"handle"`
		}
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &res); resp.StatusCode != http.StatusOK || err != nil {
		return "", errors.New(strings.TrimSpace(fmt.Sprintf("demo: first search: status %d %s", resp.StatusCode, res.Code)))
	}
	for _, e := range res.Entries {
		if e.Status == "admitted" && e.Handle != "" {
			return e.Handle, nil
		}
	}
	return "", fmt.Errorf("demo: first search admitted nothing")
}

// shellWord is s as one POSIX shell word: as is when it is plain, else
// in single quotes.
func shellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+:,@%=", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
