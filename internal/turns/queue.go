package turns

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Queue is the list of conversations with turns to run. The store's
// after-commit hook fills it (Notify) as soon as a turn is durable; the
// Dispatcher's workers take from it. A conversation is in the queue (or
// running) at most once: a Notify while it is queued or running is
// counted, and it goes to the back of the queue when its run ends.
type Queue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	queue []queued
	state map[model.ConversationRef]*convState
	// folding are the conversations claimed by a Fold, since when: a
	// fold waits in no queue, so its age is its delay (delayAndTurn).
	folding map[model.ConversationRef]time.Time
	// idle are closed when their conversation's run ends with nothing
	// left to run (claimOrWait).
	idle map[model.ConversationRef]chan struct{}
	// storing counts the messages of a conversation a Fold let commit on
	// their own, until they are committed: their turns are not notified
	// yet, and a claim meanwhile would read a last turn number about to
	// be stale (on PostgreSQL a stale number fails a whole batch).
	storing map[model.ConversationRef]int
	// unsent are closed once the Fold that claimed their conversation has
	// submitted its message's write (or ended).
	unsent map[model.ConversationRef]chan struct{}
	closed bool
	// doors are told when a worker takes a conversation or ends a run;
	// turn is a turn's run in ns, a moving average (the door's automatic
	// bound). Both are read and written without mu, which the workers
	// and the commits' notifications contend for.
	doors atomic.Pointer[[]*Door]
	turn  atomic.Int64
	// tail is a run's end after its last turn (that turn's completion
	// committed, the run released) in ns, a moving average: what a Fold
	// waiting for the run waits at most (Dispatcher.claimWithin).
	tail atomic.Int64
	// fold is the Fold of the dispatcher that runs the queue (set by
	// NewDispatcher).
	fold atomic.Pointer[func(context.Context, *store.Write, *model.Message) error]
}

// Fold hands a user's message write to the dispatcher that runs the
// queue (Dispatcher.Fold), which commits it, with its bot's answer when it
// can; ok is false when no dispatcher runs the queue, and the caller
// commits it.
func (q *Queue) Fold(ctx context.Context, w *store.Write, m *model.Message) (ok bool, err error) {
	f := q.fold.Load()
	if f == nil {
		return false, nil
	}
	return true, (*f)(ctx, w, m)
}

// queued is a conversation waiting for a worker, since when.
type queued struct {
	ref   model.ConversationRef
	since time.Time
}

type convState struct {
	notes   int // Notifies its run has not looked at (since its last take or read)
	retries int // lease attempts lost to another node in a row
}

