package turns

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// DispatcherOptions tune a Dispatcher; zero values take the defaults.
type DispatcherOptions struct {
	// Workers bounds how many conversations run at once (default
	// DefaultWorkers(Leases)).
	Workers int
	// Leases makes a node take a store lease on a conversation before
	// running its turns, so that across processes sharing a database only
	// one runs a conversation at a time. Wiring turns it on for PostgreSQL.
	Leases bool
	// LeaseTTL is how long a lease lasts unless renewed (default
	// DefaultLeaseTTL); it is renewed every quarter of that while a
	// conversation runs, so a dead or stalled node's conversations move to
	// another node about LeaseTTL after its last renewal.
	LeaseTTL time.Duration
	// Alone, when set, reports that no other node shares the database
	// (realtime.PGBroker.Alone). With leases, a run then ends without
	// reading its conversation's turns again: only another node's turns
	// could be there, and that node, refused the lease, tries them again
	// itself (Queue.done) until this one releases it.
	Alone func() bool
	// TurnTimeout bounds one turn (default 60 s).
	TurnTimeout time.Duration
	// Sweep is the interval of the scan for pending turns nobody runs (a
	// crashed node's, a lost wake-up); default 10 s, with leases an eighth
	// of LeaseTTL (at least 100 ms) so that a dead node's conversations are
	// found as soon as its leases expire or are released (one small query:
	// the turns table holds only pending turns).
	Sweep time.Duration
	// Node names this process as a lease holder (default:
	// model.NewNodeID()).
	Node string
	// Observer, when set, is told about every turn that ran (metrics).
	Observer TurnObserver
	// FoldWithin is how long a user's message waits for its bot's turn to
	// commit with it (Fold; default DefaultFoldWithin, negative: never).
	// With leases, only where this node holds the conversation's lease
	// parked by its last run.
	FoldWithin time.Duration
	// ClaimWithin is how long a user's message waits at least for its
	// conversation's last run to end (its one turn left), to fold after
	// it, rather than commit alone behind it (default: FoldWithin; with
	// leases at least DefaultClaimWithin). It waits longer when runs' ends
	// take longer (Dispatcher.claimWithin).
	ClaimWithin time.Duration
}

// DefaultClaimWithin is the least ClaimWithin with leases (PostgreSQL).
// There a run's end includes its completion's commit, a round trip that
// often outlasts FoldWithin: a message that then commits alone leaves its
// own turn to the next run, and a client that sends its next message once
// answered finds that run going in turn. parley-bench, side by side on
// PostgreSQL: in the closed loop 74–92 % of messages folded with
// FoldWithin, 79–98 % with 10 ms, and the medians of seven runs were 1.11×
// the rate and 0.82× PostgreSQL's CPU per message; at 1,000/s fewer
// refusals in five runs of six.
const DefaultClaimWithin = 10 * time.Millisecond

// TurnObserver is told about every turn the dispatcher ran to its end
// (how long it took and whether it failed), about every conversation a
// worker took (how long it waited in the queue for one) and about every
// user's message Fold committed: with its bot's answer (alone is ""), or
// alone, and why (one of the Alone* reasons).
type TurnObserver interface {
	TurnRan(d time.Duration, failed bool)
	RunWaited(d time.Duration)
	MessageStored(alone string)
}

// DefaultLeaseTTL is the conversation lease's default TTL: a takeover
// comes about 2 s after a node's last renewal (plus at most a sweep).
const DefaultLeaseTTL = 2 * time.Second

// leaseName is the store lease that keeps a conversation's turns on one
// node.
func leaseName(ref model.ConversationRef) string {
	return leasePrefix + ref.BotID + ":" + ref.ConversationID
}

const leasePrefix = "turns:"

// Dispatcher runs pending turns: one at a time and in order within a
// conversation, conversations in parallel on a bounded pool. A turn is
// completed (deleted) only after it ran, so a crash re-runs at most the
// turn in flight.
type Dispatcher struct {
	store  store.Store
	commit store.Committer
	queue  *Queue
	bots   Resolver
	log    *slog.Logger
	o      DispatcherOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// retries counts the deliveries of a turn that ended in RetryLater.
	retryMu sync.Mutex
	retries map[turnKey]int

	// held are the conversations whose lease this node holds (readyz).
	heldMu sync.Mutex
	held   map[model.ConversationRef]time.Time

	// parked are leases kept after their run (lease.go) for linger
	// (leaseLinger; tests lengthen it); releasing the ones being released.
	linger      time.Duration
	parkMu      sync.Mutex
	parked      map[model.ConversationRef]*parked
	releasing   map[model.ConversationRef]*releasing
	parkStopped bool

	// folds are the Folds under way (fold.go), which Stop waits for.
	foldMu       sync.Mutex
	foldStopped  bool
	foldsRunning int
	folds        sync.WaitGroup
	kept         keptStarts // what folded turns left for the next (foldstart.go)
	// maxClaim bounds a Fold's wait for its conversation's run
	// (maxClaimWithin; tests lengthen it).
	maxClaim time.Duration
}

