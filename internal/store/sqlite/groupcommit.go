package sqlite

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

// Group commit. SQLite has a single writer: its commit (WAL append, lock
// round, and the writer's queue) is paid once per batch instead of once
// per request when the chat pipeline's writes (createMessage, createEvent,
// bot replies, turn completions) are queued and committed together, many
// per transaction.
//
// The semantics of one write are unchanged: its caller returns only after
// the transaction holding it committed, and gets its own result. If a batch
// fails, it is rolled back and its writes are retried one transaction each,
// so one bad write never fails the others (writes are re-runnable, see
// store.Write). Committed writes are handed to the after-commit hook in
// commit order.
//
// There is no background goroutine and no timer: a write that finds no
// batch running starts one, which takes everything queued (at most
// maxBatch) and loops until the queue is empty. An idle system commits
// each write at once; under load the batches grow by themselves while the
// previous one commits.

const (
	maxBatch = 256
	// batchTimeout bounds one batch transaction.
	batchTimeout = 30 * time.Second
)

// groupCommitter implements store.Committer for one database.
type groupCommitter struct {
	db    *DB
	after store.AfterCommit

	mu      sync.Mutex
	queue   []*queued
	running bool
}

// queued is one submitted write and its outcome.
type queued struct {
	ctx  context.Context
	w    *store.Write
	err  error
	done chan struct{}
}

// NewCommitter implements store.DB with group commit.
func (db *DB) NewCommitter(after store.AfterCommit) store.Committer {
	return &groupCommitter{db: db, after: after}
}

func (g *groupCommitter) Commit(ctx context.Context, w *store.Write) error { return g.Submit(ctx, w)() }

// Submit queues w. A write whose ctx ended before its batch started is
// dropped with ctx's error.
func (g *groupCommitter) Submit(ctx context.Context, w *store.Write) (wait func() error) {
	q := &queued{ctx: ctx, w: w, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go g.loop()
	}
	return func() error {
		<-q.done
		return q.err
	}
}

func (g *groupCommitter) loop() {
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxBatch)
		if n == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		batch := slices.Clone(g.queue[:n])
		clear(g.queue[:n])
		g.queue = g.queue[n:]
		if len(g.queue) == 0 {
			g.queue = nil // let the backing array go
		}
		g.mu.Unlock()
		g.commit(batch)
	}
}

func (g *groupCommitter) commit(batch []*queued) {
	live := batch[:0:0]
	for _, q := range batch {
		if err := q.ctx.Err(); err != nil {
			q.err = err
			close(q.done)
			continue
		}
		live = append(live, q)
	}
	if len(live) == 0 {
		return
	}
	// Conversation order (stable: a conversation's writes keep their
	// order), so that rows are touched in the same order batch to batch.
	slices.SortStableFunc(live, func(a, b *queued) int {
		ar, br := a.w.Conversation(), b.w.Conversation()
		return cmp.Or(cmp.Compare(ar.BotID, br.BotID), cmp.Compare(ar.ConversationID, br.ConversationID))
	})
	// A rolled-back attempt's numbers are forgotten before a retry.
	seqs := make([]int64, len(live))
	for i, q := range live {
		if q.w.Turn != nil {
			seqs[i] = q.w.Turn.Seq
		}
	}
	reset := func(i int) {
		if s := live[i].w.Signal; s != nil {
			s.Seq = 0
		}
		if t := live[i].w.Turn; t != nil {
			t.Seq = seqs[i]
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	// On the pinned connection: the single writer's page cache and
	// prepared statements stay warm from batch to batch.
	err := g.db.InPinnedTx(ctx, func(tx store.Store) error {
		for _, q := range live {
			if err := q.w.Run(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	g.db.ckpt.wrote()
	if err != nil && len(live) > 1 {
		// Find the culprit(s): each write alone.
		for i, q := range live {
			reset(i)
			q.err = g.db.InPinnedTx(ctx, func(tx store.Store) error { return q.w.Run(ctx, tx) })
		}
	} else {
		for _, q := range live {
			q.err = err
		}
	}
	if g.after != nil {
		for _, q := range live {
			if q.err == nil {
				g.after(q.w)
			}
		}
	}
	for _, q := range live {
		close(q.done)
	}
}
