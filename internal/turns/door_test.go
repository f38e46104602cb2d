package turns_test

import (
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/turns"
)

// TestDoor checks the door's two bounds: the delay of the conversation
// first in line (no worker takes from this queue) and the messages in
// flight, each refused with RateLimited and retryAfter 1, and admitted
// again once the cause is gone.
func TestDoor(t *testing.T) {
	refused := func(t *testing.T, err error) {
		t.Helper()
		e, ok := err.(*model.Error)
		if !ok || e.Type != model.ErrRateLimited || e.Metadata["retryAfter"] != 1 {
			t.Fatalf("err = %v, want RateLimited with retryAfter 1", err)
		}
	}
	t.Run("in flight", func(t *testing.T) {
		d := turns.NewQueue().Door(-1, 2)
		r1, err := d.Admit()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := d.Admit()
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Admit()
		refused(t, err)
		r1()
		r3, err := d.Admit()
		if err != nil {
			t.Fatalf("after a release: %v", err)
		}
		r2()
		r3()
	})
	t.Run("queue delay", func(t *testing.T) {
		q := turns.NewQueue()
		d := q.Door(20*time.Millisecond, -1)
		never := q.Door(-1, -1)
		q.Notify(model.ConversationRef{BotID: "b", ConversationID: "c"})
		if r, err := d.Admit(); err != nil {
			t.Fatalf("fresh queue: %v", err)
		} else {
			r()
		}
		time.Sleep(40 * time.Millisecond)
		if q.Delay() < 20*time.Millisecond {
			t.Fatalf("Delay = %v", q.Delay())
		}
		_, err := d.Admit()
		refused(t, err)
		if r, err := never.Admit(); err != nil {
			t.Fatalf("negative bounds refused: %v", err)
		} else {
			r()
		}
	})
}
