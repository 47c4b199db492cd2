package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/validate"
)

// bodyKey holds, in a request's context, the body jsonBodies read: the
// validator checks it where it is, without reading it again.
type bodyKey struct{}

// runKey is the context key of the run the agent's token opened.
type runKey struct{}

// runFrom returns the run the agent's token opened.
func runFrom(ctx context.Context) (store.Run, bool) {
	r, ok := ctx.Value(runKey{}).(store.Run)
	return r, ok
}

// claimKey is the context key of a tool call's claim to a run
// (agentClaims), checked by the call itself.
type claimKey struct{}

// pendingClaim is a request's claim to a run, not yet checked. The core
// checks it as the call takes its output number (gateway.CallClaim);
// any answer written before that checks it first (settle).
type pendingClaim struct {
	claim   gateway.Claim
	core    *gateway.Service
	checked bool
}

// claimFrom returns the request's pending claim, if it has one.
func claimFrom(ctx context.Context) (*pendingClaim, bool) {
	p, ok := ctx.Value(claimKey{}).(*pendingClaim)
	return p, ok
}

// settle is the error to answer in place of err: the claim's own when it
// opens no run (what agentAuth would have answered first), else err.
// It checks the claim at most once; a claim the core has taken in hand
// (take) is not checked again.
func (p *pendingClaim) settle(ctx context.Context, err error) error {
	if p.checked {
		return err
	}
	p.checked = true
	if cerr := p.core.CheckAdmit(ctx, p.claim); cerr != nil {
		return cerr
	}
	return err
}

// take hands the claim to the core, which checks it and classifies every
// error it returns.
func (p *pendingClaim) take() gateway.Claim {
	p.checked = true
	return p.claim
}

// recoverer turns a panic into an internal_error problem and logs it.
func recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.ErrorContext(r.Context(), "panic", "requestId", reqid.FromContext(r.Context()), "panic", v)
					writeProblem(w, r, nil, errors.New("handlers: panic"))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// jsonBodies refuses, before validation, a Content-Type other than JSON
// (415, checked first, whatever the body), then reads the body up to max
// bytes and refuses one that is too large (413), that does not arrive
// before the server's read deadline (408), that has content but no
// Content-Type (415), or that is not exactly one JSON value without
// duplicate keys (400). The checked body is handed on in memory.
func jsonBodies(max int64, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete {
				next.ServeHTTP(w, r)
				return
			}
			// The media type first, whatever the body.
			ct := r.Header.Get("Content-Type")
			if ct != "" && !jsonMediaType(ct) {
				writeProblem(w, r, log, errUnsupportedMedia)
				return
			}
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
			if err != nil {
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					writeProblem(w, r, log, errRequestTooLarge)
					return
				}
				if timedOut(err) {
					writeProblem(w, r, log, errRequestTimeout)
					return
				}
				if clientGone(r, err) {
					writeProblem(w, r, log, errCancelled)
					return
				}
				// A client still there sent a body that does not frame
				// (a malformed chunk): a bad request, not a cancellation.
				writeProblem(w, r, log, problem.Invalid("", problem.NotJson, "The body did not arrive as well-formed HTTP (a malformed chunk)."))
				return
			}
			if len(bytes.TrimSpace(body)) > 0 {
				if ct == "" {
					writeProblem(w, r, log, errUnsupportedMedia)
					return
				}
				if err := validate.JSON(body); err != nil {
					writeProblem(w, r, log, err)
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
		})
	}
}

// jsonMediaType reports whether a Content-Type names JSON the gateway can
// read: application/json, with no charset or charset=utf-8 (RFC 8259 8.1:
// JSON is UTF-8; a body declared in another charset would be misread).
// Other parameters are ignored; when the parameters do not parse, each
// charset among them is still read, so a charset other than UTF-8 is
// refused however the rest reads.
func jsonMediaType(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	if mt != "application/json" {
		return false
	}
	if err == nil {
		cs, ok := params["charset"]
		return !ok || strings.EqualFold(cs, "utf-8")
	}
	_, rest, _ := strings.Cut(ct, ";")
	for _, p := range strings.Split(rest, ";") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "charset") {
			continue
		}
		if !strings.EqualFold(strings.Trim(strings.TrimSpace(v), `"`), "utf-8") {
			return false
		}
	}
	return true
}

// clientGone reports whether a body read failed because the client went
// away (the request's context ended, the connection closed or was reset
// mid-body) rather than because what it sent does not frame.
func clientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// timedOut reports whether a body read failed at the server's read
// deadline (--read-timeout) rather than with the client gone.
func timedOut(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// bearer returns the bearer token of the request.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(prefix):])
	return tok, tok != ""
}

