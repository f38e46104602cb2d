package store

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// Write is one write of the chat pipeline: what Apply stores, the signal
// that announces it and the turn it gives the bot, committed together.
// Apply must be re-runnable: a Committer may run it again in another
// transaction (it fixes its ids and times before being submitted; signal
// and turn numbers are reassigned).
type Write struct {
	Apply  func(ctx context.Context, tx Store) error // may be nil
	Signal *model.Signal                             // may be nil
	Turn   *model.Turn                               // may be nil; same conversation as Signal
	// Ref, when set, is the write's conversation whatever its signals'
	// (a turn's completion: its turn's, with or without replies): where
	// group commit orders it.
	Ref model.ConversationRef
	// More are further signals appended after Signal, in order, in the
	// same transaction (a bot turn's held replies, committed with the
	// turn's completion).
	More []*model.Signal
	// Local says the write changes only its own conversation's rows (its
	// messages, events, signals, turns, handoff and states, a workflow
	// dialog's inactivity timeout, the conversation, its lease), besides
	// inserting rows no other write changes (logs, turn runs): an engine
	// may commit it in one transaction with other conversations' writes,
	// side by side with other such transactions (PostgreSQL's group
	// commit). A write that
	// is not local (one changing a user's or the bot's state, another
	// conversation, an issue) commits in a transaction of its own there,
	// so that two transactions never take such shared rows in different
	// orders.
	Local bool
	// SharedStates, when set on a write that is not Local, are all the
	// rows outside its conversation that it changes: states (a user's,
	// the bot's). PostgreSQL's group commit then commits it with other
	// writes all the same, once the batch's transaction has locked the
	// keys of every write in it, in one order, before anything else
	// (States.LockShared, GroupConfig.LockShared): two batches side by
	// side then never wait for each other in a cycle over those rows.
	// A write that is not Local and lists none commits alone there.
	SharedStates []StateKey
	// SharesMore says the write changes shared rows besides SharedStates
	// (an issue, another conversation): it commits alone there, having
	// locked its SharedStates all the same, so that it never holds one of
	// those states while a batch that locked it first waits for it.
	SharesMore bool
	// Fence, when set, is checked first in the transaction (Leases.Check):
	// the write commits nothing, failing with ErrFenced, once another node
	// took over the lease it was done under.
	Fence *Fence
	// Then, when set, completes Turn in the same transaction (a user's
	// message whose bot answered before it was committed: the dispatcher's
	// Fold): it runs after Turn is enqueued, and only when Turn got
	// ThenSeq, the number that follows the conversation's last turn as the
	// bot's run began; another turn in between leaves Turn pending, for the
	// dispatcher to run again in order. ThenRan tells which once the write
	// ran. In a pipelined transaction (PostgreSQL's group commit), where
	// Turn is numbered only at the commit, Turn takes ThenSeq as Then runs
	// and the engine fails the transaction unless that is its number
	// (Signals.RequireLastTurn, ErrTurnBetween, or ThenIf's statement:
	// LastTurn); the group commit then
	// commits the write again without Then (noThen), so the outcome is the
	// same on every engine.
	Then    *Write
	ThenSeq int64
	// ThenIf, when set, is a further condition of Then, checked in the
	// transaction once Turn got ThenSeq (the Fold of a turn that started
	// from what an earlier turn left, not from a read: that it is still
	// what the store holds).
	ThenIf  func(ctx context.Context, tx Store) (bool, error)
	thenRan bool
	// noThen makes Run leave Then out (the group commit's retry of a write
	// whose Then was refused in a pipelined transaction).
	noThen bool
	// seqGiven is set while Turn holds ThenSeq given by Run, not by the
	// engine: a run again takes it back first.
	seqGiven bool
}

// ThenRan tells whether Then ran in the write's transaction (meaningful
// once the write committed): its turn is then done, and Then's signals
// follow the write's.
func (w *Write) ThenRan() bool { return w.thenRan }

// Signals are the write's signals in order: Signal, then More, then
// Then's when it ran.
func (w *Write) Signals() []*model.Signal {
	var then []*model.Signal
	if w.thenRan && w.Then != nil {
		then = w.Then.Signals()
	}
	if w.Signal == nil && len(then) == 0 {
		return w.More
	}
	out := make([]*model.Signal, 0, 1+len(w.More)+len(then))
	if w.Signal != nil {
		out = append(out, w.Signal)
	}
	return append(append(out, w.More...), then...)
}

