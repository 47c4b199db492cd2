package mcpface_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/handlers"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// The MCP face's tests that need the whole agent listener (the face
// behind the router, its authentication and body checks, over the core)
// build it as the binary does, with handlers.New: this package's tests
// are an external package, so importing the REST face makes no cycle.

// testStart is the instant the test gateway's clock stands still at, so
// that two gateways' call logs compare equal.
var testStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// gatewayOptions configures newMCPGateway. The zero value is a gateway
// over the sample loom, offering all eight tools, no ceiling.
type gatewayOptions struct {
	// RunFunc answers loom calls; nil means loomtest.Sample.
	RunFunc          func(ctx context.Context, argv, env []string) (loomref.Output, error)
	MaxHandlesPerRun int
}

// testDeps is the core's configuration, which a test may change before
// the gateway is built.
type testDeps struct {
	gateway.Config
}

// mcpGateway is both listeners' handlers over one core, and the tokens of
// the runs it created.
type mcpGateway struct {
	agent, host http.Handler
	logs        *testkit.Buffer
	tokens      map[string]string // by run id
}

// newMCPGateway is a test gateway over opts, the MCP face's direct path
// off when sdkOnly; configure, when set, changes the core's
// configuration before the gateway is built.
func newMCPGateway(t testing.TB, opts gatewayOptions, sdkOnly bool, configure func(*testDeps)) *mcpGateway {
	t.Helper()
	now := func() time.Time { return testStart }
	st := memstore.New(memstore.Options{Now: now})
	fake := &loomtest.Fake{RunFunc: opts.RunFunc}
	if fake.RunFunc == nil {
		fake.RunFunc = loomtest.Sample
	}
	cfg := &loom.Config{
		CLIPath:   "/usr/bin/loom",
		Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: "/srv/loom", RunID: "t"},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	logs := &testkit.Buffer{}
	d := &testDeps{Config: gateway.Config{
		Store:            st,
		Runner:           fake,
		MaxHandlesPerRun: opts.MaxHandlesPerRun,
		RunTTL:           time.Hour,
		Logger:           slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:              now,
		Loom:             cfg,
		LoomPath:         cfg.CLIPath,
		Env:              loom.Env(cfg, "/usr/bin:/bin", true),
		Tools:            loom.Tools,
	}}
	if configure != nil {
		configure(d)
	}
	f, err := handlers.New(handlers.Config{Core: d.Config, Version: "test", SDKOnly: sdkOnly})
	if err != nil {
		t.Fatalf("handlers.New: %v", err)
	}
	return &mcpGateway{agent: f.Agent, host: f.Host, logs: logs, tokens: map[string]string{}}
}

// hostDo calls the host router.
func (g *mcpGateway) hostDo(method, path, body string) *httptest.ResponseRecorder {
	return testkit.Serve(g.host, method, path, "", body)
}

// call calls a REST operation of run id with token.
func (g *mcpGateway) call(id, token, op, body string) *httptest.ResponseRecorder {
	return testkit.Serve(g.agent, http.MethodPost, "/v1/runs/"+id+"/"+op, token, body)
}

// run creates run id with body's settings and keeps its token.
func (g *mcpGateway) run(t testing.TB, id, body string) {
	t.Helper()
	rec := g.hostDo(http.MethodPost, "/host/v1/runs", `{"runId":"`+id+`"`+body+`}`)
	wantStatus(t, rec, http.StatusCreated)
	var out struct{ Token string }
	decode(t, rec, &out)
	g.tokens[id] = out.Token
}

// searchHandle is the handle of the admitted row with id that a REST
// loom_search of run answers.
func (g *mcpGateway) searchHandle(t testing.TB, run, id string) string {
	t.Helper()
	rec := g.call(run, g.tokens[run], "loom_search", `{"query":"atlas"}`)
	wantStatus(t, rec, http.StatusOK)
	var res struct {
		Entries []struct {
			Status string
			Handle string
			Value  struct{ ID string }
		}
	}
	decode(t, rec, &res)
	for _, e := range res.Entries {
		if e.Status == "admitted" && e.Value.ID == id {
			return e.Handle
		}
	}
	return ""
}

// wireCall is a call record as the host reads it.
type wireCall struct {
	OutputID string  `json:"outputId"`
	Status   string  `json:"status"`
	Code     *string `json:"code"`
}

// calls is run id's call log.
func (g *mcpGateway) calls(t testing.TB, id string) []wireCall {
	t.Helper()
	rec := g.hostDo(http.MethodGet, "/host/v1/runs/"+id+"/calls", "")
	wantStatus(t, rec, http.StatusOK)
	var out struct{ Calls []wireCall }
	decode(t, rec, &out)
	return out.Calls
}

// decode unmarshals the response body into v.
func decode(t testing.TB, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("response %d %q: %v", rec.Code, rec.Body, err)
	}
}

// wantStatus fails the test unless rec answered status.
func wantStatus(t testing.TB, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
}

// runnerFunc is a gateway.Runner that answers with a function.
type runnerFunc func(ctx context.Context, argv, env []string) (loomref.Output, error)

func (f runnerFunc) RunTool(ctx context.Context, tool loom.Tool, argv, env []string) (loom.Output, error) {
	out, err := f(ctx, argv, env)
	if err != nil {
		return loom.Output{ExitCode: out.ExitCode, Duration: out.Duration}, err
	}
	return loomtest.Condensed(tool, out), nil
}
