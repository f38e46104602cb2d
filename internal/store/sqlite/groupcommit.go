package sqlite

import (
	"context"

	"github.com/parley-bots/parley/internal/store"
)

// NewCommitter implements store.DB with group commit (store.GroupCommitter)
// in one shard: SQLite has a single writer, whose commit (WAL append, lock
// round, and the writer's queue) is then paid once per batch.
func (db *DB) NewCommitter(after store.AfterCommit) store.Committer {
	return store.NewGroupCommitter(1, false, func(ctx context.Context, fn func(context.Context, store.Store) error) error {
		// On the pinned connection: the single writer's page cache and
		// prepared statements stay warm from batch to batch. The batch's
		// statements run without its deadline: with one, the driver starts
		// a goroutine per statement to interrupt it (5 % of the CPU of a
		// message); the transaction keeps the deadline, and a statement
		// waits for a lock at most the busy timeout.
		err := db.InPinnedTx(ctx, func(tx store.Store) error { return fn(context.WithoutCancel(ctx), tx) })
		db.ckpt.wrote()
		return err
	}, after)
}