// Conversation is the conversation the write belongs to: Ref, or its
// signal's or turn's.
func (w *Write) Conversation() model.ConversationRef {
	switch {
	case w.Ref != model.ConversationRef{}:
		return w.Ref
	case w.Signal != nil:
		return model.ConversationRef{BotID: w.Signal.BotID, ConversationID: w.Signal.ConversationID}
	case w.Turn != nil:
		return model.ConversationRef{BotID: w.Turn.BotID, ConversationID: w.Turn.ConversationID}
	case len(w.More) > 0:
		return model.ConversationRef{BotID: w.More[0].BotID, ConversationID: w.More[0].ConversationID}
	}
	return model.ConversationRef{}
}

// Run applies the write inside tx: Apply, then the signal (and turn) with
// their sequence numbers. The numbers are known once the transaction
// committed: in a pipelined transaction the engine may fill them in only
// then (WithReturnedRow).
func (w *Write) Run(ctx context.Context, tx Store) error {
	w.thenRan = false
	if sg := w.Signal; sg != nil || len(w.More) > 0 {
		if sg == nil {
			sg = w.More[0]
		}
		ctx = WithSignalled(ctx, model.ConversationRef{BotID: sg.BotID, ConversationID: sg.ConversationID})
	}
	if w.seqGiven {
		w.Turn.Seq, w.seqGiven = 0, false
	}
	if w.Fence != nil {
		if err := tx.Leases().Check(ctx, *w.Fence); err != nil {
			return err
		}
	}
	if w.Apply != nil {
		if err := w.Apply(ctx, tx); err != nil {
			return err
		}
	}
	// A turn that Then may complete here is numbered first and stored
	// only if Then does not run (storeTurn). Pipelined, a Then that does
	// not run fails the transaction (RequireLastTurn, below), which the
	// group commit runs again without Then (noThen): the turn is stored
	// then. Then's signals are numbered with the write's own (one update
	// of the conversation's row, not two), when nothing of the write's
	// comes between (no More) and they are all appended by AppendSignal
	// (Then's More only: AppendSignalTurn, for a Signal, would number past
	// those taken ahead, and pipelined, where the engine numbers them from
	// the conversation's last number, would move it).
	unstored := w.Then != nil && !w.noThen && w.Signal != nil && w.Turn != nil
	thenCtx := ctx
	var ahead *SignalsAhead
	if unstored {
		thenCtx = WithUnstoredTurn(ctx, w.Turn)
		if n := len(w.Then.More); n > 0 && len(w.More) == 0 && w.Then.Signal == nil && w.Then.Then == nil {
			ahead = &SignalsAhead{Want: n}
			thenCtx = WithSignalsAhead(thenCtx, ahead)
		}
	}
	giveBack := func() error {
		if n := ahead.Left(); n > 0 {
			ref := w.Conversation()
			return tx.Signals().GiveBackSignals(ctx, ref.BotID, ref.ConversationID, n)
		}
		return nil
	}
	storeTurn := func() error {
		if !unstored {
			return nil
		}
		if err := giveBack(); err != nil {
			return err
		}
		return tx.Signals().EnqueueTurn(ctx, w.Turn) // numbered: stored as it is
	}
	var err error
	switch {
	case w.Signal != nil:
		err = tx.Signals().AppendSignalTurn(thenCtx, w.Signal, w.Turn)
	case w.Turn != nil:
		err = tx.Signals().EnqueueTurn(ctx, w.Turn)
	}
	for _, sg := range w.More {
		if err != nil {
			return err
		}
		err = tx.Signals().AppendSignal(ctx, sg)
	}
	if err != nil || w.Then == nil || w.Turn == nil || w.noThen {
		return err
	}
	var last *LastTurn
	if Pipelined(ctx) && w.Turn.Seq == 0 {
		// The turn's number comes back with the commit: Then runs with
		// ThenSeq, and the engine fails the transaction unless the turn
		// got it. ThenIf's statement may check that too (LastTurn).
		last = &LastTurn{Seq: w.ThenSeq}
		w.Turn.Seq, w.seqGiven = w.ThenSeq, true
	} else if w.Turn.Seq != w.ThenSeq {
		return storeTurn()
	}
	ok := true
	if w.ThenIf != nil {
		ifCtx := ctx
		if last != nil {
			ifCtx = WithLastTurn(ctx, last)
		}
		var err error
		if ok, err = w.ThenIf(ifCtx, tx); err != nil {
			return err
		}
	}
	if last != nil && !last.Checked {
		ref := w.Conversation()
		if err := tx.Signals().RequireLastTurn(ctx, ref.BotID, ref.ConversationID, last.Seq); err != nil {
			return err
		}
	}
	if !ok {
		return storeTurn()
	}
	if err := w.Then.Run(thenCtx, tx); err != nil {
		return err
	}
	w.thenRan = true
	return giveBack()
}

