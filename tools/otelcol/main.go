// Command otelcol is an OpenTelemetry Collector with the OTLP receiver and
// the file exporter, built from the collector's Go modules at one release
// (go.mod) in the shape the OpenTelemetry Collector Builder generates. The
// gateway's tests start it through scripts/otelcol.sh and read the spans
// it writes to a file.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	info := component.BuildInfo{
		Command:     "otelcol",
		Description: "OpenTelemetry Collector for the loom-gateway tests (OTLP in, file out)",
		Version:     "0.165.0",
	}
	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
				},
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}
}
