package postgres

import (
	"context"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// commitShards is how many batches of PostgreSQL's group commit
// (store.GroupCommitter) commit side by side, each for its own
// conversations, on as many backends. A batch's transaction is pipelined
// (pipeline.go): its writes' statements and the COMMIT go out in one round
// trip, and it waits for one WAL flush instead of one per write. Batches
// hold only Local writes, so two of them never take shared rows (a user's
// or the bot's state) in different orders; the others commit alone.
const commitShards = 8

func newCommitter(db *sqlstore.DB, after store.AfterCommit) store.Committer {
	return store.NewGroupCommitter(commitShards, func(ctx context.Context, fn func(context.Context, store.Store) error) error {
		ctx = store.WithPipeline(ctx)
		return db.InTx(ctx, func(tx store.Store) error { return fn(ctx, tx) })
	}, after)
}
