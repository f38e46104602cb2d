package main

import (
	"fmt"
	"slices"
	"strings"
)

// pairedRatios is a's figure over b's, round by round: each round's two
// runs are next to each other, so a machine whose other tenants come and
// go over a run of several minutes moves both sides of a ratio, where it
// moves a ratio of medians taken from different rounds (the one printed
// first).
func pairedRatios(a, b []closedResult, fa, fb func(closedResult) float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if d := fb(b[i]); d > 0 {
			out = append(out, fa(a[i])/d)
		}
	}
	return out
}

// pairedCell formats paired ratios, then their median.
func pairedCell(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	each := make([]string, len(v))
	for i, r := range v {
		each[i] = fmt.Sprintf("%.2f×", r)
	}
	sorted := slices.Sorted(slices.Values(v))
	return fmt.Sprintf("%s (median %.2f×)", strings.Join(each, " "), sorted[len(sorted)/2])
}
