package postgres

import (
	"context"
	"runtime"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// commitShards is how many batches of PostgreSQL's group commit
// (store.GroupCommitter) may commit side by side, on as many backends: one
// per two cores of this process (GOMAXPROCS), at least two, at most eight.
// A batch's transaction is pipelined (pipeline.go): its writes' statements
// and the COMMIT go out in one round trip, and it waits for one WAL flush
// instead of one per write.
//
// The group commit fills shard 0 first and spills to the next only when
// writes queue behind it (store.spillAt): fewer, larger batches make fewer
// commits and WAL flushes and fewer backends contending for the CPU and
// the WAL's write lock, and a batch runs on one backend, one statement
// after the other, so that under a backlog a second one uses the core the
// first leaves idle. On two cores, one shard against the former eight
// (conversations spread by hash; parley-bench, the door on, three rounds,
// twice): 1.12x and 1.14x the closed loop's rate, and at 1,000 messages/s
// a reply's p99 24.6-28.7 ms against 92-98 ms (two such shards: 34-66 ms).
// Two shards that spill, against one: 1.17x and 1.19x the closed loop's
// rate (its CPU 17 % idle with one, PostgreSQL's backend the bottleneck).
//
// Batches hold only Local writes (localOnly): two batches, of this node's
// shards or of other nodes on the same database, then never take shared
// rows (a user's or the bot's state) in different orders; the other
// writes commit alone, except those whose shared rows are states they
// list (LockShared: a transaction locks their keys first, in one order).
func commitShards(procs int) int { return min(max(procs/2, 2), 8) }

func newCommitter(db *sqlstore.DB, after store.AfterCommit) store.Committer {
	return store.NewGroupCommitter(store.GroupConfig{Shards: commitShards(runtime.GOMAXPROCS(0)), LocalOnly: true, LockShared: true}, func(ctx context.Context, fn func(context.Context, store.Store) error) error {
		ctx = store.WithPipeline(ctx)
		return db.InTx(ctx, func(tx store.Store) error { return fn(ctx, tx) })
	}, after)
}