type turnKey struct {
	ref model.ConversationRef
	seq int64
}

// DefaultWorkers is the number of turn workers when DispatcherOptions
// gives none: 8 per core, since turns mostly wait (on the store, on bots'
// calls). With leases (PostgreSQL, over the network) 16 per core: a
// conversation's run there also waits for the lease, the read of its turns,
// the commit of their completions and a read again, so 8 per core left the
// cores idle while the door held messages back because the workers were
// all taken (parley-bench, PostgreSQL, the door on, 16 against 32 workers
// on two cores, three rounds: 1.15x the closed loop's rate, 0.93x
// PostgreSQL's CPU per message, 316 refusals instead of 1,859 at 2,000
// messages a second). On SQLite 32 workers measured 0.92x.
func DefaultWorkers(leases bool) int {
	if leases {
		return 16 * runtime.GOMAXPROCS(0)
	}
	return 8 * runtime.GOMAXPROCS(0)
}

// NewDispatcher returns a dispatcher that runs the turns of the
// conversations put in queue through the Bot that bots returns; what bots
// send is stored through commit. Call Start, and Stop on shutdown.
func NewDispatcher(st store.Store, commit store.Committer, queue *Queue, bots Resolver, log *slog.Logger, o DispatcherOptions) *Dispatcher {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers(o.Leases)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 60 * time.Second
	}
	if o.FoldWithin == 0 {
		o.FoldWithin = DefaultFoldWithin
	}
	if o.ClaimWithin <= 0 {
		o.ClaimWithin = o.FoldWithin
		if o.Leases {
			o.ClaimWithin = max(o.FoldWithin, DefaultClaimWithin)
		}
	}
	if o.Sweep <= 0 {
		o.Sweep = 10 * time.Second
		if o.Leases {
			o.Sweep = max(o.LeaseTTL/8, 100*time.Millisecond)
		}
	}
	if o.Node == "" {
		o.Node = model.NewNodeID()
	}
	d := &Dispatcher{store: st, commit: commit, queue: queue, bots: bots, log: log, o: o, retries: map[turnKey]int{}, held: map[model.ConversationRef]time.Time{},
		linger: leaseLinger, maxClaim: maxClaimWithin, parked: map[model.ConversationRef]*parked{}, releasing: map[model.ConversationRef]*releasing{}}
	fold := d.Fold
	queue.fold.Store(&fold)
	return d
}

