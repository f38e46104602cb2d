package turns

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Conversation leases (several nodes on one PostgreSQL database): a node
// runs a conversation's turns only while it holds the conversation's
// store lease, renewed while it works and fenced at every turn's
// completion.
//
// A lease is kept for leaseLinger after its conversation ran out of
// turns ("parked"), without a worker and without renewals: a user's next
// message usually comes within that time, and its run then reuses the
// lease instead of taking and releasing it again, two committed
// transactions per message fewer. A parked lease is reused only while it
// was renewed less than a quarter TTL ago, so it has most of its TTL
// left; it is released when the linger ends, or at once on Stop (the
// handover). Another node that got a message of a parked conversation
// finds it busy and retries after 250 ms (Queue.done), by when the lease
// is free: cross-node messages of one conversation wait at most about
// that long.
const leaseLinger = 300 * time.Millisecond

// parked is a lease kept after its run.
type parked struct {
	epoch   int64
	renewed time.Time
	timer   *time.Timer
}

// lease takes (or reuses) ref's lease and renews it until ctx ends;
// cancel is called when the lease is lost. The fence renews it too with
// every write it fences (Fence.Renew); committed is told of such a write's
// outcome, with the time before it was submitted: once it committed, the
// run's own renewals and the next run's Take are left out while turns
// commit (a conversation that gets a message at least every leaseLinger
// keeps its lease without a lease statement of its own); once it was
// fenced off, the lease is another node's and is not parked. end, called
// once the run is over and ctx cancelled, parks or releases it. busy
// reports that another node holds it.
func (d *Dispatcher) lease(ctx context.Context, cancel context.CancelFunc, ref model.ConversationRef) (fence *store.Fence, committed func(at time.Time, err error), end func(), busy bool) {
	return d.leaseFrom(ctx, cancel, ref, d.unpark(ref))
}

// leaseFrom is lease with ref's parked lease already taken out of the
// parked ones (unpark): p, or nil when none was.
func (d *Dispatcher) leaseFrom(ctx context.Context, cancel context.CancelFunc, ref model.ConversationRef, p *parked) (fence *store.Fence, committed func(at time.Time, err error), end func(), busy bool) {
	name := leaseName(ref)
	var epoch int64
	// last is when the lease was last renewed (UnixNano): by a Take, a
	// Renew or a fenced write.
	var last atomic.Int64
	if d.reusable(p) {
		epoch = p.epoch
		last.Store(p.renewed.UnixNano())
	} else {
		l, ok, err := d.store.Leases().Take(ctx, name, d.o.Node, d.o.LeaseTTL)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("turns: lease failed", "err", err, "conversation", ref.ConversationID)
			}
			// The lease may be this node's all the same: parked, too old
			// to reuse, until it expires, or taken by a Take that timed
			// out (a Take runs to its end whatever ctx says, so that a
			// Stop in the middle of one hands the lease over: sqlstore's
			// Take). Released (a no-op if not), another node need not
			// wait for it to expire.
			if p != nil || ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				d.release(ref, nil)
			} else {
				d.forgetHeld(ref)
			}
			return nil, nil, nil, true
		}
		if !ok {
			d.forgetHeld(ref)
			return nil, nil, nil, true
		}
		if l.From != "" {
			d.log.Info("turns: conversation taken over", "bot", ref.BotID, "conversation", ref.ConversationID,
				"from_node", l.From, "to_node", d.o.Node, "epoch", l.Epoch,
				"gap_s", time.Since(l.FromExpired.Add(-d.o.LeaseTTL)).Seconds(),
				"after_expiry_s", time.Since(l.FromExpired).Seconds())
		}
		epoch = l.Epoch
		last.Store(time.Now().UnixNano())
	}
	since := func() time.Duration { return time.Since(time.Unix(0, last.Load())) }
	d.heldMu.Lock()
	if _, ok := d.held[ref]; !ok {
		d.held[ref] = time.Now()
	}
	d.heldMu.Unlock()
	// Renew while working (one UPDATE a quarter TTL after the last renewal,
	// a fenced write's included); a lease taken over stops this run at once, and
	// the fence on the turn's completion refuses whatever it still tries to
	// commit. A failing renewal is retried until the lease would have
	// expired.
	lost := false
	var fencedOff atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A quarter TTL after the last renewal, whoever made it: a fenced
		// write's renewal puts the next one off.
		every := d.o.LeaseTTL / 4
		t := time.NewTimer(every - since())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if wait := every - since(); wait > 0 {
					t.Reset(wait)
					continue
				}
				at := time.Now()
				ok, err := d.store.Leases().Renew(ctx, name, d.o.Node, epoch, d.o.LeaseTTL)
				if err == nil && ok {
					last.Store(at.UnixNano())
					t.Reset(every)
					continue
				}
				if err != nil && since() < d.o.LeaseTTL {
					t.Reset(every)
					continue
				}
				if ctx.Err() == nil {
					d.log.Warn("turns: lease lost", "err", err, "conversation", ref.ConversationID, "node", d.o.Node)
				}
				lost = true
				cancel()
				return
			}
		}
	}()
	end = func() {
		cancel()
		<-done // lost is the renewer's until it returned
		if lost || fencedOff.Load() {
			d.forgetHeld(ref)
			return
		}
		if d.ctx.Err() == nil && d.park(ref, epoch, time.Unix(0, last.Load())) {
			return
		}
		d.release(ref, nil)
	}
	committed = func(at time.Time, err error) {
		if errors.Is(err, store.ErrFenced) {
			fencedOff.Store(true)
			return
		}
		for err == nil {
			old := last.Load()
			if at.UnixNano() <= old || last.CompareAndSwap(old, at.UnixNano()) {
				return
			}
		}
	}
	return &store.Fence{Name: name, Holder: d.o.Node, Epoch: epoch, Renew: d.o.LeaseTTL}, committed, end, false
}

