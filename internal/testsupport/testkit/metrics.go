package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Matching returns the metrics of family name whose labels include the
// name/value pairs kv.
func Matching(t testing.TB, g prometheus.Gatherer, name string, kv ...string) []*dto.Metric {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []*dto.Metric
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if labels[kv[i]] != kv[i+1] {
					continue metrics
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// MetricValue is the value of the one counter or gauge of family name
// with labels kv; 0 when there is none.
func MetricValue(t testing.TB, g prometheus.Gatherer, name string, kv ...string) float64 {
	t.Helper()
	ms := Matching(t, g, name, kv...)
	if len(ms) > 1 {
		t.Fatalf("%s%v matches %d series", name, kv, len(ms))
	}
	if len(ms) == 0 {
		return 0
	}
	return value(ms[0])
}

// MetricSum adds up every series of family name.
func MetricSum(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	var sum float64
	for _, m := range Matching(t, g, name) {
		sum += value(m)
	}
	return sum
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// HistogramCount is the observation count of the histogram of family
// name with labels kv; 0 when there is none.
func HistogramCount(t testing.TB, g prometheus.Gatherer, name string, kv ...string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range Matching(t, g, name, kv...) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}
