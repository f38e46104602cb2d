package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// DispatcherOptions tune a Dispatcher; zero values take the defaults.
type DispatcherOptions struct {
	// Workers bounds how many conversations run at once (default
	// 8 × GOMAXPROCS).
	Workers int
	// Leases makes a node take a store lease on a conversation before
	// running its turns, so that across processes sharing a database only
	// one runs a conversation at a time. Wiring turns it on for PostgreSQL.
	Leases bool
	// LeaseTTL is how long a lease lasts unless renewed (default 15 s); it
	// is renewed every third of that while a conversation runs.
	LeaseTTL time.Duration
	// TurnTimeout bounds one turn (default 60 s).
	TurnTimeout time.Duration
	// Sweep is the interval of the scan for pending turns nobody runs (a
	// crashed node's, a lost wake-up); default 10 s.
	Sweep time.Duration
	// Node names this process as a lease holder (default random).
	Node string
}

// Dispatcher runs pending turns: one at a time and in order within a
// conversation, conversations in parallel on a bounded pool. A turn is
// completed (deleted) only after it ran, so a crash re-runs at most the
// turn in flight.
type Dispatcher struct {
	s   *Service
	o   DispatcherOptions
	log *slog.Logger

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []model.ConversationRef
	state  map[model.ConversationRef]*convState
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type convState struct {
	dirty   bool // notified while queued or running
	retries int  // lease attempts lost to another node in a row
}

// NewDispatcher returns a dispatcher for s; it registers itself as s's turn
// notifier. Call Start, and Stop on shutdown.
func NewDispatcher(s *Service, o DispatcherOptions) *Dispatcher {
	if o.Workers <= 0 {
		o.Workers = 8 * runtime.GOMAXPROCS(0)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 60 * time.Second
	}
	if o.Sweep <= 0 {
		o.Sweep = 10 * time.Second
	}
	if o.Node == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.Node = "node-" + hex.EncodeToString(b[:])
	}
	d := &Dispatcher{s: s, o: o, log: s.log, state: map[model.ConversationRef]*convState{}}
	d.cond = sync.NewCond(&d.mu)
	s.SetTurns(d)
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
		for {
			d.recover()
			select {
			case <-d.ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop stops taking work, interrupts running turns and waits for the
// workers. Interrupted turns stay pending and run again on the next start.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	d.closed = true
	d.cond.Broadcast()
	d.mu.Unlock()
	if d.cancel != nil {
		d.cancel()
	}
	d.wg.Wait()
}

func (d *Dispatcher) recover() {
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	refs, err := d.s.store.Chat().PendingConversations(ctx, 10000)
	if err != nil {
		if d.ctx.Err() == nil {
			d.log.Warn("turns: scanning pending conversations failed", "err", err)
		}
		return
	}
	for _, r := range refs {
		d.Notify(r)
	}
}

// Notify tells the dispatcher a conversation has new pending turns.
func (d *Dispatcher) Notify(ref model.ConversationRef) { d.notifyRetry(ref, 0) }

func (d *Dispatcher) work() {
	for {
		d.mu.Lock()
		for len(d.queue) == 0 && !d.closed {
			d.cond.Wait()
		}
		if d.closed {
			d.mu.Unlock()
			return
		}
		ref := d.queue[0]
		d.queue[0] = model.ConversationRef{}
		d.queue = d.queue[1:]
		st := d.state[ref]
		st.dirty = false
		d.mu.Unlock()

		busy := d.runConversation(ref)

		d.mu.Lock()
		if !busy {
			st.retries = 0
		}
		switch {
		case d.closed:
			delete(d.state, ref)
		case busy && st.retries < 20:
			// Another node holds the lease: it runs what is pending, but
			// may have looked before our turn was committed; look again
			// shortly. Past the retries, the sweep takes over.
			st.retries++
			delete(d.state, ref)
			time.AfterFunc(250*time.Millisecond, func() { d.notifyRetry(ref, st.retries) })
		case st.dirty:
			st.dirty = false
			d.queue = append(d.queue, ref) // to the back: fairness
			d.cond.Signal()
		default:
			delete(d.state, ref)
		}
		d.mu.Unlock()
	}
}

func (d *Dispatcher) notifyRetry(ref model.ConversationRef, retries int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if st := d.state[ref]; st != nil {
		st.dirty = true
		return
	}
	d.state[ref] = &convState{retries: retries}
	d.queue = append(d.queue, ref)
	d.cond.Signal()
}

// runConversation runs the conversation's pending turns until none is left.
// It reports busy when another node holds the conversation's lease.
func (d *Dispatcher) runConversation(ref model.ConversationRef) (busy bool) {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	if d.o.Leases {
		name := "turns:" + ref.BotID + ":" + ref.ConversationID
		ok, err := d.s.store.Leases().Acquire(ctx, name, d.o.Node, d.o.LeaseTTL)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("turns: lease failed", "err", err, "conversation", ref.ConversationID)
			}
			return true
		}
		if !ok {
			return true
		}
		defer func() {
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer rcancel()
			_ = d.s.store.Leases().Release(rctx, name, d.o.Node)
		}()
		// Renew while working; losing the lease stops this run at once.
		go func() {
			t := time.NewTicker(d.o.LeaseTTL / 3)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					ok, err := d.s.store.Leases().Acquire(ctx, name, d.o.Node, d.o.LeaseTTL)
					if err != nil || !ok {
						if ctx.Err() == nil {
							d.log.Warn("turns: lease lost", "err", err, "conversation", ref.ConversationID)
						}
						cancel()
						return
					}
				}
			}
		}()
	}
	// A turn's completion is queued as soon as it ran (it joins a group
	// commit with other conversations' writes) and is durable before the
	// conversation's next turn starts: a crash re-runs at most the turn in
	// flight.
	var completions []func() error
	flush := func() bool {
		ok := true
		for _, wait := range completions {
			if err := wait(); err != nil && ok {
				ok = false
				if ctx.Err() == nil {
					d.log.Warn("turns: completing turn failed", "err", err)
				}
			}
		}
		completions = completions[:0]
		return ok
	}
	defer flush()
	for ctx.Err() == nil {
		if !flush() {
			return false
		}
		// One read per batch of turns, with what they refer to.
		turns, err := d.s.store.Chat().PendingTurnInputs(ctx, ref.BotID, ref.ConversationID, turnBatch)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("turns: reading pending turns failed", "err", err, "conversation", ref.ConversationID)
			}
			return false
		}
		for _, p := range turns {
			t := p.Turn
			if ctx.Err() != nil || !flush() {
				return false
			}
			// On a stop the turn in flight gets a grace period to finish,
			// so a clean restart runs no turn twice.
			tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.TurnTimeout)
			stopTurn := context.AfterFunc(ctx, func() { time.AfterFunc(turnStopGrace, tcancel) })
			err := d.s.runTurn(tctx, p, true)
			stopTurn()
			interrupted := tctx.Err() != nil && ctx.Err() != nil
			tcancel()
			if interrupted {
				return false // cut short by a stop or a lost lease: the turn stays pending
			}
			if err != nil {
				// The turn ran and failed: it is not retried (a failing
				// bot would otherwise block its conversation forever).
				d.log.Warn("turns: bot failed", "err", err, "bot", t.BotID, "conversation", t.ConversationID, "seq", t.Seq)
			}
			completions = append(completions, d.s.completeTurn(context.WithoutCancel(ctx), t))
		}
		if len(turns) < turnBatch && !d.o.Leases {
			// All pending turns ran. A turn committed since the read has
			// notified the dispatcher (after its commit), which marked the
			// conversation dirty: work() runs it again; no need to read
			// again to find nothing. With leases (several nodes), turns
			// committed by another node notify only that node, which is
			// refused the lease while this one runs: read again.
			return false
		}
		if len(turns) == 0 {
			return false
		}
	}
	return false
}

// turnBatch is how many pending turns one read takes.
const turnBatch = 32

// turnStopGrace is how long a stopping dispatcher lets the turn in flight
// run before it is cut short.
const turnStopGrace = 5 * time.Second

// completeTurn queues the deletion of a turn that ran, in a group commit
// with other writes, and returns the wait for its outcome.
func (s *Service) completeTurn(ctx context.Context, t *model.Turn) (wait func() error) {
	return s.submit(ctx, &commitWrite{write: func(ctx context.Context, tx store.Store) error {
		return tx.Chat().CompleteTurn(ctx, t.BotID, t.ConversationID, t.Seq)
	}})
}
