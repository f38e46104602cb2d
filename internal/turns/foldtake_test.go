package turns_test

// The Fold of a message whose conversation's lease is free: the folded
// commit takes it (store.Fence.Take), with no Take of its own.

import (
	"context"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// takeFold is a leased fold fixture whose dispatcher's lease statements
// are counted.
func takeFold(t *testing.T, bot turns.Bot, o turns.DispatcherOptions) (*foldFixture, *countingLeases, string) {
	t.Helper()
	db := &countingLeases{DB: testdb.Postgres(t)}
	o.Leases, o.LeaseTTL, o.Node = true, 10*time.Second, "n1"
	f := newFoldFixtureOn(t, db, turns.FoldableBot(bot), o, nil)
	return f, db, "turns:" + f.botID + ":" + f.conv
}

// releasedByN2 and expiredUnderN2 leave a lease as another node, n2, left
// it: taken and released, or taken and expired without a release (a node
// gone).
func releasedByN2(t *testing.T, db store.DB, lease string) {
	ctx := context.Background()
	if _, ok, err := db.Leases().Take(ctx, lease, "n2", time.Minute); err != nil || !ok {
		t.Fatalf("n2 could not take the lease (%v, %v)", ok, err)
	}
	if err := db.Leases().Release(ctx, lease, "n2"); err != nil {
		t.Fatal(err)
	}
}

func expiredUnderN2(t *testing.T, db store.DB, lease string) {
	if _, ok, err := db.Leases().Take(context.Background(), lease, "n2", 50*time.Millisecond); err != nil || !ok {
		t.Fatalf("n2 could not take the lease (%v, %v)", ok, err)
	}
	time.Sleep(100 * time.Millisecond)
}

// TestFoldTakesAFreeLeaseWithItsCommit: where the lease is free (never
// taken, or released by another node), the first message folds in one
// commit that takes the lease: no Take, the answer stored when
// createMessage returns, the lease this node's afterwards (parked; another
// node cannot take it). Where it expired without a release (a node gone),
// the fold takes it over first, with a Take (the takeover is logged there).
func TestFoldTakesAFreeLeaseWithItsCommit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, db store.DB, lease string)
		takes int64
	}{
		{"never taken", func(*testing.T, store.DB, string) {}, 0},
		{"released elsewhere", releasedByN2, 0},
		{"expired elsewhere", expiredUnderN2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &countingObserver{}
			f, counted, lease := takeFold(t, botFunc(echoText), turns.DispatcherOptions{FoldWithin: 10 * time.Second, Observer: obs})
			tc.setup(t, counted.DB, lease)
			before := f.commits.n.Load()
			f.post(t, f.conv, "first")
			if n := f.commits.n.Load() - before; n != 1 {
				t.Fatalf("the first message took %d commits, want 1", n)
			}
			if n := counted.takes.Load(); n != tc.takes {
				t.Fatalf("the dispatcher made %d Takes, want %d", n, tc.takes)
			}
			if n := counted.frees.Load(); n != 1 {
				t.Fatalf("the dispatcher read the lease %d times (Free), want 1", n)
			}
			eqStrings(t, "how the message committed", obs.storedSince(0), "folded")
			eqStrings(t, "messages once createMessage returned", f.texts(t), "first", "echo first")
			if !turns.Parked(f.dispatcher, f.ref()) {
				t.Fatal("the lease is not parked after the fold")
			}
			if _, ok, err := counted.DB.Leases().Take(context.Background(), lease, "n2", time.Second); err != nil || ok {
				t.Fatalf("another node took the lease (%v, %v)", ok, err)
			}
			// The next message reuses the parked lease: still no Take.
			f.post(t, f.conv, "second")
			if n := counted.takes.Load(); n != tc.takes {
				t.Fatalf("the dispatcher made %d Takes after the second message, want %d", n, tc.takes)
			}
			eqStrings(t, "messages", f.texts(t), "first", "echo first", "second", "echo second")
		})
	}
}

