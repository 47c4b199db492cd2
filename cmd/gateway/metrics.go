package main

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/loom-gateway/gateway/internal/handlers"
)

// instrument builds the gateway's metrics on a registry of their own, with
// the Go runtime and process collectors, hands them to d (whose Runner and
// Store must be set; the store is wrapped to count its failures) and
// returns what mounts GET /metrics on the host router, behind the host
// token. The agent listener never serves it.
func instrument(d *handlers.Deps, log *slog.Logger) (func(chi.Router), error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	m, err := handlers.NewMetrics(reg, d.Runner, d.Store)
	if err != nil {
		return nil, err
	}
	d.Metrics, d.Store = m, m.InstrumentStore(d.Store)
	h := handlers.MetricsHandler(reg, log)
	return func(r chi.Router) { r.Method(http.MethodGet, "/metrics", h) }, nil
}
