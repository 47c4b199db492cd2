package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/loomtest"
	"github.com/loom-gateway/gateway/internal/loom/sampleloom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/memstore"
	"github.com/loom-gateway/gateway/internal/testsupport/contracttest"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// FuzzAgentRouter sends arbitrary requests (method, path, Authorization,
// Content-Type, body) through the whole agent router: auth, body checks, the
// contract validator, the handlers, the argument builder, a runner and the
// measurement. Every answer must be one the contract declares (checked with
// openapi3filter against api/openapi.yaml, as the end-to-end suite does), an
// error must be a problem of the codes table whose status is the HTTP
// status, nothing may answer 500 (a recovered panic or an unclassified
// error), and no planted marker may appear in any response.
//
// The loom behind the router is the sample loom (package sampleloom) with
// markers planted: on stderr, in the text of refusals and start errors, in
// the loom path and instance directory, and in rows labeled above the run's
// work-only ceiling or with an unreadable label. Inputs whose selector byte
// has the high bit set run it as a real process through loom.CLI (the test
// binary re-executed under the name "loom", see init); the others run it
// in-process through loomtest.Fake, which is a hundred times faster and lets
// the fuzzer explore the router and validator. Seeds are the request
// examples of every agent operation of the contract.
func FuzzAgentRouter(f *testing.F) {
	spans := traceFuzz(f) // every span is searched for the markers too
	fz := newFuzzGateway(f)
	fz.spans = spans
	for _, s := range contractSeeds(f) {
		f.Add(http.MethodPost, uint8(0), s.suffix, "", "application/json", s.body)
		switch s.suffix {
		case "loom_search", "loom_page_discover", "loom_page_read":
			// A few through a real process: each costs an exec of the
			// test binary, slow under the race detector.
			f.Add(http.MethodPost, uint8(0x80), s.suffix, "", "application/json", s.body)
		}
	}
	f.Add(http.MethodPost, uint8(0x01), "loom_search", "", "application/json", []byte(`{"query":"atlas"}`))   // another run's token
	f.Add(http.MethodPost, uint8(0x10), "loom_search", "", "application/json", []byte(`{"query":"atlas"}`))   // another run's path
	f.Add(http.MethodPost, uint8(0x80), "loom_search", "", "application/json", []byte(`{"query":"boom"}`))    // refusal with markers
	f.Add(http.MethodPost, uint8(0x00), "loom_search", "", "application/json", []byte(`{"query":"crash"}`))   // start error with markers
	f.Add(http.MethodPost, uint8(0x80), "loom_calendar_list", "", "application/json", []byte(`{"all":true}`)) // withheld rows
	f.Add(http.MethodPost, uint8(0x04), "loom_search", "Bearer x", "application/json", []byte(`{"query":"a"}`))
	f.Add(http.MethodGet, uint8(0x20), "healthz", "", "", []byte(nil))
	f.Add(http.MethodGet, uint8(0x20), "openapi.yaml", "", "", []byte(nil))
	f.Add(http.MethodGet, uint8(0x21), "host/v1/runs", "", "", []byte(nil))
	f.Add(http.MethodPost, uint8(0x00), "result", "", "application/json", []byte(`{"value":{"a":"cfh:v:22222"}}`))
	f.Add(http.MethodPost, uint8(0x00), "loom_search", "", "text/plain", []byte(`{"query":"a","query":"b"}`))
	f.Add("DELETE", uint8(0x00), "loom_people", "", "application/json; charset=utf-8", []byte(`[`))
	f.Add(http.MethodPost, uint8(0x00), "loom_search", "", "application/json", []byte(`{"query":"a","zz":1,"10":2,"2":3,"limit":0}`))         // unknown keys in Object.keys order
	f.Add(http.MethodPost, uint8(0x00), "result", "", "application/json", []byte(`{"value":{"`+strings.Repeat("K", 200)+`":{"x":1,"x":2}}}`)) // a pointer past its bounds
	f.Add(http.MethodHead, uint8(0x22), "openapi.yaml", "", "", []byte(nil))                                                                  // HEAD of a public path, no token
	f.Add(http.MethodDelete, uint8(0x20), "openapi.yaml", "", "", []byte(nil))                                                                // wrong method on a public path
	f.Add(http.MethodPut, uint8(0x00), "loom_profile", "", "application/json", []byte(`{}`))                                                  // wrong method on a tool
	f.Add(http.MethodPost, uint8(0x00), "loom_profile", "", "text/plain", []byte(nil))                                                        // wrong type, no body
	f.Fuzz(fz.check)
}

