package turns

import (
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// TestQueueDelayCountsTurnsWaitingForARun checks that a turn committed
// while its conversation is being run counts in the door's delay from
// the moment it was notified: while the run goes on (the queue is empty)
// and once the conversation is back in line, where the run must not reset
// its wait.
func TestQueueDelayCountsTurnsWaitingForARun(t *testing.T) {
	const wait = 30 * time.Millisecond
	a := model.ConversationRef{BotID: "b", ConversationID: "a"}
	steps := []struct {
		name    string
		do      func(q *Queue)
		atLeast time.Duration // Delay >= atLeast; 0: Delay == 0
	}{
		{"queued", func(q *Queue) { q.Notify(a); time.Sleep(wait) }, wait},
		{"taken by a worker", func(q *Queue) { q.next() }, 0},
		{"notified while running", func(q *Queue) { q.Notify(a); time.Sleep(wait) }, wait},
		{"notified again", func(q *Queue) { q.Notify(a) }, wait},
		{"back in line after the run", func(q *Queue) { time.Sleep(wait); q.done(a, false) }, 2 * wait},
		{"taken again", func(q *Queue) { q.next() }, 0},
		{"run ends with nothing new", func(q *Queue) { q.done(a, false) }, 0},
	}
	q := NewQueue()
	for _, s := range steps {
		s.do(q)
		got := q.Delay()
		if s.atLeast == 0 && got != 0 || got < s.atLeast {
			t.Fatalf("%s: Delay = %v, want %v", s.name, got, map[bool]string{true: "0", false: ">= " + s.atLeast.String()}[s.atLeast == 0])
		}
	}
	if len(q.running) != 0 || len(q.state) != 0 {
		t.Fatalf("left behind: running %v, state %v", q.running, q.state)
	}
}
