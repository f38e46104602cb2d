package postgres

import (
	"context"
	"runtime"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// commitShards is how many batches of PostgreSQL's group commit
// (store.GroupCommitter) commit side by side, each for its own
// conversations, on as many backends: one per two cores of this process
// (GOMAXPROCS), at least one, at most eight. A batch's transaction is
// pipelined (pipeline.go): its writes' statements and the COMMIT go out in
// one round trip, and it waits for one WAL flush instead of one per write.
// Fewer shards make larger batches, so fewer commits and WAL flushes, and
// fewer backends contending for the CPU and the WAL's write lock; more let
// a machine with cores to spare commit side by side. On two cores, one
// shard against the former eight (parley-bench, the door on, three rounds,
// twice): 1.12x and 1.14x the closed loop's rate, 0.78-0.82x PostgreSQL's
// CPU per message, and at 1,000 messages/s a reply's p50 4.9-5.1 ms against
// 9.5-11.2 ms, its p99 24.6-28.7 ms against 92-98 ms (two shards: 5.8-6.5
// and 34-66 ms).
//
// Batches hold only Local writes (localOnly): two batches, of this node's
// shards or of other nodes on the same database, then never take shared
// rows (a user's or the bot's state) in different orders; the other
// writes commit alone.
func commitShards(procs int) int { return min(max(procs/2, 1), 8) }

func newCommitter(db *sqlstore.DB, after store.AfterCommit) store.Committer {
	return store.NewGroupCommitter(store.GroupConfig{Shards: commitShards(runtime.GOMAXPROCS(0)), LocalOnly: true}, func(ctx context.Context, fn func(context.Context, store.Store) error) error {
		ctx = store.WithPipeline(ctx)
		return db.InTx(ctx, func(tx store.Store) error { return fn(ctx, tx) })
	}, after)
}