// TestFoldTakeAlone: a node alone on the database (DispatcherOptions.Alone)
// does not read whether the lease is free (Leases.Free): the folded commit
// takes it where it is. Where a node gone left it held (expired, not
// released), that commit is refused: the message is stored alone
// (createMessage succeeds) and its turn runs once, through the queue's
// takeover (one Take), the lease then this node's.
func TestFoldTakeAlone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, db store.DB, lease string)
		stored  string
		takes   int64
		commits int64 // for the first message
	}{
		{"never taken", func(*testing.T, store.DB, string) {}, "folded", 0, 1},
		{"released elsewhere", releasedByN2, "folded", 0, 1},
		{"expired elsewhere", expiredUnderN2, turns.AloneRefused, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &countingObserver{}
			f, counted, lease := takeFold(t, botFunc(echoText), turns.DispatcherOptions{FoldWithin: 10 * time.Second,
				Sweep: 50 * time.Millisecond, Observer: obs, Alone: func() bool { return true }})
			tc.setup(t, counted.DB, lease)
			before := f.commits.n.Load()
			f.post(t, f.conv, "first")
			if n := f.commits.n.Load() - before; n != tc.commits {
				t.Fatalf("the first message took %d commits, want %d", n, tc.commits)
			}
			eqStrings(t, "how the message committed", obs.storedSince(0), tc.stored)
			waitUntil(t, "the answer", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == 2 })
			f.post(t, f.conv, "second")
			eqStrings(t, "messages", f.texts(t), "first", "echo first", "second", "echo second")
			if n := counted.frees.Load(); n != 0 {
				t.Fatalf("the dispatcher read the lease %d times (Free), want none", n)
			}
			if n := counted.takes.Load(); n != tc.takes {
				t.Fatalf("the dispatcher made %d Takes, want %d", n, tc.takes)
			}
			if !turns.Parked(f.dispatcher, f.ref()) {
				t.Fatal("the lease is not parked")
			}
			if _, ok, err := counted.DB.Leases().Take(context.Background(), lease, "n2", time.Second); err != nil || ok {
				t.Fatalf("another node took the lease (%v, %v)", ok, err)
			}
		})
	}
}

// TestFoldTakeRaced: the lease was free when the fold looked, and another
// node took it while the bot answered: the folded commit is fenced off,
// the message is stored alone (createMessage succeeds), and its turn runs
// again, once, here, when that node lets the lease go.
func TestFoldTakeRaced(t *testing.T) {
	var db store.DB
	var lease string
	rec := &recorder{}
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if rec.add(in) == "raced" && len(rec.turns()) == 1 {
			if _, ok, err := db.Leases().Take(ctx, lease, "n2", time.Minute); err != nil || !ok {
				t.Errorf("n2 could not take the lease (%v, %v)", ok, err)
			}
		}
		return echoText(ctx, in, out)
	})
	obs := &countingObserver{}
	f, counted, name := takeFold(t, bot, turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: 50 * time.Millisecond, Observer: obs})
	db, lease = counted.DB, name
	f.post(t, f.conv, "raced")
	eqStrings(t, "how the message committed", obs.storedSince(0), turns.AloneRefused)
	eqStrings(t, "messages once createMessage returned", f.texts(t), "raced")
	f.runsOnceN2LetsGo(t, lease, rec, []string{"raced"}, "raced", "echo raced")
}