// Markers no response may carry.
const (
	fuzzMarkerStderr   = "FZ-STDERR-MARK-71c2"
	fuzzMarkerPath     = "FZ-PATH-MARK-0e9b"
	fuzzMarkerWithheld = "FZ-WITHHELD-MARK-5ad3"
)

var fuzzMarkers = []string{fuzzMarkerStderr, fuzzMarkerPath, fuzzMarkerWithheld}

// goErrorText is text of Go and gateway errors, never in a problem.
var goErrorText = []string{"handlers: ", "loom: ", "store: ", "fork/exec", "exec: ", "runtime error", "goroutine ", "panic"}

// init runs the fuzz target's loom when the test binary is executed under
// the name "loom" (loom.CLI runs a symlink of it).
func init() {
	if filepath.Base(os.Args[0]) == "loom" {
		stdout, code := fuzzLoom(os.Args, os.Environ())
		_, _ = os.Stderr.WriteString(fuzzMarkerStderr + " " + os.Args[0] + "\n")
		_, _ = os.Stdout.Write(stdout)
		os.Exit(code)
	}
}

// fuzzLoom is the sample loom with markers planted: "boom" anywhere in argv
// answers a refusal whose message holds markers, "crash" garbage with
// markers and exit 2; list payloads gain a row labeled health (above the
// runs' work ceiling) and a row with an unreadable label, both holding
// fuzzMarkerWithheld.
func fuzzLoom(argv, env []string) ([]byte, int) {
	joined := strings.Join(argv[1:], " ")
	switch {
	case strings.Contains(joined, "boom"):
		msg, _ := json.Marshal(fuzzMarkerStderr + " " + argv[0])
		return []byte(`{"ok":false,"code":"denied","message":` + string(msg) + `}`), 2
	case strings.Contains(joined, "crash"):
		return []byte("Traceback: " + fuzzMarkerStderr + " " + argv[0]), 2
	}
	var stdout bytes.Buffer
	code := sampleloom.Main(argv, env, &stdout, io.Discard)
	return plantRows(stdout.Bytes()), code
}

// withheldRows are rows the runs' work-only ceiling must withhold.
var withheldRows = []json.RawMessage{
	json.RawMessage(`{"id":"fz-above","snippet":"` + fuzzMarkerWithheld + `","ifc":{"confidentiality":["` + health + `"]}}`),
	json.RawMessage(`{"id":"fz-unreadable","snippet":"` + fuzzMarkerWithheld + `","ifc":{"confidentiality":"` + fuzzMarkerWithheld + `"}}`),
}

