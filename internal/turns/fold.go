package turns

// A user's message and its bot's answer in one commit (Dispatcher.Fold).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// DefaultFoldWithin is how long a user's message waits for its bot's
// turn to commit with it, when DispatcherOptions gives none: a code bot's
// turn takes a fraction of a millisecond (parley-bench's echo bot: p99
// about 1 ms), one that calls out takes longer and commits apart.
const DefaultFoldWithin = 5 * time.Millisecond

// maxFolds bounds the folds running at once, per turn worker: a
// backstop; the door's bound is what holds messages back (foldBegin).
const maxFolds = 4

// Why a user's message committed without its bot's answer
// (TurnObserver.MessageStored): what an operator reads to tell why the
// fold does not happen.
const (
	AloneOff     = "off"      // folding is off, or the bot does not fold (a workflow bot, an SDK bot)
	AloneFull    = "full"     // maxFolds were running already
	AloneBusy    = "busy"     // its conversation had turns to run, or a message being stored
	AloneLease   = "lease"    // another node holds the conversation's lease, or taking it failed (several nodes)
	AloneNotIdle = "not_idle" // its conversation had a turn pending in the store
	AloneSlow    = "slow"     // its turn took longer than FoldWithin
	AloneOutside = "outside"  // its turn stepped outside (a Runtime API call, a read)
	AloneRetry   = "retry"    // its turn must run again (its bot or the database unavailable)
	AloneRefused = "refused"  // the commit with the answer failed, or a turn came in between
)

// stored tells the observer how a user's message committed.
func (d *Dispatcher) stored(alone string) {
	if d.o.Observer != nil {
		d.o.Observer.MessageStored(alone)
	}
}

// foldable is a Bot whose turn may run before its message is committed:
// it steps outside what its completion holds only through its turn's
// effectGate (codeBot: its host's Runtime API calls and reads).
type foldable interface{ foldable() }

// Fold commits a user's message: w is its write (the message, its signal
// and its turn), m the message.
//
// When the conversation is idle, here and in the store, and its bot is
// foldable, the turn runs first, on what it would read once committed,
// and the message and the turn's completion commit in one transaction
// (store.Write.Then): one commit instead of two, and no read of the turn
// in between. The turn has FoldWithin to end. Past that, or as soon as it
// steps outside what its completion holds (a Runtime API call, a read),
// the message commits alone and the turn goes on as any other, its
// completion committed on its own. A turn that came in between (whatever
// wrote it) leaves this one pending in the same transaction, its effects
// never stored, and the dispatcher runs it again, in order.
//
// With leases (several nodes on PostgreSQL), a message folds only under
// its conversation's lease: parked here by the conversation's last run,
// or, where the lease is free (a conversation's first message, or one
// after a pause longer than the linger), taken by the folded commit
// itself (Fence.Take: no commit of a Take before the turn; with 100
// conversations starting at 1,000 messages/s on PostgreSQL, those Takes
// were most of the replies' first-second tail, README, Performance).
// Otherwise (an expired lease, a takeover) it is taken first, as the
// queue's run takes it. The folded commit is fenced by the lease and
// renews it. A fence refused (taken over, or taken by another node
// first) leaves the message committed alone, its turn pending for the
// holder; a lease another node holds, the same at once. A turn whose
// lease was to be taken by its commit takes it before its message commits
// alone or it steps outside (hold). A kept start is checked in the commit
// as on one node: what another node changed meanwhile (a state, a turn of
// its own) leaves the turn pending.
func (d *Dispatcher) Fold(ctx context.Context, w *store.Write, m *model.Message) error {
	if d.o.FoldWithin <= 0 || w.Turn == nil || w.Then != nil || m == nil {
		if w.Turn != nil && m != nil {
			d.stored(AloneOff)
		}
		return d.commit.Commit(ctx, w)
	}
	ref := w.Conversation()
	bot, err := d.bots(ctx, ref.BotID)
	if _, ok := bot.(foldable); err != nil || !ok {
		d.stored(AloneOff)
		return d.commitAlone(ctx, ref, w)
	}
	if !d.foldBegin() {
		d.stored(AloneFull)
		return d.commitAlone(ctx, ref, w)
	}
	if !d.claim(ctx, ref) {
		d.foldEnd()
		d.stored(AloneBusy)
		return d.commitAlone(ctx, ref, w)
	}
	f := &fold{d: d, w: w, ref: ref}
	if d.o.Leases && !f.lease() {
		f.end()
		d.stored(AloneLease)
		return d.commitAlone(ctx, ref, w)
	}
	return f.run(ctx, m)
}