// AfterCommit returns the store's after-commit hook of the turn pipeline:
// a committed write's signals are published (publish may be nil), then its
// conversation queued when it gave the bot a turn still pending (not one
// its Then completed: Dispatcher.Fold).
func (q *Queue) AfterCommit(publish func(...*model.Signal)) store.AfterCommit {
	return func(w *store.Write) {
		if sigs := w.Signals(); publish != nil && len(sigs) > 0 {
			publish(sigs...)
		}
		if w.Turn != nil && !w.ThenRan() {
			q.Notify(w.Conversation())
		}
	}
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	q := &Queue{state: map[model.ConversationRef]*convState{}, folding: map[model.ConversationRef]time.Time{},
		idle: map[model.ConversationRef]chan struct{}{}, storing: map[model.ConversationRef]int{},
		unsent: map[model.ConversationRef]chan struct{}{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Notify tells the queue a conversation has new pending turns.
func (q *Queue) Notify(ref model.ConversationRef) { q.notifyRetry(ref, 0) }

func (q *Queue) notifyRetry(ref model.ConversationRef, retries int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if st := q.state[ref]; st != nil {
		st.notes++
		return
	}
	q.state[ref] = &convState{retries: retries}
	q.queue = append(q.queue, queued{ref, time.Now()})
	q.cond.Signal()
}

// claim marks ref as running, as take does, when it is neither queued
// nor running (Dispatcher.Fold); the claimer ends its run with done.
func (q *Queue) claim(ref model.ConversationRef) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.state[ref] != nil || q.storing[ref] > 0 {
		return false
	}
	q.claimed(ref)
	return true
}

// claimed marks ref as claimed by a Fold (q.mu held).
func (q *Queue) claimed(ref model.ConversationRef) {
	q.state[ref] = &convState{}
	q.folding[ref] = time.Now()
	q.unsent[ref] = make(chan struct{})
}

// sent tells that the Fold holding ref has submitted its message's write:
// a message that does not fold may be submitted after it (unsentOf).
func (q *Queue) sent(ref model.ConversationRef) {
	q.mu.Lock()
	q.markSent(ref)
	q.mu.Unlock()
}

// markSent is sent with q.mu held.
func (q *Queue) markSent(ref model.ConversationRef) { closeOut(q.unsent, ref) }

// unsentOf is closed once the Fold holding ref, if any, has submitted its
// message's write; nil when there is none to wait for.
func (q *Queue) unsentOf(ref model.ConversationRef) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.unsent[ref]
}

// claimOrWait is claim, or, when ref is queued or running with nothing
// notified since its run last read its turns (the run has the turns it
// read to end, then none), a channel closed once that run ends: a Fold
// may wait for it rather than commit its message behind a turn that is
// about to end.
func (q *Queue) claimOrWait(ref model.ConversationRef) (ok bool, idle <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.state[ref]
	switch {
	case q.closed:
		return false, nil
	case st == nil && q.storing[ref] > 0:
		return false, q.idleChan(ref) // its turn will be notified, then run
	case st == nil:
		q.claimed(ref)
		return true, nil
	case st.notes > 0:
		return false, nil
	}
	return false, q.idleChan(ref)
}

// idleChan is ref's idle channel (q.mu held).
func (q *Queue) idleChan(ref model.ConversationRef) chan struct{} {
	ch := q.idle[ref]
	if ch == nil {
		ch = make(chan struct{})
		q.idle[ref] = ch
	}
	return ch
}

// store counts a message of ref being committed on its own (storing);
// the returned func, called once it is committed (and its turn notified)
// or failed, counts it out. A Fold waiting for it (claimOrWait) is woken
// by the run of its turn, or, with no run (its commit failed), here.
func (q *Queue) store(ref model.ConversationRef) (done func()) {
	q.mu.Lock()
	q.storing[ref]++
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		if q.storing[ref]--; q.storing[ref] <= 0 {
			delete(q.storing, ref)
			if q.state[ref] == nil {
				q.wake(ref)
			}
		}
		q.mu.Unlock()
	}
}

// wake closes ref's idle channel (q.mu held).
func (q *Queue) wake(ref model.ConversationRef) { closeOut(q.idle, ref) }

// closeOut closes ref's channel in m, if any, and forgets it.
func closeOut(m map[model.ConversationRef]chan struct{}, ref model.ConversationRef) {
	if ch := m[ref]; ch != nil {
		close(ch)
		delete(m, ref)
	}
}

// take waits for a conversation to run and tells since when it was
// queued; ok is false once the queue is closed.
func (q *Queue) take() (ref model.ConversationRef, since time.Time, ok bool) {
	q.mu.Lock()
	for len(q.queue) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return ref, since, false
	}
	ref, since = q.queue[0].ref, q.queue[0].since
	q.queue[0] = queued{}
	q.queue = q.queue[1:]
	q.state[ref].notes = 0
	q.mu.Unlock()
	q.freed()
	return ref, since, true
}

// reading tells that ref's run reads its pending turns now: what was
// notified until then is in what it reads. Without it, a message committed
// alone while the run ran (and read by it, its turn run there) left the
// conversation notified until the run ended, so the conversation's next
// message could not wait for that run's end (claimOrWait) and committed
// alone in turn, and so on: a chain that kept 3-8 % of PostgreSQL's
// closed-loop messages out of the fold.
func (q *Queue) reading(ref model.ConversationRef) {
	q.mu.Lock()
	if st := q.state[ref]; st != nil {
		st.notes = 0
	}
	q.mu.Unlock()
}

