package turns

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Bounds of the door.
const (
	// The automatic bound on a turn's wait (a zero maxDelay) is twice a
	// turn's recent run, within these.
	MinAutoDelay = 30 * time.Millisecond
	MaxAutoDelay = time.Second
	// DefaultMaxInFlight bounds the admitted messages not stored yet.
	DefaultMaxInFlight = 256
	// MaxWaiting is how many messages may wait in the door's line at
	// once; more are refused at once.
	MaxWaiting = 1024
	// lineWait is how long a message may wait in the door's line, in
	// bounds. Measured side by side (SQLite, 32 closed-loop clients, then
	// twice the sustainable rate): with one bound, a closed loop the
	// server sustains got 49 refusals and 0.73× the rate; with two, 4
	// refusals, and the accepted messages' p99 at twice the rate stayed
	// near 200 ms (196–206 vs 202–215 ms); with three, 252 ms.
	lineWait = 2
)

// Door is the turn queue seen from where users' messages come in. While
// the conversation first in the queue has waited for a worker at most the
// door's bound, a message comes in; otherwise it waits in the door's line
// at most twice the bound, then is refused (429 with Retry-After). It is also
// refused while too many messages are already being stored. So overload
// is shed at the door instead of growing a backlog of turns or of
// requests waiting for the database.
//
//   - The bound is --max-turn-delay, or by default twice a turn's recent
//     run (MinAutoDelay to MaxAutoDelay): 30 ms for a bot that answers at
//     once, a second for one that waits for a model. Not a conversation's
//     run: under overload runs hold more turns each, and a bound that grew
//     with them would let the backlog grow.
//   - A message in line is let in one at a time, when a worker moves on
//     (takes a conversation or ends a run) or an admitted message is
//     stored (and every eighth of the bound, should none of these come),
//     while the queue is within the bound: admissions follow the rate the
//     workers run at. Letting the whole line in as soon as the
//     queue dips brings the messages in together, to wait behind one
//     another in the queue (the accepted messages' p99 at twice the
//     sustainable rate went from ~200 to ~550 ms).
//   - The newest message in line is let in first (as in "adaptive LIFO",
//     Maurer, "Fail at Scale", 2015): under overload the line is never
//     empty and the oldest would come in just before their time ran out,
//     adding the whole wait to every accepted message's latency; a
//     message that waits in vain is refused. Messages
//     sent at once (concurrent requests) have no order anyway; a client
//     that sends one after another never has two in line.
//   - A message waits instead of being refused at once because
//     Retry-After has a granularity of seconds: a refusal sends the
//     client away for a second, for a backlog the workers clear in
//     milliseconds (a closed loop of 32 clients sustained half its rate
//     with a 50 ms door that refused at once).
type Door struct {
	q           *Queue
	maxDelay    time.Duration // < 0: no bound; 0: automatic
	maxInFlight int64
	inFlight    atomic.Int64

	mu      sync.Mutex
	line    []chan struct{} // waiting messages, oldest first; closed: let in
	waiting atomic.Int32    // len(line), read without mu
	ticking bool            // tick is scheduled (while the line is not empty)
}

// Door returns the queue's door: a new turn waits while the conversation
// first in line has waited more than maxDelay for a worker, at most twice
// maxDelay, then is refused; it is refused while maxInFlight admitted
// messages are not stored yet. A zero maxDelay is automatic, a zero
// maxInFlight takes the default; negative never refuses for that reason.
func (q *Queue) Door(maxDelay time.Duration, maxInFlight int) *Door {
	if maxInFlight == 0 {
		maxInFlight = DefaultMaxInFlight
	}
	d := &Door{q: q, maxDelay: maxDelay, maxInFlight: int64(maxInFlight)}
	q.mu.Lock()
	var doors []*Door
	if old := q.doors.Load(); old != nil {
		doors = append(doors, *old...)
	}
	doors = append(doors, d)
	q.doors.Store(&doors)
	q.mu.Unlock()
	return d
}