// commitAlone commits a user's message that does not fold. Until it is
// committed (and its turn notified) no Fold claims its conversation
// (Queue.store): one would read a last turn number about to be stale. And
// it is submitted after the message of a Fold that holds the conversation
// (Queue.unsentOf, waited for at most FoldWithin and a quarter second): an
// earlier submission would be stored before a message sent before it, and
// take the turn number that fold's answer expects (on PostgreSQL a check
// that fails the whole batch).
func (d *Dispatcher) commitAlone(ctx context.Context, ref model.ConversationRef, w *store.Write) error {
	defer d.queue.store(ref)()
	if unsent := d.queue.unsentOf(ref); unsent != nil {
		closedWithin(ctx, unsent, d.o.FoldWithin+250*time.Millisecond)
	}
	return d.commit.Commit(ctx, w)
}

// submit commits a Fold's message write, telling the queue once it is
// submitted (Queue.sent).
func (f *fold) submit(ctx context.Context) error {
	wait := f.d.commit.Submit(ctx, f.w)
	f.d.queue.sent(f.ref)
	return wait()
}

// claim claims the conversation for a Fold. A conversation whose run has
// one turn left to end (the previous message's, which did not fold) is
// waited for, at most ClaimWithin: committed now, the message would give
// that run a turn more, whose answer then comes from another commit, and
// the conversation's next messages would find it running again (a client
// that sends its next message once createMessage answered keeps it out
// of the fold for good: on PostgreSQL one message in three folded in
// parley-bench's closed loop).
//
// A run may end with the conversation queued again (a turn notified twice,
// by a commit and by the sweep): the claim then waits for that run too,
// within the same ClaimWithin.
func (d *Dispatcher) claim(ctx context.Context, ref model.ConversationRef) bool {
	deadline := time.Now().Add(d.claimWithin())
	for {
		ok, idle := d.queue.claimOrWait(ref)
		if ok || idle == nil {
			return ok
		}
		left := time.Until(deadline)
		if left <= 0 || !closedWithin(ctx, idle, left) {
			return false
		}
	}
}

// maxClaimWithin bounds how long a claim waits for a run whose end takes
// long (claimWithin): the most it adds to a message's commit.
const maxClaimWithin = 50 * time.Millisecond

// claimWithin is how long a claim waits for its conversation's run: at
// least ClaimWithin, and twice the moving average of runs' tails (from
// their last turn's end to theirs: mostly that turn's completion commit),
// up to maxClaimWithin (Dispatcher.maxClaim). A fixed bound suits one
// machine's commits: where they take longer (a loaded machine, a remote
// database), a message that finds the run going would commit alone, and
// its turn would make the next message find a run going in turn, a chain
// that kept 22-60 % of PostgreSQL's closed-loop messages out of the fold
// on a machine whose runs' ends took 20-40 ms.
func (d *Dispatcher) claimWithin() time.Duration {
	return max(d.o.ClaimWithin, min(2*d.queue.runTail(), d.maxClaim))
}

