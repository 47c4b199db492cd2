package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// A request the operator console forwards to the agent listener (the
// try-a-tool proxy, package web) keeps the request id of the console's
// own request, so that one id finds both request records, the audit
// record and the problem. The agent listener takes an id from a request
// only when it carries a MAC made with this process's random key: an
// agent, which never sees the key, cannot choose its request id.

// ForwardedIDHeader carries "<request id>.<hex HMAC-SHA256 of it>".
const ForwardedIDHeader = "X-Loom-Forwarded-Request-Id"

// forwardKey is this process's key for forwarded request ids.
var forwardKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

func forwardMAC(id string) string {
	m := hmac.New(sha256.New, forwardKey)
	_, _ = m.Write([]byte("loom-gateway forwarded request id\x00"))
	_, _ = m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// RequestID returns the request id the gateway gave the request of ctx
// ("" outside a gateway request).
func RequestID(ctx context.Context) string { return requestID(ctx) }

// ForwardRequestID sets on h the header that makes this process's agent
// listener take id as the request id of the forwarded request. An empty
// or malformed id sets nothing.
func ForwardRequestID(h http.Header, id string) {
	if !validForwardedID(id) {
		return
	}
	h.Set(ForwardedIDHeader, id+"."+forwardMAC(id))
}

// forwardedRequestID returns the request id r carries in
// ForwardedIDHeader when its MAC is this process's.
func forwardedRequestID(r *http.Request) (string, bool) {
	v := r.Header.Get(ForwardedIDHeader)
	if v == "" {
		return "", false
	}
	id, mac, ok := strings.Cut(v, ".")
	if !ok || !validForwardedID(id) || !hmac.Equal([]byte(mac), []byte(forwardMAC(id))) {
		return "", false
	}
	return id, true
}

// validForwardedID reports whether id has the shape withRequestID gives
// ids: lower-case hex, at most 64 characters.
func validForwardedID(id string) bool {
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