// takeWithWrite is lease for a conversation whose lease was free when
// looked at (Leases.Free, which read its epoch, after): the first fenced
// write that commits the run's work takes it in its own transaction
// (Fence.Take, at this clock's microseconds, or above after where this
// clock is behind the node's that set it), with no Take committed before
// the run. Until such a write committed, the lease is not this node's:
// committed tells of it, end then parks the lease (or releases it) as
// lease's end does.
func (d *Dispatcher) takeWithWrite(ref model.ConversationRef, after int64) (fence *store.Fence, committed func(at time.Time, err error), end func()) {
	epoch := max(time.Now().UnixMicro(), after+1)
	var took atomic.Int64 // when the write that took it was submitted (UnixNano; 0: none)
	fence = &store.Fence{Name: leaseName(ref), Holder: d.o.Node, Epoch: epoch, Renew: d.o.LeaseTTL, Take: true}
	committed = func(at time.Time, err error) {
		if err == nil && took.CompareAndSwap(0, at.UnixNano()) {
			d.heldMu.Lock()
			d.held[ref] = at
			d.heldMu.Unlock()
		}
	}
	end = func() {
		at := took.Load()
		if at == 0 {
			return
		}
		if d.ctx.Err() == nil && d.park(ref, epoch, time.Unix(0, at)) {
			return
		}
		d.release(ref, nil)
	}
	return fence, committed, end
}

// mayBeFree tells whether ref's lease may be free for a folded commit to
// take, and the epoch it has (Leases.Free, a read). A node alone on the
// database (Alone) does not read: another holder is then a node gone (or
// one not heard of yet), whose lease the fenced take refuses, and the
// message then commits alone, its turn left to the queue's run (a Take:
// a takeover, or the other node's), as a race lost to another node is.
// The take's epoch is then this clock's, which an epoch ahead of it
// refuses the same way.
func (d *Dispatcher) mayBeFree(ref model.ConversationRef) (free bool, epoch int64) {
	if d.o.Alone != nil && d.o.Alone() {
		return true, 0
	}
	free, epoch, err := d.store.Leases().Free(d.ctx, leaseName(ref))
	return err == nil && free, epoch
}

// reusable tells whether a parked lease was renewed recently enough to
// be used as it is (a quarter TTL ago at most: most of its TTL is left).
func (d *Dispatcher) reusable(p *parked) bool {
	return p != nil && time.Since(p.renewed) < d.o.LeaseTTL/4
}

