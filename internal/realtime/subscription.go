package realtime

import (
	"sync"
	"sync/atomic"
)

// Why a subscription ended.
const (
	reasonNone = iota
	reasonSlow
	reasonShutdown
	reasonGone
	reasonClosed
)

// Subscription is one stream's registration. Signals queue in q (taken
// with next), ready is signalled when one is queued, and done is closed
// when the hub drops it.
//
// The queue is a slice, not a buffered channel of Options.Buffer: an idle
// stream holds no buffer (a channel of 256 held 2 KB for each of thousands
// of idle listeners), and a fan-out touches the subscription it already
// reads instead of a channel of its own.
type Subscription struct {
	hub        *Hub
	key        topicKey
	userID     string
	credential string // StreamRequest.Credential
	counted    bool   // counted in hub.users (guarded by hub.mu)
	mu         sync.Mutex
	q          []*item // queued signals, oldest first, from head on (guarded by mu)
	head       int
	limit      int // how many may queue (Options.Buffer)
	ready      chan struct{}
	done       chan struct{}
	once       sync.Once
	reason     int                    // set before done is closed
	dropped    atomic.Bool            // done is closed (a load costs no channel's cache line, on the fan-out's path)
	park       atomic.Pointer[parked] // set once the hub holds the stream
}

// offer queues it without blocking; false means the queue is full.
func (s *Subscription) offer(it *item) bool {
	if s.dropped.Load() {
		return true
	}
	s.mu.Lock()
	if len(s.q)-s.head >= s.limit {
		s.mu.Unlock()
		return false
	}
	s.q = append(s.q, it)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return true
}

// next takes the oldest queued signal (nil: none).
func (s *Subscription) next() *item {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.q) {
		return nil
	}
	it := s.q[s.head]
	s.q[s.head] = nil
	if s.head++; s.head == len(s.q) {
		// A fan-out's few signals leave a slice worth keeping; a backlog's
		// goes.
		s.head, s.q = 0, s.q[:0]
		if cap(s.q) > 4 {
			s.q = nil
		}
	}
	return it
}

// queued counts the queued signals.
func (s *Subscription) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q) - s.head
}

func (s *Subscription) drop(reason int) {
	s.once.Do(func() {
		s.reason = reason
		s.dropped.Store(true)
		close(s.done)
		if p := s.park.Load(); p != nil {
			p.kick()
		}
	})
}

// Close unregisters the subscription.
func (s *Subscription) Close() {
	s.hub.unsubscribe(s)
	s.drop(reasonClosed)
}
