package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/store"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	runKey
)

// requestID returns the id the request-id middleware gave the request.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// runFrom returns the run the agent's token opened.
func runFrom(ctx context.Context) (store.Run, bool) {
	r, ok := ctx.Value(runKey).(store.Run)
	return r, ok
}

// withRequestID gives every request a fresh random id, returned in the
// X-Request-Id header and carried by every problem and log line.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
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
					log.ErrorContext(r.Context(), "panic", "requestId", requestID(r.Context()), "panic", v)
					writeProblem(w, r, nil, errors.New("handlers: panic"))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// jsonBodies reads every request body up to max bytes and refuses, before
// validation, a body that is too large (413), not application/json (415),
// or not exactly one JSON value without duplicate keys (400). The checked
// body is handed on in memory.
func jsonBodies(max int64, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete {
				next.ServeHTTP(w, r)
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
			if err != nil {
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					writeProblem(w, r, log, errRequestTooLarge)
					return
				}
				writeProblem(w, r, log, errCancelled)
				return
			}
			if len(bytes.TrimSpace(body)) > 0 {
				mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				if mt != "application/json" {
					writeProblem(w, r, log, errUnsupportedMedia)
					return
				}
				if err := checkJSON(body); err != nil {
					writeProblem(w, r, log, err)
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

// checkJSON accepts exactly one JSON value with no duplicate object keys
// and nothing but white space after it. The error names where it failed as
// a JSON pointer, never the text.
func checkJSON(body []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(false))
	if _, err := dec.ReadValue(); err != nil {
		return &inputError{Pointer: pointerOf(err)}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return &inputError{Pointer: ""}
	}
	return nil
}

func pointerOf(err error) string {
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		return string(se.JSONPointer)
	}
	return ""
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

// agentAuth opens the run named by the path with the bearer token. A
// missing token, or one that opens no run, answers 401 whatever the path;
// a token of another run answers 404, so run ids cannot be probed.
func agentAuth(st RunStore, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, ok := bearer(r)
			if !ok {
				writeProblem(w, r, log, errUnauthorized)
				return
			}
			h := store.HashToken(tok)
			ctx := r.Context()
			id := runIDOfPath(r.URL.Path)
			if id != "" {
				run, err := st.Run(ctx, id)
				switch {
				case err == nil && subtle.ConstantTimeCompare(run.TokenHash[:], h[:]) == 1:
					next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, runKey, run)))
					return
				case err != nil && !errors.Is(err, store.ErrRunNotFound):
					writeProblem(w, r, log, err)
					return
				}
			}
			_, err := st.RunByToken(ctx, h)
			switch {
			case errors.Is(err, store.ErrRunNotFound):
				writeProblem(w, r, log, errUnauthorized)
			case err != nil:
				writeProblem(w, r, log, err)
			case id == "":
				writeProblem(w, r, log, errRouteNotFound)
			default:
				writeProblem(w, r, log, errRunNotFound)
			}
		})
	}
}

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
