package turns

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

func refused(t *testing.T, err error) {
	t.Helper()
	e, ok := err.(*model.Error)
	if !ok || e.Type != model.ErrRateLimited || e.Metadata["retryAfter"] != 1 {
		t.Fatalf("err = %v, want RateLimited with retryAfter 1", err)
	}
}

// TestDoor checks the door's bounds: the messages in flight, refused with
// RateLimited and retryAfter 1 and admitted again after a release; and the
// delay of the conversation first in line (no worker takes from these
// queues), for which a message waits at most the delay, then is refused,
// and is let in when a worker moves on.
func TestDoor(t *testing.T) {
	ctx := context.Background()
	ref := func(c string) model.ConversationRef { return model.ConversationRef{BotID: "b", ConversationID: c} }
	t.Run("in flight", func(t *testing.T) {
		d := NewQueue().Door(-1, 2)
		r1, err := d.Admit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := d.Admit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Admit(ctx)
		refused(t, err)
		r1()
		r3, err := d.Admit(ctx)
		if err != nil {
			t.Fatalf("after a release: %v", err)
		}
		r2()
		r3()
	})
	t.Run("a fold's age", func(t *testing.T) {
		// A conversation claimed by a Fold waits in no queue: its age is
		// the delay the door sees, until its run ends.
		q := NewQueue()
		d := q.Door(20*time.Millisecond, -1)
		if !q.claim(ref("c")) {
			t.Fatal("claim of an idle conversation refused")
		}
		if q.claim(ref("c")) {
			t.Fatal("a claimed conversation claimed again")
		}
		time.Sleep(40 * time.Millisecond)
		if q.Delay() < 20*time.Millisecond {
			t.Fatalf("Delay during a long fold = %v", q.Delay())
		}
		_, err := d.Admit(ctx)
		refused(t, err)
		q.done(ref("c"), false)
		if q.Delay() != 0 {
			t.Fatalf("Delay once the fold ended = %v", q.Delay())
		}
		if r, err := d.Admit(ctx); err != nil {
			t.Fatalf("after the fold: %v", err)
		} else {
			r()
		}
	})
	t.Run("a fold's own notice", func(t *testing.T) {
		// A fold whose message committed before its answer was notified
		// of its own turn, which it completed: released, the
		// conversation is not queued again for it; for another turn it is.
		q := NewQueue()
		q.claim(ref("c"))
		q.Notify(ref("c")) // the fold's own turn
		q.release(ref("c"), false, 1)
		if q.Len() != 0 || !q.claim(ref("c")) {
			t.Fatal("queued again for the fold's own turn")
		}
		q.Notify(ref("c"))
		q.Notify(ref("c")) // and another writer's
		q.release(ref("c"), false, 1)
		if q.Len() != 1 {
			t.Fatalf("queued %d, want the conversation again for the other turn", q.Len())
		}
	})
	t.Run("queue delay", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(20*time.Millisecond, -1)
		never := q.Door(-1, -1)
		q.Notify(ref("c"))
		if r, err := d.Admit(ctx); err != nil {
			t.Fatalf("fresh queue: %v", err)
		} else {
			r()
		}
		time.Sleep(40 * time.Millisecond)
		if q.Delay() < 20*time.Millisecond {
			t.Fatalf("Delay = %v", q.Delay())
		}
		start := time.Now()
		_, err := d.Admit(ctx)
		refused(t, err)
		if waited := time.Since(start); waited < lineWait*20*time.Millisecond {
			t.Fatalf("refused after %v, want a wait of twice the max delay first", waited)
		}
		if r, err := never.Admit(ctx); err != nil {
			t.Fatalf("negative bounds refused: %v", err)
		} else {
			r()
		}
		// A caller that gives up is not admitted.
		cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, err = d.Admit(cctx)
		refused(t, err)
		if time.Since(start) >= 20*time.Millisecond {
			t.Fatal("a cancelled wait went on")
		}
		if n := d.waiting.Load(); n != 0 {
			t.Fatalf("%d left in line", n)
		}
	})
	t.Run("let in when a worker moves on, newest first, one at a time", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(time.Second, -1)
		q.Notify(ref("c1"))
		q.Notify(ref("c2"))
		q.mu.Lock()
		q.queue[0].since = time.Now().Add(-2 * time.Second) // c1 has waited too long
		q.mu.Unlock()
		var (
			mu  sync.Mutex
			got []int
			wg  sync.WaitGroup
		)
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := d.Admit(ctx)
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				mu.Lock()
				got = append(got, i)
				mu.Unlock()
				r()
			}()
			for d.waiting.Load() != int32(i+1) {
				time.Sleep(time.Millisecond)
			}
		}
		if n := d.Waiting(); n != 3 {
			t.Fatalf("Waiting = %d", n)
		}
		// A newcomer does not pass those in line even with the queue
		// within its bound.
		q.mu.Lock()
		q.queue[1].since = time.Now()
		q.mu.Unlock()

		// A worker takes c1: the queue's head (c2) is fresh, and the
		// newest waiter is let in; its release lets the next in, and so
		// on.
		if r, _, ok := q.take(); !ok || r != ref("c1") {
			t.Fatalf("next = %v %v", r, ok)
		}
		wg.Wait()
		if len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 0 {
			t.Fatalf("let in %v, want [2 1 0]", got)
		}
	})
	t.Run("the line moves when a message let in never comes", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(80*time.Millisecond, -1)
		q.Notify(ref("c"))
		q.mu.Lock()
		q.queue[0].since = time.Now().Add(-time.Second)
		q.mu.Unlock()
		errs := make(chan error, 2)
		for i := range 2 {
			go func() {
				_, err := d.Wait(ctx) // let in, then gone: no Admit, no release
				errs <- err
			}()
			for d.waiting.Load() != int32(i+1) {
				time.Sleep(time.Millisecond)
			}
		}
		q.take() // the queue is empty, the worker idle: one is let in
		start := time.Now()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("after %v: %v", time.Since(start), err)
			}
		}
		if waited := time.Since(start); waited >= lineWait*80*time.Millisecond {
			t.Fatalf("the second waited %v", waited)
		}
	})
	t.Run("not while the queue is still behind", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(30*time.Millisecond, -1)
		q.Notify(ref("c1"))
		q.Notify(ref("c2"))
		q.mu.Lock()
		q.queue[0].since = time.Now().Add(-time.Second)
		q.queue[1].since = time.Now().Add(-time.Second)
		q.mu.Unlock()
		errc := make(chan error, 1)
		go func() {
			_, err := d.Admit(ctx)
			errc <- err
		}()
		for d.waiting.Load() != 1 {
			time.Sleep(time.Millisecond)
		}
		q.take() // c2 is next and has waited a second too
		refused(t, <-errc)
	})
	t.Run("a message that waited is admitted without waiting again", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(time.Hour, -1)
		other := q.Door(time.Hour, -1)
		q.Notify(ref("c1"))
		q.Notify(ref("c2"))
		q.mu.Lock()
		q.queue[0].since = time.Now().Add(-2 * time.Hour)
		q.mu.Unlock()
		type waited struct {
			ctx context.Context
			err error
		}
		done := make(chan waited, 1)
		go func() {
			c, err := d.Wait(ctx)
			done <- waited{c, err}
		}()
		for d.waiting.Load() != 1 {
			time.Sleep(time.Millisecond)
		}
		q.take() // c2 is fresh
		w := <-done
		if w.err != nil {
			t.Fatal(w.err)
		}
		q.mu.Lock()
		q.queue[0].since = time.Now().Add(-2 * time.Hour) // behind again
		q.mu.Unlock()
		r, err := d.Admit(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		r()
		// Another door's mark does not count.
		cctx, cancel := context.WithTimeout(w.ctx, 5*time.Millisecond)
		defer cancel()
		_, err = other.Admit(cctx)
		refused(t, err)
	})
	t.Run("automatic bound", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(0, -1)
		for _, tc := range []struct {
			turn, want time.Duration
		}{
			{0, MinAutoDelay},
			{10 * time.Millisecond, MinAutoDelay},
			{200 * time.Millisecond, 400 * time.Millisecond},
			{5 * time.Second, MaxAutoDelay},
		} {
			q.turn.Store(int64(tc.turn))
			if got, _ := d.bound(); got != tc.want {
				t.Errorf("turn %v: bound %v, want %v", tc.turn, got, tc.want)
			}
		}
		if got, on := q.Door(30*time.Millisecond, -1).Bound(); got != 30*time.Millisecond || !on {
			t.Errorf("explicit bound: %v %v", got, on)
		}
		if _, on := q.Door(-1, -1).Bound(); on {
			t.Error("a door that never refuses has a bound")
		}
		// The average follows the turns' runs.
		q = NewQueue()
		q.turnRan(160 * time.Millisecond)
		q.turnRan(0)
		if _, turn := q.delayAndTurn(); turn != 150*time.Millisecond {
			t.Fatalf("average of 160 ms, then 0: %v, want 150 ms", turn)
		}
	})
	t.Run("a full line refuses at once", func(t *testing.T) {
		q := NewQueue()
		d := q.Door(time.Hour, -1)
		q.Notify(ref("c"))
		q.mu.Lock()
		q.queue[0].since = time.Now().Add(-2 * time.Hour)
		q.mu.Unlock()
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range MaxWaiting {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = d.Admit(cctx) }()
		}
		for d.waiting.Load() != MaxWaiting {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		_, err := d.Wait(ctx)
		refused(t, err)
		_, err = d.Admit(ctx)
		refused(t, err)
		if time.Since(start) > time.Second {
			t.Fatal("a full line made the message wait")
		}
		cancel()
		wg.Wait()
	})
}
