package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// Markers planted where the gateway must never let them out: fake loom
// stderr, every host path (the build and scenario directories), the content
// of rows the ceiling withholds, and input values the gateway refuses. No
// response body or header of the whole suite may contain one.
const (
	markerStderr   = "STDERR-LEAK-MARK-5b1c"
	markerPath     = "PATH-LEAK-MARK-9d2e"
	markerWithheld = "WITHHELD-LEAK-MARK-3f7a"
	markerInput    = "INPUT-ECHO-MARK-8c4d"
)

var markers = []string{markerStderr, markerPath, markerWithheld, markerInput}

// Set up by TestMain.
var (
	rootDir     string // holds markerPath; everything the suite writes is below it
	moduleDir   string // the module root (..)
	gatewayBin  string
	fakeloomBin string
	specBytes   []byte // api/openapi.yaml as committed
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	var err error
	if moduleDir, err = filepath.Abs(".."); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if rootDir, err = os.MkdirTemp("", "loom-e2e-"+markerPath+"-"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(rootDir)

	if name := testkit.ServePids("loom-e2e-pids-"); name != "" {
		if err := os.WriteFile(filepath.Join(rootDir, "pid-server"), []byte(name), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}

	bin := filepath.Join(rootDir, "bin")
	gatewayBin = filepath.Join(bin, "gateway")
	fakeloomBin = filepath.Join(bin, "fakeloom")
	for pkg, out := range map[string]string{"./cmd/gateway": gatewayBin, "./tests/fakeloom": fakeloomBin} {
		args := []string{"build", "-o", out}
		if testkit.RaceEnabled && pkg == "./cmd/gateway" {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = moduleDir
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: go build %s: %v\n%s", pkg, err, b)
			return 1
		}
	}
	if err := loadContract(filepath.Join(moduleDir, "api", "openapi.yaml")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: contract:", err)
		return 1
	}

	code := m.Run()
	if leaks := spanLeaks(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: planted markers reached exported spans:\n%s\n", strings.Join(leaks, "\n"))
		code = max(code, 1)
	}
	if leaks := findLeaks(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: planted markers reached %d responses:\n%s\n", len(leaks), strings.Join(leaks, "\n"))
		if code == 0 {
			code = 1
		}
	} else {
		n := exchangeCount()
		if code == 0 && n > 0 {
			fmt.Fprintf(os.Stderr, "e2e: no marker in %d responses\n", n)
		}
	}
	return code
}

// exchange is one response the suite received, kept for the leak check.
type exchange struct {
	method, path string
	status       int
	header       http.Header
	body         []byte
}

var exchanges struct {
	sync.Mutex
	list []exchange
}

func remember(req *http.Request, resp *http.Response, body []byte) {
	exchanges.Lock()
	defer exchanges.Unlock()
	exchanges.list = append(exchanges.list, exchange{req.Method, req.URL.Path, resp.StatusCode, resp.Header.Clone(), body})
}

func exchangeCount() int {
	exchanges.Lock()
	defer exchanges.Unlock()
	return len(exchanges.list)
}

// callLog is the host API's call log route.
var callLog = regexp.MustCompile(`^/host/v1/runs/[^/]+/calls$`)

// hostOnly is e's body less what only the host may read: of a call log
// page of the host API, each failure's stderrTail and argv (loom's
// stderr, and its argv with the cliPath and the input's values). The
// rest of the record is searched like any other answer.
func hostOnly(e exchange) []byte {
	if e.method != http.MethodGet || e.status != http.StatusOK || !callLog.MatchString(e.path) {
		return e.body
	}
	var page map[string]any
	if json.Unmarshal(e.body, &page) != nil {
		return e.body
	}
	calls, _ := page["calls"].([]any)
	for _, c := range calls {
		if rec, ok := c.(map[string]any); ok {
			if f, ok := rec["failure"].(map[string]any); ok {
				delete(f, "stderrTail")
				delete(f, "argv")
			}
		}
	}
	out, err := json.Marshal(page)
	if err != nil {
		return e.body
	}
	return out
}

// findLeaks names every response whose body or headers hold a marker.
func findLeaks() []string {
	exchanges.Lock()
	defer exchanges.Unlock()
	var out []string
	for _, e := range exchanges.list {
		var hdr bytes.Buffer
		keys := make([]string, 0, len(e.header))
		for k := range e.header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&hdr, "%s: %s\n", k, strings.Join(e.header[k], ", "))
		}
		body := hostOnly(e)
		for _, mk := range markers {
			if bytes.Contains(body, []byte(mk)) || bytes.Contains(hdr.Bytes(), []byte(mk)) {
				out = append(out, fmt.Sprintf("  %s %s -> %d carries %s", e.method, e.path, e.status, mk))
			}
		}
	}
	return out
}
