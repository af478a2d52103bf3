package gc

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gatherGauge reads one sample (gauge or counter) of a fresh scrape of
// g's collectors; labels are name/value pairs. -1 when absent.
func gatherGauge(t testing.TB, g *GC, name string, labels ...string) float64 {
	t.Helper()
	g.metrics.queue.refresh()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range g.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue metric
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
