package main

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/loom-gateway/gateway/internal/metrics"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/version"
)

// instrument builds the gateway's metrics on a registry of their own, with
// the Go runtime and process collectors, hands them to d (whose Runner
// must be set; its Store becomes st, wrapped to count its failures) and
// returns what mounts GET /metrics on the host router, behind the host
// token. The agent listener never serves it. conns are the listeners'
// connection limits, by listener name.
func instrument(d *deps, st store.Store, log *slog.Logger, conns map[string]*connLimit) (func(chi.Router), error) {
	reg := prometheus.NewRegistry()
	for listener, l := range conns {
		labels := prometheus.Labels{"listener": listener}
		for _, c := range []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "loom_gateway_connections_open", Help: "Connections open on the listener (at most --max-connections).", ConstLabels: labels},
				func() float64 { return float64(l.Open()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "loom_gateway_connections_at_cap_total", Help: "Connections accepted while the listener was at --max-connections (each first closes an idle connection, or waits).", ConstLabels: labels},
				func() float64 { return float64(l.waited.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "loom_gateway_connections_idle_closed_total", Help: "Idle keep-alive connections closed to make room under --max-connections.", ConstLabels: labels},
				func() float64 { return float64(l.evicted.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "loom_gateway_connections_silent_closed_total", Help: "New connections closed to make room under --max-connections after a second without a complete request.", ConstLabels: labels},
				func() float64 { return float64(l.hushed.Load()) }),
		} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	v := version.Get()
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "loom_gateway_build_info",
		Help:        "Always 1; the labels name the build: the gateway's version, its VCS revision and the Go toolchain.",
		ConstLabels: prometheus.Labels{"version": v.String(), "revision": v.Revision, "goversion": v.GoVersion},
	}, func() float64 { return 1 })); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	m, err := metrics.New(reg, d.Runner, st)
	if err != nil {
		return nil, err
	}
	d.Metrics, d.Store = m, m.Store(st)
	h := metrics.Handler(reg, log)
	return func(r chi.Router) { r.Method(http.MethodGet, "/metrics", h) }, nil
}
