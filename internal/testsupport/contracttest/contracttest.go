// Package contracttest checks an answer of the gateway against
// api/openapi.yaml for the tests that call it (the router fuzzer, the
// end-to-end suite).
package contracttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// ValidateResponse checks an answer to req against the operation of the
// contract that router finds for it: its status must be declared, and its
// content type and body must match. route is nil, and err the router's,
// when the contract has no such operation. The body of /openapi.yaml (YAML
// text declared as a string, which a YAML decoder would read as a document)
// is not checked. A HEAD answer is checked as the GET it mirrors (the
// contract lists GET only): its status, headers and Content-Type, not its
// body, which net/http drops.
func ValidateResponse(router routers.Router, req *http.Request, status int, header http.Header, body []byte) (route *routers.Route, err error) {
	head := req.Method == http.MethodHead
	if head {
		req = req.Clone(context.Background())
		req.Method = http.MethodGet
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return nil, err
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   route.Path == "/openapi.yaml" || head,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil || !head {
		return route, err
	}
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if ct := header.Get("Content-Type"); resp != nil && resp.Value != nil && len(resp.Value.Content) > 0 && resp.Value.Content.Get(ct) == nil {
		return route, fmt.Errorf("HEAD answer %d with Content-Type %q, which the GET does not declare", status, ct)
	}
	return route, nil
}
