package store

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Group commit: the chat pipeline's writes (createMessage, createEvent, bot
// replies, turn completions) are queued and committed together, many per
// transaction, so that a transaction's fixed costs (SQLite's commit and its
// single writer's queue; PostgreSQL's round trip, its commit and the WAL
// flush it waits for) are paid once per batch instead of once per write.
//
// The semantics of one write are unchanged: its caller returns only after
// the transaction holding it committed, and gets its own result. If a batch
// fails, it is rolled back and its writes are retried one transaction each,
// so one bad write never fails the others (writes are re-runnable, see
// Write). Committed writes are handed to the after-commit hook in commit
// order.
//
// With several shards, batches commit side by side, one per shard at a
// time. A conversation's writes go to the shard that holds its writes not
// committed yet, if any, so that they keep their order and two batches
// never hold the same conversation's rows. Any other write goes to the
// first shard with fewer than spillAt writes waiting: shard 0 while it
// keeps up, so that light and moderate loads make one batch at a time,
// the largest (one commit, one WAL flush, one backend for many writes),
// and the next shards only when its line grows while it commits, so that
// a backlog is committed side by side. With localOnly, a batch holds
// only Local writes: a write that is not commits alone, in its place in
// its shard's order, so that batches committing side by side (of several
// shards, or of several processes on one database) never take rows they
// share in different orders (a deadlock). With lockShared, a write whose
// only shared rows are states it lists (a turn that set a user's state)
// joins batches too: every transaction holding such writes first locks
// their states' keys, in one order (States.LockShared), so no two wait
// for each other over them.
//
// There is no timer: a write that finds its shard idle starts a batch,
// which takes everything queued (at most maxBatch) and loops until the
// queue is empty. An idle system commits each write at once; under load
// the batches grow by themselves while the previous one commits. Where a
// commit is all CPU (SQLite: no round trip to wait on), the previous one
// is too short for them to grow: with Yield, the shard's goroutine lets the
// goroutines ready to run go first (runtime.Gosched) before it takes a
// batch, so that requests whose turn is ending join it. An idle system
// has none and loses nothing.

const (
	maxBatch = 256
	// spillAt is how many writes may wait for a shard before a write of a
	// conversation it does not hold goes to the next shard. On PostgreSQL
	// with two shards, against one (parley-bench's closed loop, two cores,
	// side by side): 1.19x the rate (three rounds) and 1.17x (five) with
	// 8; 1.15x with 4, 1.17x with 16.
	spillAt = 8
	// batchTimeout bounds one batch transaction.
	batchTimeout = 30 * time.Second
)

// RunTx runs fn in one transaction, with the context fn's statements must
// use (the engine's marks, as WithPipeline).
type RunTx func(ctx context.Context, fn func(ctx context.Context, tx Store) error) error

// GroupCommitter implements Committer with group commit.
type GroupCommitter struct {
	run    RunTx
	after  AfterCommit
	shards []*shard
	cfg    GroupConfig

	// held is, with several shards, the shard holding each conversation's
	// writes not committed yet, and how many there are.
	heldMu sync.Mutex
	held   map[model.ConversationRef]*holding

	transactions atomic.Uint64 // run: batches, and writes retried alone
}

// Transactions tells how many transactions the committer has run: its
// batches, and the writes it ran again alone after their batch failed.
// Over the writes committed, it tells how well they batch (metrics:
// parley_commit_transactions_total).
func (g *GroupCommitter) Transactions() uint64 { return g.transactions.Load() }

// runTx runs one transaction, counted.
func (g *GroupCommitter) runTx(ctx context.Context, fn func(ctx context.Context, tx Store) error) error {
	g.transactions.Add(1)
	return g.run(ctx, fn)
}

// holding is a conversation's writes not committed yet, all of one shard.
type holding struct {
	sh *shard
	n  int
}

// GroupConfig shapes a GroupCommitter.
type GroupConfig struct {
	// Shards commit side by side (at least one).
	Shards int
	// LocalOnly batches only Local writes; the others commit alone.
	LocalOnly bool
	// LockShared, with LocalOnly, also batches the writes that list the
	// states they share (Write.SharedStates): each transaction holding
	// such writes first locks all their keys (States.LockShared).
	LockShared bool
	// Yield lets the goroutines ready to run go before each batch is
	// taken: for engines whose commit never waits, so that batches grow.
	Yield bool
}

type shard struct {
	mu      sync.Mutex
	queue   []*queued
	running bool
	waiting atomic.Int32 // len(queue), read without mu when routing
}

// queued is one submitted write and its outcome.
type queued struct {
	ctx  context.Context
	w    *Write
	ref  model.ConversationRef // with several shards: w's conversation
	err  error
	done chan struct{}
}

// NewGroupCommitter commits with run, as cfg says, and tells after of
// every committed write.
func NewGroupCommitter(cfg GroupConfig, run RunTx, after AfterCommit) *GroupCommitter {
	g := &GroupCommitter{run: run, after: after, shards: make([]*shard, max(cfg.Shards, 1)), cfg: cfg,
		held: map[model.ConversationRef]*holding{}}
	for i := range g.shards {
		g.shards[i] = &shard{}
	}
	return g
}

