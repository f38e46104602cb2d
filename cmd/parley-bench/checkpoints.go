package main

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL's checkpoints in the open loop. A time-driven checkpoint
// (every checkpoint_timeout, 5 min by default) writes its dirty buffers
// over most of that time, then syncs every file it wrote (thousands, with
// the benchmark's databases): runs that coincided with one were slow for
// every build alike. Before each target's open-loop runs the benchmark
// checkpoints (CHECKPOINT: a superuser's or pg_checkpoint's), which puts
// the next time-driven one a checkpoint_timeout away, and it counts the
// checkpoints that ran during each run, so that one that did is seen.

// pgStats reads and checkpoints the PostgreSQL server at url; the zero
// value (url "") does nothing.
type pgStats struct{ url string }

// checkpoint runs CHECKPOINT; it tells whether it could.
func (s pgStats) checkpoint() bool {
	if s.url == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return false
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CHECKPOINT")
	return err == nil
}

// checkpoints is how many checkpoints the server has run (timed and
// requested), or -1 when unknown.
func (s pgStats) checkpoints() int64 {
	if s.url == "" {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int64
	if conn.QueryRow(ctx, "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter").Scan(&n) != nil {
		return -1
	}
	return n
}

// checkpointsCell is the count between two readings ("–": unknown).
func checkpointsCell(before, after int64) string {
	if before < 0 || after < 0 {
		return "–"
	}
	return strconv.FormatInt(after-before, 10)
}