// closedWithin waits for ch to be closed, at most within or until ctx
// ends, and tells whether it was.
func closedWithin(ctx context.Context, ch <-chan struct{}, within time.Duration) bool {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// foldBegin counts a fold in, unless the dispatcher stops (or never
// started), or maxFolds run already (the node is far behind: its
// messages then go through the queue). A fold waits in no queue: the
// door sees its age instead (Queue.delayAndTurn), and holds new messages
// back once the oldest fold has taken longer than the door's bound.
func (d *Dispatcher) foldBegin() bool {
	d.foldMu.Lock()
	defer d.foldMu.Unlock()
	if d.ctx == nil || d.foldStopped || d.foldsRunning >= maxFolds*d.o.Workers {
		return false
	}
	d.foldsRunning++
	d.folds.Add(1)
	return true
}

// foldEnd counts a fold out.
func (d *Dispatcher) foldEnd() {
	d.foldMu.Lock()
	d.foldsRunning--
	d.foldMu.Unlock()
	d.folds.Done()
}

// fold is one message's Fold, from its conversation's claim to its
// release.
type fold struct {
	d   *Dispatcher
	w   *store.Write
	ref model.ConversationRef

	once     sync.Once
	aloneErr error // the message's commit without the turn (once alone)
	alone    bool
	// completed is set when the fold completed the turn of a message
	// committed alone: the queue's notification of that turn needs no run.
	completed bool
	// kept is the start the turn began from when its conversation's last
	// turn kept it (keptStarts), not read.
	kept *keptStart

	// With leases: the fence of the conversation's lease, what tells the
	// lease of a fenced write's outcome, and what parks it again.
	fence     *store.Fence
	committed func(at time.Time, err error)
	endLease  func()
	// taking: the lease is to be taken by the folded commit (Fence.Take);
	// lost: hold found it another node's. Both under holdMu.
	holdMu sync.Mutex
	taking bool
	lost   bool
}

// lease reuses the conversation's lease this node parked after its last
// run; or, where the lease is free (or may be: mayBeFree), leaves it for
// the folded commit to take (takeWithWrite); or else takes it, renewing
// it while the fold runs. False when another node holds it or taking it
// failed (the message then goes through the queue).
func (f *fold) lease() bool {
	d := f.d
	p := d.unpark(f.ref)
	if p == nil {
		if free, epoch := d.mayBeFree(f.ref); free {
			f.fence, f.committed, f.endLease = d.takeWithWrite(f.ref, epoch)
			f.taking = true
			return true
		}
	}
	return f.leaseFrom(p)
}

// leaseFrom takes the lease, or reuses p (Dispatcher.leaseFrom), for the
// fold: false, and the fold's lease left as it was, when another node
// holds it or taking it failed.
func (f *fold) leaseFrom(p *parked) bool {
	ctx, cancel := context.WithCancel(f.d.ctx)
	fence, committed, end, busy := f.d.leaseFrom(ctx, cancel, f.ref, p)
	if busy {
		cancel()
		return false
	}
	f.fence, f.committed, f.endLease = fence, committed, end
	return true
}

// hold makes sure the fold holds its conversation's lease before its
// message commits alone with its turn still running, or the turn steps
// outside what its completion holds: a lease left for the folded commit
// to take is taken now, as lease takes it. False when another node holds
// it (lost): the message commits alone all the same, and its turn,
// never completed here, runs again where the lease is.
func (f *fold) hold() bool {
	f.holdMu.Lock()
	defer f.holdMu.Unlock()
	if f.taking {
		// The fence that was to take the lease goes either way.
		f.taking = false
		f.fence, f.committed, f.endLease = nil, nil, nil
		f.lost = !f.leaseFrom(nil)
	}
	return !f.lost
}

// isLost tells that hold found the lease another node's.
func (f *fold) isLost() bool {
	f.holdMu.Lock()
	defer f.holdMu.Unlock()
	return f.lost
}

// errLeaseElsewhere stops a turn at its first step outside when its
// conversation's lease turned out to be another node's (hold).
var errLeaseElsewhere = errors.New("turns: the conversation's lease is another node's; its turn runs there")

// gate is the fold's turn's effectGate: before the turn steps outside,
// its message commits, alone, under the conversation's lease.
func (f *fold) gate(ctx context.Context) error {
	if !f.hold() {
		return errLeaseElsewhere
	}
	return f.commitAlone(ctx)
}

// commitAlone commits the message without the turn's completion, once:
// the turn stays pending until its completion commits.
func (f *fold) commitAlone(ctx context.Context) error {
	f.once.Do(func() {
		f.alone = true
		f.aloneErr = f.submit(ctx)
	})
	return f.aloneErr
}

// end releases the conversation: a turn notified meanwhile runs next
// (not the fold's own, once it completed it).
func (f *fold) end() {
	if f.endLease != nil {
		f.endLease() // parked again before the conversation is released
	}
	own := 0
	if f.completed {
		own = 1
	}
	f.d.queue.release(f.ref, false, own)
	f.d.foldEnd()
}

// ran is a turn's outcome.
type ran struct {
	out     *turnOutput
	err     error
	started time.Time
	took    time.Duration
}

func (f *fold) run(ctx context.Context, m *model.Message) error {
	d := f.d
	idle, err := f.idleTurn(ctx, m.UserID)
	if err != nil || !idle.Idle {
		defer f.end()
		d.stored(AloneNotIdle)
		return f.commitAlone(ctx)
	}
	// The turn runs on copies: the message's write may commit (and number
	// its turn) while the turn runs.
	t, msg := *f.w.Turn, *m
	p := store.PendingTurn{Turn: &t, Message: &msg, Start: &idle.Start}
	folded := &foldedTurn{gate: f.gate}
	if f.kept != nil {
		folded.dialog = f.kept.dialog
	}
	// On a stop the turn gets the grace period a worker's turn gets.
	tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.TurnTimeout)
	stopTurn := context.AfterFunc(d.ctx, func() { time.AfterFunc(turnStopGrace, tcancel) })
	done := make(chan ran, 1)
	go func() {
		defer tcancel()
		defer stopTurn()
		started := time.Now()
		out, err := d.runTurn(tctx, p, 0, folded)
		done <- ran{out, err, started, time.Since(started)}
	}()
	timer := time.NewTimer(d.o.FoldWithin)
	select {
	case r := <-done:
		timer.Stop()
		defer f.end()
		if f.alone { // the turn stepped outside: its message is committed
			d.stored(AloneOutside)
			f.complete(ctx, r)
			return f.aloneErr
		}
		return f.commitFolded(ctx, r, idle)
	case <-timer.C:
		// The turn takes longer: its message commits now (under the
		// lease, or not at all with the turn: hold), its completion when
		// it ends.
		d.stored(AloneSlow)
		f.hold()
		err := f.commitAlone(ctx)
		go func() {
			defer f.end()
			f.complete(context.WithoutCancel(ctx), <-done)
		}()
		return err
	}
}

