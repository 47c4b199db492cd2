package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
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
	quietLog  bool // the log level was lowered to warn (no --log-level given)
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

// start creates the demo run through the host API and prints the lines to
// try it.
func (s *demoSetup) start(ctx context.Context, d *deps, agentAddr, hostAddr string, w io.Writer) error {
	hostURL := "http://" + hostAddr
	body := `{"runId":"demo","maxConfidentiality":` + demoCeiling + `,"ttlSeconds":86400}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hostURL+"/host/v1/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.HostToken)
	resp, err := http.DefaultClient.Do(req)
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
	handle, err := demoHandle(ctx, agentURL, created.Token)
	if err != nil {
		return err
	}
	auth := `-H "Authorization: Bearer ` + created.Token + `" -H 'Content-Type: application/json'`
	var out bytes.Buffer
	fmt.Fprintf(&out, "\nloom-gateway demo: sample Loom, run %q with ceiling %s\n", created.RunID, demoCeiling)
	fmt.Fprintf(&out, "(the demo made one loom_search itself, so the run holds handles: %s is the first it admitted)\n\n", handle)
	fmt.Fprintf(&out, "For the README's lines, in another shell:\n")
	fmt.Fprintf(&out, "  export AGENT_URL=http://%s HOST_URL=%s TOKEN=%s HOST_TOKEN=%s\n\n", agentAddr, hostURL, created.Token, d.HostToken)
	fmt.Fprintf(&out, "Agent API (run token):\n")
	for _, l := range []struct{ tool, body string }{
		{"loom_search", `{"query":"atlas"}`},
		{"loom_page_discover", `{"kind":"projects"}`},
		{"loom_page_inspect", `{"target":"Projects/Atlas"}`},
		{"loom_page_read", `{"target":"Projects/Atlas/brief.md"}`},
		{"loom_people", `{"query":"ada@example.com"}`},
		{"loom_calendar_list", `{"all":true}`},
		{"loom_context", `{"read":"where"}`},
		{"loom_profile", `{}`},
		{"describe_handle", `{"token":"` + handle + `"}`},
		{"result", `{"value":{"summary":"Atlas launches Thursday","source":"` + handle + `"}}`},
	} {
		fmt.Fprintf(&out, "  curl -s %s %s/%s -d '%s'\n", auth, agentURL, l.tool, l.body)
	}
	fmt.Fprintf(&out, "  # a run takes one result: the line above answers 201 once, then 409 result_exists\n")
	fmt.Fprintf(&out, "\nHost API (host token):\n")
	hostAuth := `-H "Authorization: Bearer ` + d.HostToken + `"`
	for _, p := range []string{"calls", "handles", "result"} {
		fmt.Fprintf(&out, "  curl -s %s %s/host/v1/runs/%s/%s\n", hostAuth, hostURL, created.RunID, p)
	}
	fmt.Fprintf(&out, "\nConsole: %s/console/\nHost token (the console asks for it): %s\n", hostURL, d.HostToken)
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
// and result lines work as they are.
func demoHandle(ctx context.Context, agentURL, token string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, agentURL+"/loom_search", strings.NewReader(`{"query":"atlas"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("demo: first search: %w", err)
	}
	defer resp.Body.Close()
	var res struct {
		Entries []struct {
			Status string `json:"status"`
			Handle string `json:"handle"`
		}
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &res) != nil {
		return "", fmt.Errorf("demo: first search: status %d", resp.StatusCode)
	}
	for _, e := range res.Entries {
		if e.Status == "admitted" && e.Handle != "" {
			return e.Handle, nil
		}
	}
	return "", fmt.Errorf("demo: first search admitted nothing")
}
