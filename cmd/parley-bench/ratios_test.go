package main

import (
	"testing"
	"time"
)

func TestPairedRatios(t *testing.T) {
	res := func(oks ...int) []closedResult {
		var out []closedResult
		for _, ok := range oks {
			out = append(out, closedResult{ok: ok, elapsed: time.Second})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		a, b []closedResult
		want string
	}{
		// The machine slows down from round to round: the paired ratios
		// stay at 2, where the medians' ratio would be 3,000 / 1,000.
		{"paired", res(4000, 3000, 2000), res(2000, 1500, 1000), "2.00× 2.00× 2.00× (median 2.00×)"},
		{"median of three", res(300, 100, 200), res(100, 100, 100), "3.00× 1.00× 2.00× (median 2.00×)"},
		{"a round without b's figure is left out", res(300, 100), res(100, 0), "3.00× (median 3.00×)"},
		{"fewer rounds on one side", res(300, 200, 100), res(100, 100), "3.00× 2.00× (median 3.00×)"},
		{"none", nil, res(100), "–"},
	} {
		got := pairedCell(pairedRatios(tc.a, tc.b, closedResult.rate, closedResult.rate))
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
