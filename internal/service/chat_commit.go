package service

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Group commit (SQLite). Chat writes (createMessage, createEvent, bot
// replies, turn completions) are queued and committed together, many per
// transaction: SQLite's commit (WAL append, lock round, and the single
// writer's queue) is paid once per batch instead of once per request. On
// PostgreSQL each write commits on its own (see submit).
//
// The semantics of one write are unchanged: its caller returns only after
// the transaction holding it committed, and gets its own result. If a batch
// fails, it is rolled back and its writes are retried one transaction each,
// so one bad write never fails the others (writes are re-runnable: they
// fix their ids and times before being queued; sequence numbers are
// reassigned). Signals are published, in commit order, only after their
// commit.
//
// There is no background goroutine and no timer: a write that finds fewer
// than maxWriters batches running starts one, which takes everything
// queued (at most maxBatch) and loops until the queue is empty. An idle
// system commits each write at once; under load the batches grow by
// themselves while the previous one commits.

const (
	maxBatch = 256
	// batchTimeout bounds one batch transaction.
	batchTimeout = 30 * time.Second
)

// commitWrite is one queued write.
type commitWrite struct {
	ctx   context.Context
	write func(ctx context.Context, tx store.Store) error // may be nil
	sig   *model.Signal                                   // may be nil
	turn  *model.Turn                                     // may be nil; same conversation as sig
	// notify wakes the dispatcher for this conversation after the commit
	// (set with turn).
	notify *model.ConversationRef
	err    error
	done   chan struct{}
}

func (w *commitWrite) apply(ctx context.Context, tx store.Store) error {
	if w.write != nil {
		if err := w.write(ctx, tx); err != nil {
			return err
		}
	}
	switch {
	case w.sig != nil:
		return tx.Chat().AppendSignalTurn(ctx, w.sig, w.turn)
	case w.turn != nil:
		return tx.Chat().EnqueueTurn(ctx, w.turn)
	}
	return nil
}

// reset forgets the numbers a rolled-back attempt assigned.
func (w *commitWrite) reset(turnSeq int64) {
	if w.sig != nil {
		w.sig.Seq = 0
	}
	if w.turn != nil {
		w.turn.Seq = turnSeq
	}
}

func (w *commitWrite) conv() (string, string) {
	switch {
	case w.sig != nil:
		return w.sig.BotID, w.sig.ConversationID
	case w.turn != nil:
		return w.turn.BotID, w.turn.ConversationID
	}
	return "", ""
}

// committer batches writes for one Service.
type committer struct {
	mu      sync.Mutex
	queue   []*commitWrite
	running int
}

// maxWriters is how many batches commit at once: SQLite has a single
// writer. 0 turns group commit off (PostgreSQL, see submit).
func (s *Service) maxWriters() int {
	if s.store.Engine() == "sqlite" {
		return 1
	}
	return 0
}

// commit queues w and waits for the commit that holds it. It does not give
// up when ctx ends once queued: the outcome is then the commit's, so a
// reported failure never hides a stored write. A write whose ctx ended
// before its batch started is dropped with ctx's error.
func (s *Service) commit(ctx context.Context, w *commitWrite) error {
	return s.submit(ctx, w)()
}

// submit queues w and returns a function that waits for its outcome (see
// commit). Without group commit (PostgreSQL) w is committed before submit
// returns.
func (s *Service) submit(ctx context.Context, w *commitWrite) (wait func() error) {
	w.ctx = ctx
	if s.maxWriters() == 0 {
		// PostgreSQL: a batching writer serialises round trips that
		// concurrent transactions overlap, and PostgreSQL already groups
		// the WAL flushes of concurrent commits; measured slower, so each
		// write commits on its own (in fewer round trips: AppendSignalTurn).
		w.err = s.store.InTx(ctx, func(tx store.Store) error { return w.apply(ctx, tx) })
		s.published(w)
		return func() error { return w.err }
	}
	w.done = make(chan struct{})
	c := &s.chat.commit
	c.mu.Lock()
	c.queue = append(c.queue, w)
	start := c.running < s.maxWriters()
	if start {
		c.running++
	}
	c.mu.Unlock()
	if start {
		go s.commitLoop()
	}
	return func() error {
		<-w.done
		return w.err
	}
}

func (s *Service) commitLoop() {
	c := &s.chat.commit
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxBatch)
		if n == 0 {
			c.running--
			c.mu.Unlock()
			return
		}
		batch := slices.Clone(c.queue[:n])
		clear(c.queue[:n])
		c.queue = c.queue[n:]
		if len(c.queue) == 0 {
			c.queue = nil // let the backing array go
		}
		c.mu.Unlock()
		s.commitBatch(batch)
	}
}

func (s *Service) commitBatch(batch []*commitWrite) {
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			close(w.done)
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	// Conversation order: concurrent batches (PostgreSQL) lock the
	// conversation rows they bump in the same order, so they queue
	// instead of deadlocking. The sort is stable: a conversation's writes
	// keep their order.
	slices.SortStableFunc(live, func(a, b *commitWrite) int {
		ab, ac := a.conv()
		bb, bc := b.conv()
		return cmp.Or(cmp.Compare(ab, bb), cmp.Compare(ac, bc))
	})
	seqs := make([]int64, len(live))
	for i, w := range live {
		if w.turn != nil {
			seqs[i] = w.turn.Seq
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	err := s.batchTx(ctx, func(tx store.Store) error {
		for _, w := range live {
			if err := w.apply(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(live) > 1 {
		// Find the culprit(s): each write alone.
		for i, w := range live {
			w.reset(seqs[i])
			w.err = s.batchTx(ctx, func(tx store.Store) error { return w.apply(ctx, tx) })
		}
	} else {
		for _, w := range live {
			w.err = err
		}
	}
	// Publish in commit order, then wake the dispatcher and the callers.
	for _, w := range live {
		s.published(w)
	}
	for _, w := range live {
		close(w.done)
	}
}

// pinnedTxer is a store that can run transactions on one connection kept
// for them (sqlstore.DB.InPinnedTx).
type pinnedTxer interface {
	InPinnedTx(ctx context.Context, fn func(tx store.Store) error) error
}

// batchTx runs a batch's transaction: on the store's pinned connection
// when it has one, so the single writer's page cache and prepared
// statements stay warm from batch to batch.
func (s *Service) batchTx(ctx context.Context, fn func(tx store.Store) error) error {
	if p, ok := s.store.(pinnedTxer); ok {
		return p.InPinnedTx(ctx, fn)
	}
	return s.store.InTx(ctx, fn)
}

// published announces a committed write.
func (s *Service) published(w *commitWrite) {
	if w.err != nil {
		return
	}
	if w.sig != nil {
		s.pub.Publish(w.sig)
	}
	if w.notify != nil {
		s.turns.Notify(*w.notify)
	}
}