// idleTurn is what the message's turn starts with: the start its
// conversation's last turn kept for this user (keptStarts), or else read.
func (f *fold) idleTurn(ctx context.Context, userID string) (store.IdleTurn, error) {
	if ks, ok := f.d.kept.take(f.ref, userID); ok {
		f.kept = &ks
		return store.IdleTurn{Start: ks.start, Idle: true, TurnSeq: ks.seq}, nil
	}
	return f.d.store.States().GetIdleTurn(ctx, f.ref.BotID, userID, f.ref.ConversationID)
}

// commitFolded commits the message with the completion of its turn,
// which ran before the message was committed, from start.
func (f *fold) commitFolded(ctx context.Context, r ran, start store.IdleTurn) error {
	d, t := f.d, f.w.Turn
	if f.isLost() { // its gate found the lease another node's
		d.stored(AloneLease)
		return f.commitAlone(ctx)
	}
	if f.runsAgain(r) {
		d.stored(AloneRetry)
		return f.commitAlone(ctx)
	}
	then := r.out.completion(t, false)
	recordRun(then, t, r.run(t))
	f.w.Then, f.w.ThenSeq = then, start.TurnSeq+1
	if f.kept != nil {
		f.w.ThenIf = stillHolds(f.ref, *f.kept)
	}
	// A completion that changes more than its conversation's rows (a
	// user's or the bot's state) makes the whole write so: PostgreSQL's
	// group commit then commits it alone (store.Write.Local), unless all
	// it changes beyond them are states it lists, which a batch locks
	// first (store.Write.SharedStates).
	local := f.w.Local
	f.w.Local = local && then.Local
	if local {
		f.w.SharedStates, f.w.SharesMore = then.SharedStates, then.SharesMore
	}
	f.w.Fence = f.fence
	at := time.Now()
	err := f.submit(ctx)
	if f.committed != nil {
		f.committed(at, err)
	}
	if err == nil && f.w.ThenRan() && r.err == nil {
		// A turn that changed none of its start but its states: the next
		// one starts there (unless a worker runs the conversation first,
		// which drops it: Dispatcher.runConversation).
		if next, ok := r.out.nextStart(start.Start); ok {
			d.kept.put(f.ref, keptStart{userID: t.UserID, start: next, seq: t.Seq, dialog: r.out.nextDialog})
		}
	}
	if err != nil {
		// A lease another node took first, between Free and this commit:
		// a race, not a failure.
		raced := errors.Is(err, store.ErrFenced) && f.fence != nil && f.fence.Take
		// The rolled-back attempt's numbers are forgotten (a turn that
		// keeps a number is not numbered again).
		f.w.Then, f.w.ThenIf, f.w.Fence, f.w.Local, f.w.SharedStates, f.w.SharesMore = nil, nil, nil, local, nil, false
		f.w.Turn.Seq = 0
		if f.w.Signal != nil {
			f.w.Signal.Seq = 0
		}
		// The message alone, then: its turn runs again from the store,
		// where a failure to store its effects is dealt with
		// (Dispatcher.completeTurn).
		d.stored(AloneRefused)
		if err := f.commitAlone(ctx); err != nil {
			return err
		}
		if !raced {
			d.log.Warn("turns: the turn answered with its message could not be stored with it; it runs again", "err", err,
				"bot", t.BotID, "conversation", t.ConversationID)
		}
		return nil
	}
	if !f.w.ThenRan() {
		d.stored(AloneRefused) // a turn came in between: the message committed alone
		return nil
	}
	d.stored("")
	d.turnEnded(t, r.took, r.err)
	return nil
}