// AfterCommit is told of every committed write, in commit order: it
// publishes the signals (Write.Signals, in order) and wakes the turn
// dispatcher. Durable first, then
// announced: nothing announced can be lost.
type AfterCommit func(w *Write)

// Committer commits the chat pipeline's writes. A caller returns only
// after the transaction holding its write committed, with its own result.
type Committer interface {
	// Commit submits w and waits for its outcome. Once queued, a write is
	// not abandoned when ctx ends: a reported failure never hides a stored
	// write.
	Commit(ctx context.Context, w *Write) error
	// Submit queues w and returns the wait for its outcome.
	Submit(ctx context.Context, w *Write) (wait func() error)
}

type pipelineKey struct{}

// WithPipeline marks ctx's transaction as one whose statements the engine
// may send together (PostgreSQL: Exec statements wait for the next
// statement that needs an answer, or the COMMIT, and go out with it in
// one round trip). Its writes still commit all or nothing; a failed
// statement's error may surface at a later call of the transaction.
func WithPipeline(ctx context.Context) context.Context {
	return context.WithValue(ctx, pipelineKey{}, true)
}

// Pipelined tells whether ctx was marked by WithPipeline.
func Pipelined(ctx context.Context) bool { return ctx.Value(pipelineKey{}) != nil }

type requiredRowKey struct{}

// WithRequiredRow marks the statement run with ctx, in a pipelined
// transaction, as one that must find its row, and that is written to fail
// in the engine when it does not (PostgreSQL: a division by zero, SQLSTATE
// 22012, by the count of the rows it changed): the engine fails the
// transaction with err, before the COMMIT it may go out with, instead of
// the caller asking RowsAffected, which would send the queued statements
// at once.
func WithRequiredRow(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, requiredRowKey{}, err)
}

// RequiredRow is the error of a statement marked by WithRequiredRow, or nil.
func RequiredRow(ctx context.Context) error {
	err, _ := ctx.Value(requiredRowKey{}).(error)
	return err
}

type unstoredTurnKey struct{}

// WithUnstoredTurn marks ctx's statements as those of a transaction that
// numbers t without storing its row: AppendSignalTurn(…, t) takes t's
// number only, and CompleteTurn of t deletes nothing. Write.Run's Then:
// the turn that Then completes in the same transaction is stored only if
// Then does not run, two statements a folded message does not pay for.
func WithUnstoredTurn(ctx context.Context, t *model.Turn) context.Context {
	return context.WithValue(ctx, unstoredTurnKey{}, t)
}

// UnstoredTurn is the turn given to WithUnstoredTurn, or nil.
func UnstoredTurn(ctx context.Context) *model.Turn {
	t, _ := ctx.Value(unstoredTurnKey{}).(*model.Turn)
	return t
}

// LastTurn is Signals.RequireLastTurn's condition, in a pipelined
// Write.Run, offered to Then's ThenIf: a check that reads the
// conversation's row in its own statement may add it there (the turn's
// number is Seq) and set Checked, and Run then sends no statement of its
// own for it (PostgreSQL's fold of a kept start: one statement less per
// message). A refusal then fails with the check's error, which the group
// commit treats as RequireLastTurn's (TurnRefused).
type LastTurn struct {
	Seq     int64
	Checked bool
}

type lastTurnKey struct{}

// WithLastTurn offers lt to the statements run with ctx.
func WithLastTurn(ctx context.Context, lt *LastTurn) context.Context {
	return context.WithValue(ctx, lastTurnKey{}, lt)
}

// LastTurnOf is the LastTurn given to WithLastTurn, or nil.
func LastTurnOf(ctx context.Context) *LastTurn {
	lt, _ := ctx.Value(lastTurnKey{}).(*LastTurn)
	return lt
}

type signalledKey struct{}

// WithSignalled marks ctx's statements as those of a transaction that
// appends a signal of the conversation ref before it commits (Write.Run,
// for a write with signals): numbering it updates the conversation's
// row, which fails the transaction when the conversation is gone and
// orders it with the conversation's delete. A row written for that
// conversation then needs no check of the conversation of its own
// (Chat.CreateMessage where messages have no foreign key to it: migration
// 0016 on PostgreSQL).
func WithSignalled(ctx context.Context, ref model.ConversationRef) context.Context {
	return context.WithValue(ctx, signalledKey{}, ref)
}