// Commit implements Committer.
func (g *GroupCommitter) Commit(ctx context.Context, w *Write) error { return g.Submit(ctx, w)() }

// Submit implements Committer. A write whose ctx ended before its batch
// started is dropped with ctx's error.
func (g *GroupCommitter) Submit(ctx context.Context, w *Write) (wait func() error) {
	q := &queued{ctx: ctx, w: w, done: make(chan struct{})}
	sh := g.shards[0]
	if len(g.shards) > 1 {
		q.ref = w.Conversation()
		sh = g.route(q.ref)
	}
	sh.mu.Lock()
	sh.queue = append(sh.queue, q)
	sh.waiting.Store(int32(len(sh.queue)))
	start := !sh.running
	sh.running = true
	sh.mu.Unlock()
	if start {
		go g.loop(sh)
	}
	return func() error {
		<-q.done
		return q.err
	}
}

// route picks the shard of a write of ref and counts it as held there.
func (g *GroupCommitter) route(ref model.ConversationRef) *shard {
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	if h := g.held[ref]; h != nil {
		h.n++
		return h.sh
	}
	sh := g.shards[0]
	for _, c := range g.shards {
		if c.waiting.Load() < spillAt {
			sh = c
			break
		}
		if c.waiting.Load() < sh.waiting.Load() {
			sh = c // all have a line: the shortest
		}
	}
	g.held[ref] = &holding{sh: sh, n: 1}
	return sh
}

// settled ends q: its outcome is told to its caller, and, with several
// shards, its conversation is held one write less.
func (g *GroupCommitter) settled(q *queued) {
	if len(g.shards) > 1 {
		g.heldMu.Lock()
		if h := g.held[q.ref]; h != nil {
			if h.n--; h.n <= 0 {
				delete(g.held, q.ref)
			}
		}
		g.heldMu.Unlock()
	}
	close(q.done)
}

func (g *GroupCommitter) loop(sh *shard) {
	for {
		if g.cfg.Yield {
			runtime.Gosched()
		}
		sh.mu.Lock()
		n := min(len(sh.queue), maxBatch)
		if g.cfg.LocalOnly {
			for i, q := range sh.queue[:n] {
				if !g.batchable(q.w) {
					n = max(i, 1) // the local writes before it, or it alone
					break
				}
			}
		}
		if n == 0 {
			sh.running = false
			sh.mu.Unlock()
			return
		}
		batch := slices.Clone(sh.queue[:n])
		clear(sh.queue[:n])
		sh.queue = sh.queue[n:]
		if len(sh.queue) == 0 {
			sh.queue = nil // let the backing array go
		}
		sh.waiting.Store(int32(len(sh.queue)))
		sh.mu.Unlock()
		g.commit(batch)
	}
}

// batchable tells whether w may commit with other writes under LocalOnly.
func (g *GroupCommitter) batchable(w *Write) bool {
	return w.Local || g.cfg.LockShared && len(w.SharedStates) > 0 && !w.SharesMore
}

// runWrites runs ws in tx, in order, after locking the states they share
// (LockShared; States.LockShared takes them in its one order), whether
// they commit in a batch or alone.
func (g *GroupCommitter) runWrites(ctx context.Context, tx Store, ws ...*Write) error {
	if g.cfg.LockShared {
		var keys []StateKey
		for _, w := range ws {
			keys = append(keys, w.SharedStates...)
		}
		if len(keys) > 0 {
			if err := tx.States().LockShared(ctx, keys); err != nil {
				return err
			}
		}
	}
	for _, w := range ws {
		if err := w.Run(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

func (g *GroupCommitter) commit(batch []*queued) {
	live := batch[:0:0]
	for _, q := range batch {
		if err := q.ctx.Err(); err != nil {
			q.err = err
			g.settled(q)
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
	ws := make([]*Write, len(live))
	for i, q := range live {
		ws[i] = q.w
	}
	err := g.runTx(ctx, func(ctx context.Context, tx Store) error { return g.runWrites(ctx, tx, ws...) })
	if err != nil && len(live) > 1 {
		// Find the culprit(s): each write alone.
		for i, q := range live {
			reset(i)
			q.err = g.runTx(ctx, func(ctx context.Context, tx Store) error { return g.runWrites(ctx, tx, q.w) })
		}
	} else {
		for _, q := range live {
			q.err = err
		}
	}
	for i, q := range live {
		if TurnRefused(q.err) {
			// Its Then was refused in the engine (a pipelined
			// transaction): the write commits without it, as where the
			// turn's number and start are checked as it runs.
			reset(i)
			q.w.noThen = true
			q.err = g.runTx(ctx, func(ctx context.Context, tx Store) error { return g.runWrites(ctx, tx, q.w) })
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
		g.settled(q)
	}
}