// Wait waits in the door's line while the bots are behind, and returns
// ctx marked as let in, with which Admit does not wait again; or the
// RateLimited error Admit would return for the wait. The HTTP handlers
// wait before they read and decode a request's body, so that a refused
// request costs the server as little as possible.
func (d *Door) Wait(ctx context.Context) (context.Context, error) {
	if d.maxDelay < 0 {
		return ctx, nil
	}
	if err := d.wait(ctx); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, letIn{}, d), nil
}

// letIn marks a context whose request waited at the door (Wait).
type letIn struct{}

// Admit admits one message, to be released once it is stored (or failed),
// after waiting its turn in the door's line while the bots are behind
// (unless ctx comes from Wait); or returns a RateLimited error that asks
// to retry after a second.
func (d *Door) Admit(ctx context.Context) (release func(), err error) {
	if d.maxDelay >= 0 && ctx.Value(letIn{}) != d {
		if err := d.wait(ctx); err != nil {
			return nil, err
		}
	}
	if n := d.inFlight.Add(1); d.maxInFlight > 0 && n > d.maxInFlight {
		d.inFlight.Add(-1)
		return nil, busy("too many messages are being stored")
	}
	return func() {
		d.inFlight.Add(-1)
		d.grant() // stored: its turn is in the queue's delay now
	}, nil
}

// Waiting is how many messages wait in the door's line (for metrics).
func (d *Door) Waiting() int { return int(d.waiting.Load()) }

// Bound is how long the conversation first in line may wait for a worker
// before new messages wait at the door, now (for metrics); false when the
// door never makes them wait.
func (d *Door) Bound() (time.Duration, bool) {
	if d.maxDelay < 0 {
		return 0, false
	}
	b, _ := d.bound()
	return b, true
}

// bound is how long the conversation first in line may wait (a message
// waits in line lineWait times that), with the queue's current delay.
func (d *Door) bound() (bound, delay time.Duration) {
	delay, turn := d.q.delayAndTurn()
	if d.maxDelay > 0 {
		return d.maxDelay, delay
	}
	return min(max(2*turn, MinAutoDelay), MaxAutoDelay), delay
}

// wait returns once the message may come in, or the refusal (also when
// the caller gave up: it is gone, and an error of its own would be logged
// as the server's).
func (d *Door) wait(ctx context.Context) error {
	d.mu.Lock()
	bound, delay := d.bound()
	if len(d.line) == 0 && delay <= bound {
		d.mu.Unlock()
		return nil
	}
	if len(d.line) >= MaxWaiting {
		d.mu.Unlock()
		return busy("too many messages are waiting for the bot")
	}
	in := make(chan struct{})
	d.line = append(d.line, in)
	d.waiting.Store(int32(len(d.line)))
	if !d.ticking {
		d.ticking = true
		time.AfterFunc(tickOf(bound), d.tick)
	}
	d.mu.Unlock()

	if closedWithin(ctx, in, lineWait*bound) {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-in:
		return nil // let in as the wait ended
	default:
	}
	for i, c := range d.line {
		if c == in {
			d.line = append(d.line[:i], d.line[i+1:]...)
			break
		}
	}
	d.waiting.Store(int32(len(d.line)))
	return busy("too many messages are waiting for the bot")
}

// tick lets a message in every eighth of the bound while the line is not
// empty, so the line moves when no worker does: a message let in may
// never reach the queue (its body is malformed, its sender is no
// participant), and with the workers idle no other event would come.
func (d *Door) tick() {
	d.grant()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.line) == 0 {
		d.ticking = false
		return
	}
	bound, _ := d.bound()
	time.AfterFunc(tickOf(bound), d.tick)
}

func tickOf(bound time.Duration) time.Duration { return max(bound/8, time.Millisecond) }

// grant lets the newest message in line in if the queue is within the
// bound.
func (d *Door) grant() {
	if d.waiting.Load() == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if bound, delay := d.bound(); len(d.line) == 0 || delay > bound {
		return
	}
	n := len(d.line) - 1
	close(d.line[n])
	d.line[n] = nil
	d.line = d.line[:n]
	d.waiting.Store(int32(n))
}

func busy(why string) error {
	return &model.Error{Type: model.ErrRateLimited, Message: "the server is busy: " + why + "; retry later",
		Metadata: map[string]any{"retryAfter": 1}}
}
