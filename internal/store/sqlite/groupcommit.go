package sqlite

import (
	"context"

	"github.com/parley-bots/parley/internal/store"
)

// NewCommitter implements store.DB with group commit (store.GroupCommitter)
// in one shard: SQLite has a single writer, whose commit (WAL append, lock
// round, and the writer's queue) is then paid once per batch. The commit
// waits on nothing, so the batches grow only if the writer yields first:
// without it, a closed loop of 32 clients committed 2.4-2.9 writes per
// batch on two cores, with it 8-10, and 9-14 % less CPU per message
// (parley-bench, README's fourteenth round).
func (db *DB) NewCommitter(after store.AfterCommit) store.Committer {
	return store.NewGroupCommitter(store.GroupConfig{Shards: 1, Yield: true}, func(ctx context.Context, fn func(context.Context, store.Store) error) error {
		// On the pinned connection: the single writer's page cache and
		// prepared statements stay warm from batch to batch. The batch runs
		// without its deadline: with one, the driver starts a goroutine per
		// statement to interrupt it (5 % of the CPU of a message), and
		// database/sql one per query, to close its rows, as long as the
		// transaction has one (another 4 % of a folded message's commit).
		// A statement waits for a lock at most the busy timeout, and a
		// batch found past its deadline once its writes ran is rolled back.
		nc := context.WithoutCancel(ctx)
		err := db.InPinnedTx(nc, func(tx store.Store) error {
			if err := fn(nc, tx); err != nil {
				return err
			}
			return ctx.Err()
		})
		db.ckpt.wrote()
		return err
	}, after)
}