// runIDOfPath returns the {runId} segment of an agent path /v1/runs/{runId}/...
func runIDOfPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/v1/runs/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// agentAuth opens the run named by the path with the bearer token
// (gateway.Service.Authenticate): a missing token, or one that opens no
// run, answers 401 whatever the path; a token of another run answers 404,
// so run ids cannot be probed. A valid token on a path outside
// /v1/runs/{runId}/ goes on with no run (to the route_not_found or
// method_not_allowed answer).
func agentAuth(core *gateway.Service, log *slog.Logger) func(http.Handler) http.Handler {
	return agentAuthEnded(core, log, nil, true)
}

// agentClaims is agentAuth for the contract's routes, except that a tool
// call or a describe_handle (POST /v1/runs/{runId}/<tool>) goes on with
// its claim to the run unchecked: the core checks it in the same store
// step that takes the output number, so such a call reads the store once
// before its work. Any answer written before then checks the claim first
// (writeProblem), so a token that opens no run answers as agentAuth
// answers it, whatever else is wrong with the request.
func agentClaims(core *gateway.Service, log *slog.Logger) func(http.Handler) http.Handler {
	auth := agentAuth(core, log)
	return func(next http.Handler) http.Handler {
		authed := auth(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, ok := bearer(r)
			id := runIDOfPath(r.URL.EscapedPath())
			if !ok || id == "" || r.Method != http.MethodPost || !claimable(r.URL.EscapedPath(), id) {
				authed.ServeHTTP(w, r)
				return
			}
			p := &pendingClaim{claim: gateway.ClaimOf(id, tok), core: core}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimKey{}, p)))
		})
	}
}

// claimable reports whether path is /v1/runs/{id}/<tool> for a loom tool
// or describe_handle.
func claimable(path, id string) bool {
	rest := strings.TrimPrefix(path, "/v1/runs/"+id+"/")
	if rest == "describe_handle" {
		return true
	}
	for _, t := range loom.Tools {
		if rest == string(t) {
			return true
		}
	}
	return false
}

// agentAuthEnded is agentAuth whose run_ended answer is ended's, when
// ended is not nil. A 401 names the scheme in WWW-Authenticate, with
// error="invalid_token" when a token was sent (RFC 6750 3.1). With spend,
// opening the run takes one call from its budget (gateway.Service.Admit:
// every agent request counts against the run's rate, in the same store
// step); the MCP face spends its requests itself (a tools/call of a tool
// spends as the call takes its output number).
func agentAuthEnded(core *gateway.Service, log *slog.Logger, ended http.HandlerFunc, spend bool) func(http.Handler) http.Handler {
	open := core.Authenticate
	if spend {
		open = core.Admit
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, ok := bearer(r)
			if !ok {
				writeProblem(w, r, log, errUnauthorized)
				return
			}
			// Escaped, as the router reads it: a percent-encoded id is
			// no run's id, whatever it decodes to.
			id := runIDOfPath(r.URL.EscapedPath())
			run, err := open(r.Context(), id, tok)
			switch {
			case err != nil && ended != nil && gateway.CodeOf(err) == problem.RunEnded:
				ended(w, r)
			case err != nil:
				if gateway.CodeOf(err) == problem.Unauthorized {
					w.Header().Set("WWW-Authenticate", invalidToken)
				}
				writeProblem(w, r, log, err)
			case id == "":
				next.ServeHTTP(w, r)
			default:
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runKey{}, run)))
			}
		})
	}
}

// invalidToken is the WWW-Authenticate of a 401 to a request that sent
// a token that opens nothing (RFC 6750 3.1); without a token it is plain
// "Bearer".
const invalidToken = `Bearer error="invalid_token"`

// hostAuth requires the host token when one is set (a TCP host listener):
// as X-Host-Token when that header is present (the console's agent proxy,
// whose Authorization carries a run token), else as the bearer token.
func hostAuth(token string, log *slog.Logger) func(http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return func(next http.Handler) http.Handler {
		if token == "" {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, ok := bearer(r)
			if _, set := r.Header["X-Host-Token"]; set {
				tok = strings.TrimSpace(r.Header.Get("X-Host-Token"))
				ok = tok != ""
			}
			got := sha256.Sum256([]byte(tok))
			if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				if ok {
					w.Header().Set("WWW-Authenticate", invalidToken)
				}
				writeProblem(w, r, log, errUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// securityHeaders marks every response as not cacheable, not sniffable
// and not frameable.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
