package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary be its own child servers, as the command
// is (`parley-bench child ...`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchRuns runs every phase briefly against this build on SQLite:
// the bot answers (a sustained rate above zero means every accepted
// message got its echo on the SSE stream).
func TestBenchRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	o, err := parse([]string{"-duration", "1s", "-conns", "2", "-convs", "4", "-rates", "20",
		"-rate-duration", "1s", "-listeners", "5"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run(o)
	if err != nil {
		t.Fatal(err)
	}
	if got["sqlite"]["parley"] <= 0 || got["sqlite"]["bare"] <= 0 {
		t.Fatalf("sustained rates = %v", got)
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bins int
		bad  bool
	}{
		{args: nil, bins: 1},
		{args: []string{"-bin", "old=/x/parley", "-bin", "full=self,PARLEY_SYNC=full"}, bins: 3},
		{args: []string{"-label", "", "-bin", "old=/x/parley"}, bins: 1},
		{args: []string{"-label", ""}, bad: true},
		{args: []string{"-bin", "nopath"}, bad: true},
		{args: []string{"-engines", "mysql"}, bad: true},
		{args: []string{"-rates", "fast"}, bad: true},
	} {
		o, err := parse(tc.args)
		if tc.bad {
			if err == nil {
				t.Errorf("%v: accepted", tc.args)
			}
			continue
		}
		if err != nil || len(o.bins) != tc.bins {
			t.Errorf("%v: %d targets, %v; want %d", tc.args, len(o.bins), err, tc.bins)
		}
	}
}
