package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Where a reply's time went, from a Parley build's own /metrics: the
// chat pipeline's histograms, read before and after each open-loop rate.
// A build without them (older than the metrics) shows dashes.

// stageMetrics are the histograms of the stages table, in its order.
var stageMetrics = []string{"parley_commit_duration_seconds", "parley_turn_wait_seconds", "parley_turn_duration_seconds"}

// hist is a cumulative histogram: counts at or below each bound.
type hist struct {
	count  float64
	bounds []float64
	cum    []float64
}

// scrape reads base's /metrics; nil when it serves none (the bare
// handler, Botkit) or cannot be read.
func scrape(base string) map[string]*dto.MetricFamily {
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return nil
	}
	return families
}

// messagesMetric counts users' messages by how they committed: folded
// with the bot's answer, or why alone.
const messagesMetric = "parley_user_messages_total"

// countsOf reads the values of a counter of families (scrape) by the
// value of its one label; empty when there is none (an older build).
func countsOf(families map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := families[name]
	if f == nil || f.GetType() != dto.MetricType_COUNTER {
		return out
	}
	for _, m := range f.GetMetric() {
		if l := m.GetLabel(); len(l) == 1 {
			out[l[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// transactionsMetric counts the transactions of a build's group commit
// (its batches), where parley_commits_total counts its writes.
const transactionsMetric = "parley_commit_transactions_total"

// counterOf reads a counter without labels of families (scrape); false
// when there is none (an older build).
func counterOf(families map[string]*dto.MetricFamily, name string) (float64, bool) {
	f := families[name]
	if f == nil || f.GetType() != dto.MetricType_COUNTER || len(f.GetMetric()) != 1 {
		return 0, false
	}
	return f.GetMetric()[0].GetCounter().GetValue(), true
}

// transactionsCell is the group commit's transactions per accepted
// message between two scrapes: below the writes per message as writes
// share transactions. A dash for a build without the metric.
func transactionsCell(before, after map[string]*dto.MetricFamily, accepted int) string {
	b, ok1 := counterOf(before, transactionsMetric)
	a, ok2 := counterOf(after, transactionsMetric)
	if !ok1 || !ok2 || accepted == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", (a-b)/float64(accepted))
}

// foldedCell tells the share of the messages counted between before and
// after (countsOf messagesMetric) that folded, then the two most
// frequent reasons of the others: "91 % (slow 6 %, busy 3 %)". A dash
// when nothing was counted.
func foldedCell(before, after map[string]float64) string {
	type share struct {
		why string
		n   float64
	}
	var total float64
	var alone []share
	for why, v := range after {
		n := v - before[why]
		total += n
		if why != "folded" && n > 0 {
			alone = append(alone, share{why, n})
		}
	}
	if total <= 0 {
		return "–"
	}
	pc := func(n float64) string { return fmt.Sprintf("%.0f %%", 100*n/total) }
	cell := pc(after["folded"] - before["folded"])
	sort.Slice(alone, func(i, j int) bool {
		return alone[i].n > alone[j].n || alone[i].n == alone[j].n && alone[i].why < alone[j].why
	})
	var whys []string
	for _, a := range alone[:min(2, len(alone))] {
		whys = append(whys, a.why+" "+pc(a.n))
	}
	if len(whys) > 0 {
		cell += " (" + strings.Join(whys, ", ") + ")"
	}
	return cell
}

// histsOf reads the named histograms of families (scrape); missing ones
// (or those of an unreachable server) are left out.
func histsOf(families map[string]*dto.MetricFamily, names []string) map[string]hist {
	out := map[string]hist{}
	for _, name := range names {
		f := families[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != 1 {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		x := hist{count: float64(h.GetSampleCount())}
		for _, b := range h.GetBucket() {
			x.bounds = append(x.bounds, b.GetUpperBound())
			x.cum = append(x.cum, float64(b.GetCumulativeCount()))
		}
		out[name] = x
	}
	return out
}

// since is what h observed after prev (the same histogram read earlier).
func (h hist) since(prev hist) hist {
	if len(prev.cum) != len(h.cum) {
		return h
	}
	d := hist{count: h.count - prev.count, bounds: h.bounds, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		d.cum[i] = h.cum[i] - prev.cum[i]
	}
	return d
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linearly within the bucket that holds it. ok is false without
// observations; +Inf when it lies above the last bound.
func (h hist) quantile(q float64) (v float64, ok bool) {
	if h.count <= 0 {
		return 0, false
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, c := range h.cum {
		if c >= rank {
			if c == below {
				return h.bounds[i], true
			}
			return lower + (h.bounds[i]-lower)*(rank-below)/(c-below), true
		}
		lower, below = h.bounds[i], c
	}
	return math.Inf(1), true
}

// stageCells formats a rate's histograms (after minus before) as the
// stages table's cells: writes per accepted message, then p50 and p99 of
// each stage.
func stageCells(before, after map[string]hist, accepted int) []string {
	cells := []string{"–"}
	if c, ok := after[stageMetrics[0]]; ok && accepted > 0 {
		cells[0] = fmt.Sprintf("%.2f", c.since(before[stageMetrics[0]]).count/float64(accepted))
	}
	for _, name := range stageMetrics {
		h, ok := after[name]
		for _, q := range []float64{0.5, 0.99} {
			v, have := h.since(before[name]).quantile(q)
			switch {
			case !ok || !have:
				cells = append(cells, "–")
			case math.IsInf(v, 1):
				cells = append(cells, "> "+seconds(h.bounds[len(h.bounds)-1]))
			default:
				cells = append(cells, seconds(v))
			}
		}
	}
	return cells
}

func seconds(s float64) string { return fmt.Sprintf("%.2f ms", s*1000) }

// stagesHeader is the stages table's header.
func stagesHeader() string {
	return "| target | rate/s | writes per message | transactions per message | commit p50 | commit p99 | wait for a worker p50 | p99 | turn p50 | p99 | folded |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|"
}

func stagesRow(name string, rate int, tag string, cells []string) string {
	return fmt.Sprintf("| %s | %d%s | %s |", name, rate, tag, strings.Join(cells, " | "))
}