func plantRows(out []byte) []byte {
	var list []json.RawMessage
	if json.Unmarshal(out, &list) == nil {
		b, _ := json.Marshal(append(list, withheldRows...))
		return b
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(out, &obj) != nil {
		return out
	}
	for _, k := range []string{"hits", "pages"} {
		if json.Unmarshal(obj[k], &list) == nil && list != nil {
			obj[k], _ = json.Marshal(append(list, withheldRows...))
			b, _ := json.Marshal(obj)
			return b
		}
	}
	return out
}

// realRunnerKey marks a request whose loom runs as a process.
type realRunnerKey struct{}

// fuzzRunner runs loom as a process or in-process, as the request says.
type fuzzRunner struct {
	real *loom.CLI
	fake *loomtest.Fake
}

func (r *fuzzRunner) RunTool(ctx context.Context, tool loom.Tool, argv, env []string) (loom.Output, error) {
	if real, _ := ctx.Value(realRunnerKey{}).(bool); real {
		return r.real.RunTool(ctx, tool, argv, env)
	}
	return r.fake.RunTool(ctx, tool, argv, env)
}

// fuzzGateway is the agent router the target drives, with two runs that
// are replaced every so often so that their call logs and handle tables
// stay small.
type fuzzGateway struct {
	router   http.Handler
	contract routers.Router
	logs     *testkit.Buffer

	mu    sync.Mutex
	n     int
	a, b  fuzzRun
	dir   string
	ceil  ifc.Ceiling
	store *memstore.Store
	spans *tracetest.InMemoryExporter
}

type fuzzRun struct{ id, token string }

func newFuzzGateway(f *testing.F) *fuzzGateway {
	f.Helper()
	dir := filepath.Join(f.TempDir(), fuzzMarkerPath)
	if err := os.Mkdir(dir, 0o700); err != nil {
		f.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		f.Fatal(err)
	}
	cli := filepath.Join(dir, "loom")
	if err := os.Symlink(exe, cli); err != nil {
		f.Fatal(err)
	}
	cfg := &loom.Config{CLIPath: cli, Transport: loom.Transport{Kind: loom.TransportDirect, InstanceDir: dir, RunID: "fz"}}
	if err := cfg.Validate(); err != nil {
		f.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	fake := &loomtest.Fake{RunFunc: func(_ context.Context, argv, env []string) (loomref.Output, error) {
		if strings.Contains(strings.Join(argv[1:], " "), "crash") {
			return loomref.Output{ExitCode: -1}, &loom.StartError{Err: errors.New("fork/exec " + argv[0] + ": " + fuzzMarkerStderr)}
		}
		stdout, code := fuzzLoom(argv, env)
		return loomref.Output{Stdout: stdout, ExitCode: code}, nil
	}}
	logs := &testkit.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	faces, err := New(Config{Core: gateway.Config{
		Store:            st,
		Runner:           &fuzzRunner{real: loom.New(loom.Options{Timeout: 10 * time.Second, MaxStdout: 1 << 20, MaxConcurrent: 8, QueueWait: 5 * time.Second}), fake: fake},
		Loom:             cfg,
		LoomPath:         cli,
		Env:              loom.Env(cfg, os.Getenv("PATH"), true),
		Tools:            loom.Tools,
		MaxHandlesPerRun: 10000,
		RunTTL:           time.Hour,
		Logger:           logger,
	}, MaxRequestBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	conf, err := ifc.ParseConfidentiality([]byte(`["` + work + `"]`))
	if err != nil {
		f.Fatal(err)
	}
	fz := &fuzzGateway{router: faces.Agent, contract: fuzzContractRouter(f), logs: logs, dir: dir, ceil: ifc.CeilingOf(conf), store: st}
	fz.rotate(f)
	return fz
}

// fuzzContractRouter routes requests in the whole contract, to validate
// responses.
func fuzzContractRouter(f *testing.F) routers.Router {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err != nil {
		f.Fatal(err)
	}
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		f.Fatal(err)
	}
	return r
}

// rotate replaces the two runs; the caller holds mu or is the setup.
func (fz *fuzzGateway) rotate(tb testing.TB) {
	ctx := context.Background()
	for _, old := range []fuzzRun{fz.a, fz.b} {
		if old.id != "" {
			_ = fz.store.DeleteRun(ctx, old.id)
		}
	}
	mk := func(name string) fuzzRun {
		r := fuzzRun{id: fmt.Sprintf("fz-%s-%d", name, fz.n), token: fmt.Sprintf("fuzz-token-%s-%d-%d", name, fz.n, time.Now().UnixNano())}
		now := time.Now().UTC()
		if err := fz.store.CreateRun(ctx, store.Run{ID: r.id, TokenHash: store.HashToken(r.token), CreatedAt: now, ExpiresAt: now.Add(time.Hour), Ceiling: fz.ceil}); err != nil {
			tb.Fatal(err)
		}
		return r
	}
	fz.a, fz.b = mk("a"), mk("b")
}

// runs returns the current runs, replacing them every 200 inputs.
func (fz *fuzzGateway) runs(tb testing.TB) (fuzzRun, fuzzRun) {
	fz.mu.Lock()
	defer fz.mu.Unlock()
	fz.n++
	if fz.n%200 == 0 {
		fz.rotate(tb)
	}
	return fz.a, fz.b
}

// check is one fuzz input. sel picks the runner (bit 7), the path (bits
// 4-5: own run, the other run, suffix as the whole path) and the
// Authorization header (bits 0-2: own token, other run's token, none, auth
// as the whole header, "Bearer "+auth, the other run's token on its own
// path).
func (fz *fuzzGateway) check(t *testing.T, method string, sel uint8, suffix, auth, contentType string, body []byte) {
	input := method + "\x00" + suffix + "\x00" + auth + "\x00" + contentType + "\x00" + string(body)
	for _, m := range fuzzMarkers {
		if strings.Contains(input, m) {
			return // the fuzzer learned a marker from the comparisons below
		}
	}
	if !validMethod(method) || !validHeaderValue(auth) || !validHeaderValue(contentType) {
		return // net/http refuses these before any handler
	}
	a, b := fz.runs(t)
	var path string
	switch sel >> 4 & 3 {
	case 0:
		path = "/v1/runs/" + a.id + "/" + suffix
	case 1:
		path = "/v1/runs/" + b.id + "/" + suffix
	default:
		path = "/" + strings.TrimPrefix(suffix, "/")
	}
	var header string
	switch sel & 7 {
	case 0, 6, 7:
		header = "Bearer " + a.token
	case 1:
		header = "Bearer " + b.token
	case 2:
	case 3:
		header = auth
	case 4:
		header = "Bearer " + auth
	case 5:
		header = "bearer " + a.token + auth
	}
	ctx := context.WithValue(context.Background(), realRunnerKey{}, sel&0x80 != 0)
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	req.Method = method
	req.URL = &url.URL{Path: path}
	req.RequestURI = path
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	fz.router.ServeHTTP(rec, req)
	resp := rec.Result()
	got := rec.Body.Bytes()

	if rec.Code >= 500 && rec.Code != http.StatusBadGateway && rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("%s %q answered %d: %s\nlog: %s", method, path, rec.Code, got, fz.logs.String())
	}
	if err := fz.validate(req, resp, got); err != nil {
		t.Fatalf("%s %q (Authorization %q, Content-Type %q, body %q) answered %d, which the contract does not allow: %v\n%s", method, path, header, contentType, body, rec.Code, err, got)
	}
	var hdr strings.Builder
	for k, v := range resp.Header {
		hdr.WriteString(k + ": " + strings.Join(v, ", ") + "\n")
	}
	for _, m := range append(fuzzMarkers, fz.dir) {
		if bytes.Contains(got, []byte(m)) || strings.Contains(hdr.String(), m) {
			t.Fatalf("%s %q answered %d carrying %q: %s", method, path, rec.Code, m, got)
		}
	}
	if m, span := spanLeak(fz.spans, append(fuzzMarkers, fz.dir)); m != "" {
		t.Fatalf("%s %q: span %q carries %q", method, path, span, m)
	}
	if rec.Code >= 400 {
		for _, s := range goErrorText {
			if bytes.Contains(got, []byte(s)) && !strings.Contains(input, s) {
				t.Fatalf("%s %q: problem carries Go error text %q: %s", method, path, s, got)
			}
		}
	}
}

// validate checks a response as the end-to-end suite does: a route of the
// contract by openapi3filter.ValidateResponse, anything else must be an
// error; every error must be a problem of the codes table.
func (fz *fuzzGateway) validate(req *http.Request, resp *http.Response, body []byte) error {
	vreq := req.Clone(context.Background())
	vreq.Host = "gateway"
	vreq.URL = &url.URL{Scheme: "http", Host: "gateway", Path: req.URL.Path}
	route, err := contracttest.ValidateResponse(fz.contract, vreq, resp.StatusCode, resp.Header, body)
	switch {
	case route != nil:
		if err != nil {
			return err
		}
	case resp.StatusCode < 400:
		return fmt.Errorf("a route outside the contract answered %d", resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated:
		return nil
	case http.StatusNoContent:
		if len(body) > 0 {
			return errors.New("204 with a body")
		}
		return nil
	}
	if resp.StatusCode < 400 {
		return fmt.Errorf("status %d is not one the agent listener answers", resp.StatusCode)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/problem+json" {
		return fmt.Errorf("error answer with Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var p testkit.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("problem is not JSON: %v", err)
	}
	info, ok := problemInfo(p.Code)
	switch {
	case !ok:
		return fmt.Errorf("code %q is not in the codes table", p.Code)
	case p.Status != resp.StatusCode || info.Status != resp.StatusCode:
		return fmt.Errorf("problem %s with status %d in a %d answer", p.Code, p.Status, resp.StatusCode)
	case p.Title != info.Title || p.Detail != info.Detail && p.Code != "invalid_input":
		return fmt.Errorf("problem %s without its fixed text", p.Code)
	case p.Type != "https://loom-gateway.dev/problems/"+p.Code:
		return fmt.Errorf("problem type %q", p.Type)
	case p.RequestID == "" || p.RequestID != resp.Header.Get("X-Request-Id"):
		return errors.New("problem without the request id")
	}
	if p.Pointer != problem.BoundPointer(p.Pointer) || len(body) > 4096 {
		return fmt.Errorf("problem of %d bytes, pointer of %d: larger than the bounds of problem/pointer.go allow", len(body), len(p.Pointer))
	}
	if p.Code == "invalid_input" && (len(p.Errors) == 0 || len(p.Errors) > 8 || p.Detail == "") {
		return fmt.Errorf("invalid_input with %d faults, detail %q", len(p.Errors), p.Detail)
	}
	if p.Code == "busy" && resp.Header.Get("Retry-After") == "" {
		return errors.New("busy without Retry-After")
	}
	if p.Code == "method_not_allowed" && resp.Header.Get("Allow") == "" {
		return errors.New("405 without Allow")
	}
	return nil
}

// fuzzSeed is one operation's request example.
type fuzzSeed struct {
	suffix string
	body   []byte
}

// contractSeeds are the request-body examples of every agent operation of
// api/openapi.yaml.
func contractSeeds(f *testing.F) []fuzzSeed {
	f.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		f.Fatal(err)
	}
	var seeds []fuzzSeed
	for path, item := range doc.Paths.Map() {
		suffix, ok := strings.CutPrefix(path, "/v1/runs/{runId}/")
		if !ok {
			continue
		}
		op := item.Post
		if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
			continue
		}
		mt := op.RequestBody.Value.Content.Get("application/json")
		if mt == nil {
			continue
		}
		var examples []any
		if mt.Example != nil {
			examples = append(examples, mt.Example)
		}
		for _, ex := range mt.Examples {
			if ex != nil && ex.Value != nil {
				examples = append(examples, ex.Value.Value)
			}
		}
		for _, ex := range examples {
			b, err := json.Marshal(ex)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, fuzzSeed{suffix, b})
		}
	}
	slices.SortFunc(seeds, func(x, y fuzzSeed) int { return strings.Compare(x.suffix+string(x.body), y.suffix+string(y.body)) })
	if len(seeds) < 10 {
		f.Fatalf("%d request examples in the contract, want one per agent operation (10)", len(seeds))
	}
	return seeds
}

// validMethod reports whether m is an HTTP token (RFC 9110 5.6.2), as
// net/http requires of a request method.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v may be sent as a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