// TestFoldTakeBeforeOutside: a turn whose lease was left for its commit to
// take takes it before it steps outside (the message then commits alone,
// under it); where another node took it meanwhile, the step outside fails
// and nothing of that turn is stored: the message commits alone and its
// turn runs again, once, where the lease is (here, once n2 lets go).
func TestFoldTakeBeforeOutside(t *testing.T) {
	for _, takenMeanwhile := range []bool{false, true} {
		name := map[bool]string{false: "free", true: "taken meanwhile"}[takenMeanwhile]
		t.Run(name, func(t *testing.T) {
			var db store.DB
			var lease string
			rec := &recorder{}
			outside := make(chan error, 4)
			bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				first := rec.add(in) == "out" && len(rec.turns()) == 1
				if first && takenMeanwhile {
					if _, ok, err := db.Leases().Take(ctx, lease, "n2", time.Minute); err != nil || !ok {
						t.Errorf("n2 could not take the lease (%v, %v)", ok, err)
					}
				}
				err := turns.StepOutside(ctx, out)
				outside <- err
				if err != nil {
					return err
				}
				return echoText(ctx, in, out)
			})
			obs := &countingObserver{}
			f, counted, name := takeFold(t, bot, turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: 50 * time.Millisecond, Observer: obs})
			db, lease = counted.DB, name
			f.post(t, f.conv, "out")
			if err := <-outside; (err != nil) != takenMeanwhile {
				t.Fatalf("the first step outside: %v", err)
			}
			if !takenMeanwhile {
				if n := counted.takes.Load(); n != 1 {
					t.Fatalf("Takes before the step outside = %d, want 1", n)
				}
				eqStrings(t, "how the message committed", obs.storedSince(0), turns.AloneOutside)
				waitUntil(t, "the answer", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == 2 })
				eqStrings(t, "turns run", rec.turns(), "out")
				if !turns.Parked(f.dispatcher, f.ref()) {
					t.Fatal("the lease is not parked after the turn")
				}
				return
			}
			eqStrings(t, "how the message committed", obs.storedSince(0), turns.AloneLease)
			eqStrings(t, "messages once createMessage returned", f.texts(t), "out")
			f.runsOnceN2LetsGo(t, lease, rec, []string{"out"}, "out", "echo out")
		})
	}
}

// runsOnceN2LetsGo checks that no turn runs here while node n2 holds the
// conversation's lease (rec has ran so far), then has n2 release it and
// waits for the answer: the conversation ends with messages, and the
// turns run are ran and the message's turn once more.
func (f *foldFixture) runsOnceN2LetsGo(t *testing.T, lease string, rec *recorder, ran []string, messages ...string) {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // n2 holds it: nothing runs here
	eqStrings(t, "turns run while n2 holds the lease", rec.turns(), ran...)
	if err := f.db.Leases().Release(context.Background(), lease, "n2"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the answer once n2 let go", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == len(messages) })
	time.Sleep(50 * time.Millisecond) // a further run would answer again
	eqStrings(t, "messages", f.texts(t), messages...)
	eqStrings(t, "turns run", rec.turns(), append(ran, messages[len(messages)-2])...)
}

// TestFoldTakeEpoch: the folded commit takes a free lease at this clock's
// microseconds, or just above the epoch the lease has where that is ahead
// (another node's clock ahead of this one's): else the take would be
// refused, and every such conversation's message after a pause would
// commit alone.
func TestFoldTakeEpoch(t *testing.T) {
	f, _, _ := takeFold(t, botFunc(echoText), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	now := time.Now().UnixMicro()
	for _, tc := range []struct {
		name  string
		after int64
		min   int64
		max   int64
	}{
		{"no row", 0, now, now + int64(time.Minute/time.Microsecond)},
		{"an older epoch", now - 1000, now, now + int64(time.Minute/time.Microsecond)},
		{"an epoch ahead of this clock", now + int64(time.Hour/time.Microsecond), now + int64(time.Hour/time.Microsecond) + 1, now + int64(time.Hour/time.Microsecond) + 1},
	} {
		if got := turns.TakeEpoch(f.dispatcher, f.ref(), tc.after); got < tc.min || got > tc.max {
			t.Errorf("%s: epoch %d, want within [%d, %d]", tc.name, got, tc.min, tc.max)
		}
	}
}