// park keeps ref's lease for d.linger (leaseLinger); false when the
// dispatcher is stopping (the caller releases it).
func (d *Dispatcher) park(ref model.ConversationRef, epoch int64, renewed time.Time) bool {
	d.parkMu.Lock()
	defer d.parkMu.Unlock()
	if d.parkStopped {
		return false
	}
	p := &parked{epoch: epoch, renewed: renewed}
	p.timer = time.AfterFunc(d.linger, func() { d.expire(ref, p) })
	d.parked[ref] = p
	return true
}

// unpark takes ref's parked lease, if any, waiting for a release of it in
// progress: a Take must not be undone by an older Release. A parked
// lease's release still waiting for its batch is called off: the lease,
// never released, is taken as it was parked.
func (d *Dispatcher) unpark(ref model.ConversationRef) *parked {
	for {
		d.parkMu.Lock()
		if r, ok := d.releasing[ref]; ok {
			if r.callOff != nil {
				r.callOff()
			}
			d.parkMu.Unlock()
			<-r.done
			d.parkMu.Lock()
			p := r.kept
			r.kept = nil
			d.parkMu.Unlock()
			if p != nil {
				return p
			}
			continue
		}
		p := d.parked[ref]
		if p != nil {
			delete(d.parked, ref)
			p.timer.Stop()
		}
		d.parkMu.Unlock()
		return p
	}
}

// expire releases a lease whose linger ended unless it was reused.
func (d *Dispatcher) expire(ref model.ConversationRef, p *parked) {
	d.parkMu.Lock()
	if d.parked[ref] != p {
		d.parkMu.Unlock()
		return
	}
	delete(d.parked, ref)
	d.parkMu.Unlock()
	d.release(ref, p)
}

// releasing is a release of a lease in progress (release).
type releasing struct {
	done chan struct{}
	// callOff, set for a parked lease's release, cancels it; kept is then
	// the parked lease when the release was dropped before its batch
	// began (the lease is still this node's), for unpark.
	callOff func()
	kept    *parked
}

// release ends this node's lease on ref; unpark waits for it. The release
// is a write of the conversation's group commit (a local write): batched
// with other writes, not a transaction and a WAL flush of its own, and
// ordered with the conversation's writes. p is the parked lease released
// at the end of its linger (nil for any other release): a message that
// comes while its release waits for its batch calls the release off and
// keeps the lease (unpark).
func (d *Dispatcher) release(ref model.ConversationRef, p *parked) {
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	r := &releasing{done: make(chan struct{})}
	var calledOff atomic.Bool
	if p != nil {
		r.callOff = func() {
			calledOff.Store(true)
			rcancel()
		}
	}
	d.parkMu.Lock()
	d.releasing[ref] = r
	d.parkMu.Unlock()
	name := leaseName(ref)
	err := d.commit.Commit(rctx, &store.Write{Ref: ref, Local: true, Apply: func(ctx context.Context, tx store.Store) error {
		return tx.Leases().Release(ctx, name, d.o.Node)
	}})
	// A write is dropped with its context's error only before its batch
	// began (store.Committer): then nothing was written.
	kept := calledOff.Load() && errors.Is(err, context.Canceled)
	if !kept {
		d.forgetHeld(ref)
	}
	d.parkMu.Lock()
	if kept {
		r.kept = p
	}
	delete(d.releasing, ref)
	d.parkMu.Unlock()
	close(r.done)
}

// releaseParked releases every parked lease at once (Stop: the handover)
// and parks no more.
func (d *Dispatcher) releaseParked() {
	d.parkMu.Lock()
	d.parkStopped = true
	refs := make([]model.ConversationRef, 0, len(d.parked))
	for ref, p := range d.parked {
		p.timer.Stop()
		delete(d.parked, ref)
		refs = append(refs, ref)
	}
	d.parkMu.Unlock()
	for _, ref := range refs {
		d.release(ref, nil)
	}
}

func (d *Dispatcher) forgetHeld(ref model.ConversationRef) {
	d.heldMu.Lock()
	delete(d.held, ref)
	d.heldMu.Unlock()
}
