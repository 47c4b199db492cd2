package handlers

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/mcpface"
	"github.com/loom-gateway/gateway/internal/tooldef"
	"github.com/loom-gateway/gateway/internal/validate"
)

// Config is what New builds the faces from.
type Config struct {
	// Core is the core's configuration (gateway.New).
	Core gateway.Config
	// HostToken, when set, is required on the host listener.
	HostToken string
	// MaxRequestBytes caps request bodies; 0 means 1 MiB.
	MaxRequestBytes int64
	// Requests, when set, counts the requests both listeners answer.
	Requests Requests
	// AllowOrigins and AllowedHosts are the agent listener's Origin and
	// Host rules (Deps).
	AllowOrigins []string
	AllowedHosts []string
	// HostExtra, when set, mounts what the host listener serves beside
	// the contract, behind the host token (the console, /metrics).
	HostExtra func(chi.Router)
	// Version is the MCP face's server version.
	Version string
	// SDKOnly turns the MCP face's direct path off (mcpface.Config).
	SDKOnly bool
	// IFC is the MCP face's _meta.ifc projection (mcpface.Config).
	IFC mcpface.IFCLabels
}

// Faces are the core and both listeners' handlers over it.
type Faces struct {
	Core *gateway.Service
	// Agent serves the agent listener: the REST face's agent operations
	// and the MCP face at /v1/runs/{runId}/mcp.
	Agent http.Handler
	// Host serves the host listener.
	Host http.Handler
}

// New builds the core over cfg.Core and both listeners' routers over it:
// the REST face (Agent, Host) and the MCP face (package mcpface), which
// share one validator of the contract's agent part and the tools'
// definitions. The binary, cmd/loadgen and the tests that serve the
// listeners build them here, so the wiring is written once. Its errors
// are the contract's (it is embedded, so only a broken build has one).
func New(cfg Config) (*Faces, error) {
	// A validator writes to the spec it is made from, so each listener's
	// is made from a spec of its own.
	agentSpec, err := LoadSpec("agent")
	if err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	hostSpec, err := LoadSpec("host")
	if err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	defs, err := tooldef.Contract()
	if err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	agentCheck := validate.New(agentSpec)
	core := gateway.New(cfg.Core)
	d := &Deps{
		Core: core, Defs: defs, MaxRequestBytes: cfg.MaxRequestBytes, HostToken: cfg.HostToken,
		Logger: cfg.Core.Logger, Requests: cfg.Requests,
		AllowOrigins: cfg.AllowOrigins, AllowedHosts: cfg.AllowedHosts,
	}
	d.MCP = mcpface.New(mcpface.Config{
		Core: core, Check: agentCheck, Defs: defs, Version: cfg.Version,
		MaxRequestBytes: d.MaxRequestBytes, SDKOnly: cfg.SDKOnly, IFC: cfg.IFC,
	})
	return &Faces{
		Core:  core,
		Agent: AgentRouter(d, NewAgent(d), agentCheck),
		Host:  HostRouter(d, NewHost(d), validate.New(hostSpec), cfg.HostExtra),
	}, nil
}
