package postgres

import "testing"

// TestCommitShards: one group-commit shard per two cores, at least two
// (the second takes a backlog), at most eight.
func TestCommitShards(t *testing.T) {
	for _, c := range []struct{ procs, want int }{{1, 2}, {2, 2}, {3, 2}, {4, 2}, {8, 4}, {16, 8}, {64, 8}} {
		if got := commitShards(c.procs); got != c.want {
			t.Errorf("commitShards(%d) = %d, want %d", c.procs, got, c.want)
		}
	}
}
