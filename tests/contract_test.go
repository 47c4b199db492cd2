package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/loom-gateway/gateway/internal/testsupport/contracttest"
)

var (
	contract      *openapi3.T
	contractRoute routers.Router
)

// loadContract parses api/openapi.yaml for response validation. The
// servers are dropped so that routes match on any host and port.
func loadContract(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	specBytes = b
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return err
	}
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return err
	}
	contract, contractRoute = doc, r
	return nil
}

// outsideContract lists the paths served beside the contract on purpose
// (the console, the host's /metrics); their successful answers are not
// validated.
func outsideContract(path string) bool {
	return path == "/console" || strings.HasPrefix(path, "/console/") || path == "/metrics"
}

// sharedTransport carries every request of the suite.
var sharedTransport = &http.Transport{
	MaxIdleConnsPerHost: 32,
	IdleConnTimeout:     30 * time.Second,
	DisableCompression:  true,
}

// checkedTransport validates every response against the contract before
// the caller sees it, and remembers it for the leak check. A violation
// fails the test that made the request.
type checkedTransport struct{ t testing.TB }

func (c checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := sharedTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	remember(req, resp, body)
	if err := checkResponse(req, resp, body); err != nil {
		c.t.Errorf("%s %s answered %d, which api/openapi.yaml does not allow: %v\nbody: %.600s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	return resp, nil
}

// httpClient returns an *http.Client whose responses are all checked
// against the contract on behalf of t.
func httpClient(t testing.TB) *http.Client {
	return &http.Client{
		Transport: checkedTransport{t},
		Timeout:   60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// checkResponse validates one response: routes of the contract with
// openapi3filter.ValidateResponse (undeclared status, content type and
// body shape all fail); a route the contract does not have must answer a
// Problem. Every error answer must also be a consistent problem.
func checkResponse(req *http.Request, resp *http.Response, body []byte) error {
	route, err := contracttest.ValidateResponse(contractRoute, req, resp.StatusCode, resp.Header, body)
	switch {
	case route != nil:
		if err != nil {
			return err
		}
	case errors.Is(err, routers.ErrPathNotFound), errors.Is(err, routers.ErrMethodNotAllowed):
		if resp.StatusCode < 400 && outsideContract(req.URL.Path) {
			return nil
		}
		if resp.StatusCode < 400 {
			return fmt.Errorf("route outside the contract answered %d", resp.StatusCode)
		}
	default:
		return fmt.Errorf("finding the route: %w", err)
	}
	if resp.StatusCode == http.StatusNoContent && len(body) > 0 {
		return fmt.Errorf("204 with a body")
	}
	if req.Method == http.MethodHead && len(body) > 0 {
		return fmt.Errorf("HEAD answer with a body")
	}
	if resp.StatusCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
		return fmt.Errorf("405 without Allow (RFC 9110 15.5.6)")
	}
	// An error answer that the operation does not declare by its status
	// (it falls to default), or of a route outside the contract, is a
	// problem; /readyz declares its own 503.
	if resp.StatusCode >= 400 && (route == nil || route.Operation.Responses.Status(resp.StatusCode) == nil) {
		if req.Method == http.MethodHead { // no body to read: the header says problem
			if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/problem+json" {
				return fmt.Errorf("HEAD error answer with Content-Type %q, want application/problem+json", resp.Header.Get("Content-Type"))
			}
			return nil
		}
		return checkProblem(resp, body)
	}
	return nil
}

// checkProblem requires an RFC 9457 problem of the contract's Problem
// schema whose status is the HTTP status and whose type names its code.
func checkProblem(resp *http.Response, body []byte) error {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/problem+json" {
		return fmt.Errorf("error answer with Content-Type %q, want application/problem+json", resp.Header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("problem is not JSON: %v", err)
	}
	schema := contract.Components.Schemas["Problem"].Value
	if err := schema.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("problem does not match the Problem schema: %v", err)
	}
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Status != resp.StatusCode {
		return fmt.Errorf("problem status %d in a %d answer", p.Status, resp.StatusCode)
	}
	if !strings.HasSuffix(p.Type, "/"+p.Code) {
		return fmt.Errorf("problem type %q does not name code %q", p.Type, p.Code)
	}
	return nil
}

// ctx returns a context for one request of t. It is not t.Context(),
// which is cancelled before cleanups run, and cleanups make requests too.
func ctx(testing.TB) context.Context { return context.Background() }
