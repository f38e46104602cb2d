package main

import (
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestHistQuantile: quantiles interpolate within the bucket that holds
// them, as Prometheus's histogram_quantile does, over what a histogram
// observed since an earlier reading.
func TestHistQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1, math.Inf(1)}
	earlier := hist{count: 10, bounds: bounds, cum: []float64{10, 10, 10, 10}} // 10 fast ones before
	now := hist{count: 110, bounds: bounds, cum: []float64{10, 60, 110, 110}}  // then 50 in (1, 10] ms, 50 in (10, 100] ms
	d := now.since(earlier)
	for _, c := range []struct {
		name string
		h    hist
		q    float64
		want float64
	}{
		{"median at the first bucket's top", d, 0.5, 0.01},
		{"a quarter: halfway in (1, 10] ms", d, 0.25, 0.0055},
		{"p99 in (10, 100] ms", d, 0.99, 0.01 + 0.09*(99.0-50)/50},
		{"without the earlier reading", now, 0.05, 0.00055},
		{"above the last finite bound", hist{count: 2, bounds: []float64{0.001}, cum: []float64{1}}, 0.99, math.Inf(1)},
	} {
		got, ok := c.h.quantile(c.q)
		if !ok || math.Abs(got-c.want) > 1e-9 && !(math.IsInf(got, 1) && math.IsInf(c.want, 1)) {
			t.Errorf("%s: quantile(%v) = %v, %v; want %v", c.name, c.q, got, ok, c.want)
		}
	}
	if _, ok := (hist{}).quantile(0.5); ok {
		t.Error("a histogram without observations has a quantile")
	}
}

// TestStageCells: a build without the metrics shows dashes; one with them
// shows writes per message and each stage's quantiles.
func TestStageCells(t *testing.T) {
	bounds := []float64{0.001, 0.01}
	before := map[string]hist{}
	after := map[string]hist{}
	for _, name := range stageMetrics {
		before[name] = hist{count: 0, bounds: bounds, cum: []float64{0, 0}}
		after[name] = hist{count: 20, bounds: bounds, cum: []float64{10, 20}}
	}
	got := strings.Join(stageCells(before, after, 10), " | ")
	if want := "2.00 | 1.00 ms | 9.82 ms | 1.00 ms | 9.82 ms | 1.00 ms | 9.82 ms"; got != want {
		t.Errorf("cells = %q, want %q", got, want)
	}
	if got := strings.Join(stageCells(nil, nil, 10), " | "); got != "– | – | – | – | – | – | –" {
		t.Errorf("cells of a build without the metrics = %q", got)
	}
}

// TestFoldedCell: the share of the messages counted between two readings
// that folded, then the two most frequent reasons of the others.
func TestFoldedCell(t *testing.T) {
	for _, c := range []struct {
		name          string
		before, after map[string]float64
		want          string
	}{
		{"an older build, without the metric", map[string]float64{}, map[string]float64{}, "–"},
		{"nothing counted in between", map[string]float64{"folded": 5}, map[string]float64{"folded": 5}, "–"},
		{"all folded", map[string]float64{"folded": 10}, map[string]float64{"folded": 110}, "100 %"},
		{"the two first reasons", map[string]float64{"folded": 100, "slow": 50},
			map[string]float64{"folded": 190, "slow": 55, "busy": 4, "lease": 1}, "90 % (slow 5 %, busy 4 %)"},
		{"none folded, ties by name", map[string]float64{},
			map[string]float64{"folded": 0, "slow": 2, "busy": 2}, "0 % (busy 50 %, slow 50 %)"},
	} {
		if got := foldedCell(c.before, c.after); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestTransactionsCell: the group commit's transactions per accepted
// message between two scrapes, a dash for a build without the metric.
func TestTransactionsCell(t *testing.T) {
	families := func(v float64) map[string]*dto.MetricFamily {
		typ := dto.MetricType_COUNTER
		return map[string]*dto.MetricFamily{transactionsMetric: {
			Type:   &typ,
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: &v}}},
		}}
	}
	for _, c := range []struct {
		name          string
		before, after map[string]*dto.MetricFamily
		accepted      int
		want          string
	}{
		{"batches of four", families(10), families(260), 1000, "0.25"},
		{"an older build", map[string]*dto.MetricFamily{}, map[string]*dto.MetricFamily{}, 1000, "–"},
		{"nothing accepted", families(10), families(10), 0, "–"},
	} {
		if got := transactionsCell(c.before, c.after, c.accepted); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
