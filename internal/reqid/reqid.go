// Package reqid gives every request of both listeners a random id,
// carried in the X-Request-Id header, every problem and every log line. A
// request the operator console forwards to the agent listener (its
// try-a-tool proxy) keeps the id of the console's own request, so that one
// id finds both request records, the audit record and the problem: the
// agent listener takes an id from a request only when it carries a MAC made
// with this process's random key, which an agent never sees, so an agent
// cannot choose its request id.
package reqid

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/loom-gateway/gateway/internal/reqid/reqctx"
)

// Header is the response header that carries a request's id.
const Header = "X-Request-Id"

// ForwardedHeader carries "<request id>.<hex HMAC-SHA256 of it>".
const ForwardedHeader = "X-Loom-Forwarded-Request-Id"

// forwardKey is this process's key for forwarded request ids.
var forwardKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

// FromContext returns the request id of ctx ("" outside a gateway request).
func FromContext(ctx context.Context) string { return reqctx.FromContext(ctx) }

// NewContext returns ctx carrying id as its request id.
func NewContext(ctx context.Context, id string) context.Context {
	return reqctx.NewContext(ctx, id)
}

// Middleware gives every request a fresh random id (or the console's, when
// forwarded with this process's MAC) and returns it in Header.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := forwarded(r)
		if !ok {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(Header, id)
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
	})
}

// Forward sets on h the header that makes this process's agent listener
// take id as the request id of the forwarded request. An empty or
// malformed id sets nothing.
func Forward(h http.Header, id string) {
	if !valid(id) {
		return
	}
	h.Set(ForwardedHeader, id+"."+mac(id))
}

func mac(id string) string {
	m := hmac.New(sha256.New, forwardKey)
	_, _ = m.Write([]byte("loom-gateway forwarded request id\x00"))
	_, _ = m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// forwarded returns the request id r carries in ForwardedHeader when its
// MAC is this process's.
func forwarded(r *http.Request) (string, bool) {
	v := r.Header.Get(ForwardedHeader)
	if v == "" {
		return "", false
	}
	id, m, ok := strings.Cut(v, ".")
	if !ok || !valid(id) || !hmac.Equal([]byte(m), []byte(mac(id))) {
		return "", false
	}
	return id, true
}

// valid reports whether id has the shape Middleware gives ids: lower-case
// hex, at most 64 characters.
func valid(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