// complete ends a turn whose message committed alone: as the dispatcher
// does, its completion in a commit of its own; a turn that must run again
// (RetryLater) stays pending, and runs once the conversation is released.
func (f *fold) complete(ctx context.Context, r ran) {
	d, t := f.d, f.w.Turn
	if f.aloneErr != nil || f.runsAgain(r) || f.isLost() {
		return // no message stored, or a turn for the dispatcher (or the lease's holder) to run again
	}
	// The turn ran on what was idle when it began (read, or kept from the
	// conversation's last turn): it completes only if no turn came before
	// its message meanwhile (another node's; on one node the claim keeps
	// them out) and, from a kept start, that start still holds. Else it
	// stays pending and runs again, in order, from the store.
	checks := []func(ctx context.Context, tx store.Store) error{func(ctx context.Context, tx store.Store) error {
		return tx.Signals().RequireFirstTurn(ctx, t.BotID, t.ConversationID, t.Seq)
	}}
	if ks := f.kept; ks != nil {
		checks = append(checks, func(ctx context.Context, tx store.Store) error {
			return tx.States().RequireTurnStart(ctx, f.ref.BotID, ks.userID, f.ref.ConversationID, ks.start)
		})
	}
	at := time.Now()
	err := d.completeTurn(ctx, t, r.out, r.run(t), f.fence, checks...)()
	if f.committed != nil {
		f.committed(at, err)
	}
	if err != nil {
		if ctx.Err() == nil && !store.TurnRefused(err) {
			d.log.Warn("turns: completing turn failed", "err", err)
		}
		return
	}
	f.completed = true
	d.turnEnded(t, r.took, r.err)
}

// runsAgain tells a turn that did not run for good: its bot or the
// database unavailable (RetryLater), or cut short by a stop. It stays
// pending.
func (f *fold) runsAgain(r ran) bool {
	var later *RetryLater
	return errors.As(r.err, &later) || (r.err != nil && f.d.ctx.Err() != nil)
}

// run is the turn's run, for its completion to record.
func (r ran) run(t *model.Turn) *model.TurnRun {
	return &model.TurnRun{BotID: t.BotID, ConversationID: t.ConversationID, RanAt: r.started, Duration: r.took, Failed: r.err != nil}
}
