// Package problemhttp writes a problem as an HTTP answer, for the faces:
// package problem itself links no HTTP package.
package problemhttp

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/loom-gateway/gateway/internal/problem"
)

// Write answers p as application/problem+json with the headers its status
// asks for: Retry-After, WWW-Authenticate for a 401, Allow for a 405,
// Connection: close for a 408.
func Write(w http.ResponseWriter, p problem.Problem) {
	body := p.JSON()
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	switch p.Status {
	case http.StatusUnauthorized:
		if h.Get("WWW-Authenticate") == "" { // the face may have said more (RFC 6750 3.1)
			h.Set("WWW-Authenticate", "Bearer") // RFC 9110 11.6.1: a 401 names its scheme
		}
	case http.StatusMethodNotAllowed:
		h.Set("Allow", strings.Join(p.Allow, ", ")) // RFC 9110 15.5.6: a 405 lists the route's methods
	case http.StatusRequestTimeout:
		h.Set("Connection", "close") // RFC 9110 15.5.9: the body's remains cannot be read
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
