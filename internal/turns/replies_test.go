package turns

import (
	"context"
	"testing"
	"time"
)

func TestReplyTrackerWait(t *testing.T) {
	var tr replyTracker
	returned := func(ctx context.Context, conv string, max time.Duration) time.Duration {
		start := time.Now()
		tr.wait(ctx, "b", conv, max)
		return time.Since(start)
	}
	if d := returned(t.Context(), "c1", time.Second); d > 100*time.Millisecond {
		t.Fatalf("nothing in progress: waited %v", d)
	}

	done1 := tr.started("b", "c1")
	done2 := tr.started("b", "c1")
	doneOther := tr.started("b", "c2")
	defer doneOther()
	go func() {
		time.Sleep(50 * time.Millisecond)
		done1()
		done1() // done is idempotent
		time.Sleep(50 * time.Millisecond)
		done2()
	}()
	if d := returned(t.Context(), "c1", 5*time.Second); d < 90*time.Millisecond || d > 4*time.Second {
		t.Fatalf("two replies in progress: waited %v, want until the second is done (~100ms)", d)
	}
	if d := returned(t.Context(), "c1", time.Second); d > 100*time.Millisecond {
		t.Fatalf("after both are done: waited %v", d)
	}
	// c2's reply is still in progress: the wait ends at max, or with ctx.
	if d := returned(t.Context(), "c2", 100*time.Millisecond); d < 90*time.Millisecond || d > 2*time.Second {
		t.Fatalf("stuck reply: waited %v, want max (100ms)", d)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if d := returned(ctx, "c2", 10*time.Second); d > 2*time.Second {
		t.Fatalf("ctx ended: waited %v", d)
	}
	// A new reply after the count dropped to zero gets a fresh count.
	done3 := tr.started("b", "c1")
	go func() { time.Sleep(30 * time.Millisecond); done3() }()
	if d := returned(t.Context(), "c1", 5*time.Second); d < 20*time.Millisecond {
		t.Fatalf("reply started after an idle period: waited %v", d)
	}
}

// TestReplyTrackerSettle: after a call that reached the bot failed, the
// next delivery waits out the settle time once.
func TestReplyTrackerSettle(t *testing.T) {
	var tr replyTracker
	tr.settle("b", "c1", 150*time.Millisecond)
	start := time.Now()
	tr.wait(t.Context(), "b", "c1", time.Second)
	if d := time.Since(start); d < 140*time.Millisecond {
		t.Fatalf("settled conversation: waited %v, want the settle time (150ms)", d)
	}
	start = time.Now()
	tr.wait(t.Context(), "b", "c1", time.Second)
	tr.wait(t.Context(), "b", "c2", time.Second)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("settle is waited out once, and per conversation: waited %v", d)
	}
}