// freed lets the doors admit a waiting message: a worker took a
// conversation or ended a run (called without q.mu).
func (q *Queue) freed() {
	if doors := q.doors.Load(); doors != nil {
		for _, d := range *doors {
			d.grant()
		}
	}
}

// done ends a run of ref. busy means another node holds the
// conversation's lease: it runs what is pending, but may have looked
// before our turn was committed, so look again shortly; past the retries,
// the dispatcher's sweep takes over.
func (q *Queue) done(ref model.ConversationRef, busy bool) { q.release(ref, busy, 0) }

// release is done for a run during which own of the notifications came
// from the runner's own turns, which it completed (a Fold whose message
// committed before its answer): they need no run.
func (q *Queue) release(ref model.ConversationRef, busy bool, own int) {
	defer q.freed()
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.folding, ref)
	q.markSent(ref)
	st := q.state[ref]
	if !busy {
		st.retries = 0
	}
	again := st.notes > own
	st.notes = 0
	q.wake(ref) // whatever comes next: a waiting Fold looks again
	switch {
	case q.closed:
		delete(q.state, ref)
	case busy && st.retries < 20:
		st.retries++
		delete(q.state, ref)
		retries := st.retries
		time.AfterFunc(250*time.Millisecond, func() { q.notifyRetry(ref, retries) })
	case again:
		q.queue = append(q.queue, queued{ref, time.Now()}) // to the back: fairness
		q.cond.Signal()
	default:
		delete(q.state, ref)
	}
}

// later ends a run of ref whose turn must wait (its bot is unreachable):
// the conversation is queued again after delay, whatever was notified
// meanwhile.
func (q *Queue) later(ref model.ConversationRef, delay time.Duration) {
	defer q.freed()
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.state, ref)
	q.wake(ref)
	if q.closed {
		return
	}
	time.AfterFunc(delay, func() { q.Notify(ref) })
}

// turnRan adds a turn's run to its moving average.
func (q *Queue) turnRan(d time.Duration) { addToAverage(&q.turn, d) }

// tailRan adds a run's tail (from its last turn's end to the run's end)
// to its moving average.
func (q *Queue) tailRan(d time.Duration) { addToAverage(&q.tail, d) }

// runTail is the moving average of runs' tails (zero before the first).
func (q *Queue) runTail() time.Duration { return time.Duration(q.tail.Load()) }

// addToAverage adds d to the moving average in avg (weight 1/16).
func addToAverage(avg *atomic.Int64, d time.Duration) {
	for {
		old := avg.Load()
		v := int64(d)
		if old != 0 {
			v = old + (int64(d)-old)/16
		}
		if avg.CompareAndSwap(old, v) {
			return
		}
	}
}

// close wakes the workers and refuses further work.
func (q *Queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	for ref := range q.idle {
		q.wake(ref)
	}
	q.mu.Unlock()
}

// Len is the number of conversations waiting for a worker (for metrics).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// Delay is how long the conversation first in line has waited for a
// worker, or the oldest Fold has run: zero when the workers keep up.
func (q *Queue) Delay() time.Duration {
	d, _ := q.delayAndTurn()
	return d
}

// delayAndTurn returns Delay and the moving average of a turn's run (zero
// before the first). A conversation claimed by a Fold counts as waiting
// since its claim: a fold waits in no queue, and under overload it is
// its own run that slows down.
func (q *Queue) delayAndTurn() (delay, turn time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) > 0 {
		delay = time.Since(q.queue[0].since)
	}
	for _, at := range q.folding {
		delay = max(delay, time.Since(at))
	}
	return delay, time.Duration(q.turn.Load())
}