// Start runs the workers and recovers the turns left pending (by a crash
// or a stop), then keeps sweeping for orphans.
func (d *Dispatcher) Start(ctx context.Context) {
	d.ctx, d.cancel = context.WithCancel(ctx)
	for range d.o.Workers {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.work() }()
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(d.o.Sweep)
		defer t.Stop()
		var pruned time.Time
		for {
			d.recover()
			if d.o.Leases && time.Since(pruned) >= pruneEvery {
				d.prune()
				pruned = time.Now()
			}
			select {
			case <-d.ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Node is the lease holder name of this dispatcher's node.
func (d *Dispatcher) Node() string { return d.o.Node }

// Held lists the conversations whose lease this node holds now, longest
// held first (at most limit), and how many there are.
func (d *Dispatcher) Held(limit int) (refs []model.ConversationRef, n int) {
	d.heldMu.Lock()
	defer d.heldMu.Unlock()
	type h struct {
		ref   model.ConversationRef
		since time.Time
	}
	all := make([]h, 0, len(d.held))
	for r, t := range d.held {
		all = append(all, h{r, t})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].since.Before(all[j].since) })
	for _, x := range all[:min(limit, len(all))] {
		refs = append(refs, x.ref)
	}
	return refs, len(all)
}

// Stop stops taking work, interrupts running turns and waits for the
// workers, which release their leases as they end: another node takes
// the conversations over at once. Interrupted turns stay pending and run
// again there or on the next start.
func (d *Dispatcher) Stop() {
	if refs, n := d.Held(20); n > 0 {
		conv := make([]string, len(refs))
		for i, r := range refs {
			conv[i] = r.BotID + "/" + r.ConversationID
		}
		d.log.Info("turns: handing over", "node", d.o.Node, "held_conversations", n, "conversations", conv)
	}
	d.foldMu.Lock()
	d.foldStopped = true
	d.foldMu.Unlock()
	d.queue.close()
	if d.cancel != nil {
		d.cancel()
	}
	d.wg.Wait()
	d.folds.Wait()
	d.releaseParked()
}

func (d *Dispatcher) recover() {
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	var refs []model.ConversationRef
	var err error
	if d.o.Leases {
		// Only the conversations no live node holds: the frequent sweep
		// costs one query, not a lease attempt per busy conversation.
		refs, err = d.store.Signals().UnleasedPendingConversations(ctx, leasePrefix, 10000)
	} else {
		refs, err = d.store.Signals().PendingConversations(ctx, 10000)
	}
	if err != nil {
		if d.ctx.Err() == nil {
			d.log.Warn("turns: scanning pending conversations failed", "err", err)
		}
		return
	}
	for _, r := range refs {
		d.queue.Notify(r)
	}
}

// Released or expired conversation leases are deleted by every node once
// a minute (pruneEvery), pruneBatch rows a statement and at most
// pruneBatches statements a round, once they are pruneAfter old: a
// conversation taken again starts a lease epoch above its old ones
// (store.Leases.Prune), so fencing holds as long as the nodes' clocks
// agree within pruneAfter.
const (
	pruneEvery   = time.Minute
	pruneAfter   = time.Minute
	pruneBatch   = 1000
	pruneBatches = 10
)

func (d *Dispatcher) prune() {
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	total := 0
	for range pruneBatches {
		n, err := d.store.Leases().Prune(ctx, leasePrefix, time.Now().Add(-pruneAfter), pruneBatch)
		total += n
		if err != nil {
			if d.ctx.Err() == nil {
				d.log.Warn("turns: pruning leases failed", "err", err)
			}
			break
		}
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		d.log.Debug("turns: pruned conversation leases", "n", total)
	}
}

func (d *Dispatcher) work() {
	for {
		ref, since, ok := d.queue.take()
		if !ok {
			return
		}
		if d.o.Observer != nil {
			d.o.Observer.RunWaited(time.Since(since))
		}
		var wait time.Duration
		busy := d.runConversation(ref, &wait)
		if wait > 0 {
			d.queue.later(ref, wait)
		} else {
			d.queue.done(ref, busy)
		}
	}
}

// runConversation runs the conversation's pending turns until none is left.
// It reports busy when another node holds the conversation's lease.
// A turn whose bot is unreachable, or a database unavailable for now
// (store.Store.Transient), stops the run and sets *wait: the turns stay
// pending and the conversation is tried again after it.
func (d *Dispatcher) runConversation(ref model.ConversationRef, wait *time.Duration) (busy bool) {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	var fence *store.Fence
	var committed func(at time.Time, err error) // with leases
	if d.o.Leases {
		f, c, end, busy := d.lease(ctx, cancel, ref)
		if busy {
			return true
		}
		fence, committed = f, c
		defer end()
	}
	// A start kept by a fold is stale once turns run here: its last
	// turn's number is no longer the conversation's.
	d.kept.drop(ref)
	// fenced is the wait of a write fenced (and renewing the lease) since
	// at, which tells the lease its outcome. Without leases it is the
	// write's wait itself.
	fenced := func(at time.Time, wait func() error) func() error {
		if committed == nil {
			return wait
		}
		return func() error {
			err := wait()
			committed(at, err)
			return err
		}
	}
	// A turn's completion is queued as soon as it ran (it joins a group
	// commit with other conversations' writes) and is durable before the
	// conversation's next turn starts: a crash re-runs at most the turn in
	// flight.
	var completions []func() error
	storeDown := func(err error) {
		if d.store.Transient(err) && ctx.Err() == nil {
			*wait = max(*wait, storeRetry)
		}
	}
	flush := func() bool {
		ok := true
		for _, w := range completions {
			if err := w(); err != nil && ok {
				ok = false
				if ctx.Err() == nil {
					d.log.Warn("turns: completing turn failed", "err", err)
				}
				storeDown(err)
			}
		}
		completions = completions[:0]
		return ok
	}
	// The run's tail, from its last turn's end to the run's end (that
	// turn's completion committed), is what a Fold waiting for it waits
	// (claimWithin).
	var lastTurn time.Time
	defer func() {
		if flush() && !lastTurn.IsZero() {
			d.queue.tailRan(time.Since(lastTurn))
		}
	}()
	for ctx.Err() == nil {
		if !flush() {
			return false
		}
		// One read per batch of turns, with what they refer to.
		d.queue.reading(ref)
		turns, err := d.store.Signals().PendingTurnInputs(ctx, ref.BotID, ref.ConversationID, turnBatch)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("turns: reading pending turns failed", "err", err, "conversation", ref.ConversationID)
			}
			storeDown(err)
			return false
		}
		// A conversation in handoff (model.Handoff, read with the turns)
		// pauses the bot: its turns complete without running it. A turn
		// whose bot asked for a handoff pauses the rest of the batch.
		paused := len(turns) > 0 && turns[0].Handoff
		// A turn starts from the batch's read while every turn before it
		// in the batch kept what a turn starts with (startKeeper); after
		// one that may have changed it, each reads its own.
		kept := true
		for _, p := range turns {
			t := p.Turn
			if !kept {
				p.Start = nil
			}
			if ctx.Err() != nil || !flush() {
				return false
			}
			if paused {
				at := time.Now()
				completions = append(completions, fenced(at, d.skipTurn(context.WithoutCancel(ctx), t, fence)))
				continue
			}
			// On a stop the turn in flight gets a grace period to finish,
			// so a clean restart runs no turn twice.
			tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.TurnTimeout)
			stopTurn := context.AfterFunc(ctx, func() { time.AfterFunc(turnStopGrace, tcancel) })
			started := time.Now()
			key := turnKey{ref, t.Seq}
			out, err := d.runTurn(tctx, p, d.attempt(key), nil)
			stopTurn()
			interrupted := tctx.Err() != nil && ctx.Err() != nil
			tcancel()
			if interrupted {
				return false // cut short by a stop or a lost lease: the turn stays pending
			}
			var later *RetryLater
			if errors.As(err, &later) {
				// The bot or the database is unreachable: the turn stays
				// pending and the conversation waits (in order) for the
				// next try.
				delay := d.backoff(key)
				d.log.Warn("turns: turn could not run, retrying", "err", later.Err, "bot", t.BotID,
					"conversation", t.ConversationID, "seq", t.Seq, "in", delay)
				*wait = delay
				return false
			}
			d.forget(key)
			took := time.Since(started)
			d.turnEnded(t, took, err)
			if out != nil && out.handoff {
				paused = true
			}
			kept = kept && err == nil && out != nil && out.startKept
			run := &model.TurnRun{BotID: t.BotID, ConversationID: t.ConversationID, Seq: t.Seq, RanAt: started,
				Duration: took, Failed: err != nil}
			at := time.Now()
			completions = append(completions, fenced(at, d.completeTurn(context.WithoutCancel(ctx), t, out, run, fence)))
			lastTurn = at
		}
		if len(turns) < turnBatch && (!d.o.Leases || (d.o.Alone != nil && d.o.Alone())) {
			// All pending turns ran. A turn committed since the read has
			// notified the dispatcher (after its commit), which counted it
			// against the conversation: work() runs it again; no need to read
			// again to find nothing. With leases (several nodes), turns
			// committed by another node notify only that node, which is
			// refused the lease while this one runs: read again, unless
			// this node is alone (at 1,000 messages/s that read came after
			// 4 turns in 10; without it PostgreSQL spent 0.92-0.93x the
			// CPU per message, parley-bench, two runs side by side).
			return false
		}
		if len(turns) == 0 {
			return false
		}
	}
	return false
}

// Backoff of turns whose bot is unreachable: 250 ms doubling to 15 s.
const (
	retryFirst = 250 * time.Millisecond
	retryMax   = 15 * time.Second
)

func (d *Dispatcher) attempt(k turnKey) int {
	d.retryMu.Lock()
	defer d.retryMu.Unlock()
	return d.retries[k]
}

// backoff counts one more failed delivery of a turn and returns how long
// its conversation waits.
func (d *Dispatcher) backoff(k turnKey) time.Duration {
	d.retryMu.Lock()
	defer d.retryMu.Unlock()
	n := d.retries[k]
	d.retries[k] = n + 1
	delay := retryFirst
	for range n {
		if delay *= 2; delay >= retryMax {
			return retryMax
		}
	}
	return delay
}

func (d *Dispatcher) forget(k turnKey) {
	d.retryMu.Lock()
	delete(d.retries, k)
	d.retryMu.Unlock()
}

// storeRetry is how long a conversation waits after the database was
// unavailable for its turns.
const storeRetry = time.Second

// turnBatch is how many pending turns one read takes.
const turnBatch = 32

// turnStopGrace is how long a stopping dispatcher lets the turn in flight
// run before it is cut short.
const turnStopGrace = 5 * time.Second
