// Package handlers is the REST face of the gateway: it implements the
// generated strict server interfaces of both listeners, api/agent (the
// eight tools, describe_handle, the result writer) and api/host (runs,
// calls, observations, handles, results), over the core (package
// gateway). Each method translates: the generated request object in, one
// core call, the response object or a problem out. Every error becomes a
// problem in one function, toProblem. New builds the core, both
// listeners' routers and the MCP face (package mcpface) in one place, for
// the binary, cmd/loadgen and the tests.
package handlers

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/tooldef"
)

// Deps is what both listeners' handlers share.
type Deps struct {
	// Core runs every use case.
	Core *gateway.Service
	// Defs are the tools' definitions (tooldef.Contract), the ones the
	// MCP face lists.
	Defs *tooldef.Set
	// MaxRequestBytes caps request bodies; 0 means 1 MiB.
	MaxRequestBytes int64
	// HostToken, when set, is required on the host listener.
	HostToken string
	Logger    *slog.Logger
	// Requests, when set, counts the requests both listeners answer
	// (package metrics).
	Requests Requests
	// MCP, when set, serves /v1/runs/{runId}/mcp for a run whose token
	// the listener checked (package mcpface).
	MCP RunHandler
	// AllowOrigins are the browser origins that may call the agent
	// listener (either face); a request with another Origin answers 403.
	AllowOrigins []string
	// AllowedHosts, when not empty, are the only Host names (without
	// port) the agent listener answers for; another answers 421.
	AllowedHosts []string
}

// Requests records one HTTP request a listener answered: its route
// pattern (never the path), its status and its duration.
type Requests interface {
	Request(listener, route string, status int, d time.Duration)
}

// RunHandler serves a request of an authenticated run.
type RunHandler interface {
	ServeRun(w http.ResponseWriter, r *http.Request, run store.Run)
}

func (d *Deps) maxRequestBytes() int64 {
	if d.MaxRequestBytes > 0 {
		return d.MaxRequestBytes
	}
	return 1 << 20
}

// logger returns the logger, discarding when none is set.
func (d *Deps) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// readyz answers 200 when the store answers and the loom executable is
// there; 503 naming the failing check otherwise.
func (d *Deps) readyz(w http.ResponseWriter, r *http.Request) {
	checks, ok := d.Core.Ready(r.Context())
	writeHealth(w, ok, checks)
}

func writeHealth(w http.ResponseWriter, ok bool, checks map[string]string) {
	status, code := "ok", http.StatusOK
	if !ok {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(map[string]any{"status": status, "checks": checks})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