// Signalled tells whether ctx was marked by WithSignalled for the
// conversation botID, conversationID.
func Signalled(ctx context.Context, botID, conversationID string) bool {
	ref, _ := ctx.Value(signalledKey{}).(model.ConversationRef)
	return ref.BotID == botID && ref.ConversationID == conversationID && botID != ""
}

// SignalsAhead are signal numbers a transaction takes ahead, with the
// number of an earlier signal of the same conversation, for signals it may
// append later (Write.Run: the signals of a Then, taken with its write's
// own): the conversation's row is updated once instead of once more for
// Then. Numbers not used are given back (Signals.GiveBackSignals), so the
// log stays gapless.
//
// In a pipelined transaction the numbers are known only to the engine
// until the commit (WithReturnedRow): they are taken as a count
// (TakeDeferred), and a signal that uses one is numbered by the engine
// from the conversation's last number, which nothing else in the
// transaction moves while some are left (Write.Run's Then appends no
// signal but through AppendSignal).
type SignalsAhead struct {
	Want int // how many to take
	// What was taken: the conversation, the next number to use and the
	// last (Next 0: none taken yet, or taken deferred).
	BotID, ConversationID string
	Next, End             int64
	// Deferred counts the numbers taken in a pipelined transaction and
	// not used yet; the next to use is the conversation's last number
	// minus Deferred-1.
	Deferred int64
	taken    bool
}

// Take records the numbers taken, next to end, of the conversation.
func (a *SignalsAhead) Take(botID, conversationID string, next, end int64) {
	a.BotID, a.ConversationID, a.Next, a.End, a.taken = botID, conversationID, next, end, true
}

// TakeDeferred records n numbers taken in a pipelined transaction, the
// conversation's last ones once the statement that took them ran.
func (a *SignalsAhead) TakeDeferred(botID, conversationID string, n int64) {
	a.BotID, a.ConversationID, a.Deferred, a.taken = botID, conversationID, n, true
}

// Taken tells whether the numbers were taken.
func (a *SignalsAhead) Taken() bool { return a != nil && a.taken }

// Left is how many numbers taken ahead are still unused.
func (a *SignalsAhead) Left() int64 {
	switch {
	case a == nil || !a.taken:
		return 0
	case a.Deferred > 0 || a.Next == 0:
		return a.Deferred
	}
	return a.End - a.Next + 1
}

type signalsAheadKey struct{}

// WithSignalsAhead marks ctx's statements with a: the first
// AppendSignalTurn of a turn marked by WithUnstoredTurn takes a.Want
// numbers more, and AppendSignal uses them, in order, while some are left.
func WithSignalsAhead(ctx context.Context, a *SignalsAhead) context.Context {
	return context.WithValue(ctx, signalsAheadKey{}, a)
}

// SignalsAheadOf is the SignalsAhead given to WithSignalsAhead, or nil.
func SignalsAheadOf(ctx context.Context) *SignalsAhead {
	a, _ := ctx.Value(signalsAheadKey{}).(*SignalsAhead)
	return a
}

type returnedRowKey struct{}

// WithReturnedRow marks the statement run with ctx as an Exec, in a
// pipelined transaction, whose one row the engine scans into dest when it
// has run: at the latest once the transaction committed, so that the
// statement can go out with the statements after it and the COMMIT, in one
// round trip. Its caller must not read dest before then.
func WithReturnedRow(ctx context.Context, dest ...any) context.Context {
	return context.WithValue(ctx, returnedRowKey{}, dest)
}

// ReturnedRow is the destination given to WithReturnedRow, or nil.
func ReturnedRow(ctx context.Context) []any {
	dest, _ := ctx.Value(returnedRowKey{}).([]any)
	return dest
}

// DirectCommitter commits each write in a transaction of its own, then
// runs after: sqlstore's default, for an engine without a Committer of its
// own (SQLite and PostgreSQL group their commits, GroupCommitter).
type DirectCommitter struct {
	DB    Store
	After AfterCommit
}

// Commit implements Committer.
func (c DirectCommitter) Commit(ctx context.Context, w *Write) error { return c.Submit(ctx, w)() }

// Submit implements Committer; the write is committed before it returns.
func (c DirectCommitter) Submit(ctx context.Context, w *Write) (wait func() error) {
	ctx = WithPipeline(ctx)
	err := c.DB.InTx(ctx, func(tx Store) error { return w.Run(ctx, tx) })
	if err == nil && c.After != nil {
		c.After(w)
	}
	return func() error { return err }
}
