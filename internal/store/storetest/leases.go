package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

func testLeases(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Leases()
	acquire := func(name, holder string, ttl time.Duration) bool {
		t.Helper()
		got, err := r.Acquire(ctx, name, holder, ttl)
		ok(t, err)
		return got
	}
	eq(t, "first acquire", acquire("l", "h1", time.Minute), true)
	eq(t, "held by another", acquire("l", "h2", time.Minute), false)
	eq(t, "renew by holder", acquire("l", "h1", time.Minute), true)
	eq(t, "other names are free", acquire("m", "h2", time.Minute), true)

	ok(t, r.Release(ctx, "l", "h2")) // not the holder: no effect
	eq(t, "still held after wrong release", acquire("l", "h2", time.Minute), false)
	ok(t, r.Release(ctx, "l", "h1"))
	eq(t, "free after release", acquire("l", "h2", time.Minute), true)
	ok(t, r.Release(ctx, "nope", "h1"))

	// Long enough that a loaded machine still sees it held, short enough
	// to wait out.
	eq(t, "short lease", acquire("e", "h1", time.Second), true)
	eq(t, "still held", acquire("e", "h2", time.Minute), false)
	time.Sleep(1100 * time.Millisecond)
	eq(t, "taken over after expiry", acquire("e", "h2", time.Minute), true)
	eq(t, "old holder refused", acquire("e", "h1", time.Minute), false)

	// Epochs and fencing: a renewal keeps the epoch, a takeover or a take
	// after a release starts a new one; the old holder's fence fails and
	// it cannot renew; a released lease is not renewed either.
	take := func(name, holder string, ttl time.Duration) (store.Lease, bool) {
		t.Helper()
		l, got, err := r.Take(ctx, name, holder, ttl)
		ok(t, err)
		return l, got
	}
	l1, got := take("f", "h1", 300*time.Millisecond)
	eq(t, "take free", got, true)
	eq(t, "first epoch is not a takeover", l1.From, "")
	l, _ := take("f", "h1", 300*time.Millisecond)
	eq(t, "renewal keeps the epoch", l.Epoch, l1.Epoch)
	renewed, err := r.Renew(ctx, "f", "h1", l1.Epoch, 300*time.Millisecond)
	ok(t, err)
	eq(t, "renew", renewed, true)
	ok(t, r.Check(ctx, store.Fence{Name: "f", Holder: "h1", Epoch: l1.Epoch}))
	l, got = take("f", "h2", time.Minute)
	eq(t, "held", got, false)
	eq(t, "refusal names the holder", l.Holder, "h1")
	time.Sleep(400 * time.Millisecond)
	l2, got := take("f", "h2", time.Minute)
	eq(t, "takeover", got, true)
	eq(t, "takeover epoch", l2.Epoch, l1.Epoch+1)
	eq(t, "taken from", l2.From, "h1")
	if err := r.Check(ctx, store.Fence{Name: "f", Holder: "h1", Epoch: l1.Epoch}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale fence: %v, want ErrFenced", err)
	}
	renewed, err = r.Renew(ctx, "f", "h1", l1.Epoch, time.Minute)
	ok(t, err)
	eq(t, "stale renew", renewed, false)
	ok(t, r.Check(ctx, store.Fence{Name: "f", Holder: "h2", Epoch: l2.Epoch}))
	ok(t, r.Release(ctx, "f", "h2"))
	renewed, err = r.Renew(ctx, "f", "h2", l2.Epoch, time.Minute)
	ok(t, err)
	eq(t, "released lease not renewed", renewed, false)
	l3, got := take("f", "h1", time.Minute)
	eq(t, "free after release", got, true)
	eq(t, "new epoch after release", l3.Epoch, l2.Epoch+1)
	eq(t, "a release is no takeover", l3.From, "")
	if err := r.Check(ctx, store.Fence{Name: "f", Holder: "h1", Epoch: l1.Epoch}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("fence of an old epoch of the same holder: %v, want ErrFenced", err)
	}

	// A fenced write commits nothing: its Apply (taking lease "g") is
	// rolled back with the failed check.
	stale := &store.Fence{Name: "f", Holder: "h2", Epoch: l2.Epoch}
	err = store.DirectCommitter{DB: db}.Commit(ctx, &store.Write{Fence: stale, Apply: func(ctx context.Context, tx store.Store) error {
		_, err := tx.Leases().Acquire(ctx, "g", "hx", time.Minute)
		return err
	}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale fenced write: %v, want ErrFenced", err)
	}
	eq(t, "fenced write rolled back", acquire("g", "hy", time.Minute), true)
	ok(t, store.DirectCommitter{DB: db}.Commit(ctx, &store.Write{Fence: &store.Fence{Name: "f", Holder: "h1", Epoch: l3.Epoch}}))

	// Concurrent contenders: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := r.Acquire(ctx, "race", fmt.Sprint("h", i), time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if got {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	eq(t, "one winner", wins, 1)
}

// testFenceRenews: a write whose fence has Renew renews its lease (an
// expired one too, as long as nobody took it), never a released one, and
// a stale fence renews nothing; written directly and through the engine's
// committer (pipelined on PostgreSQL).
func testFenceRenews(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Leases()
	for _, c := range fenceCommitters(db) {
		t.Run(c.name, func(t *testing.T) {
			name := "renew:" + c.name
			fenced := func(holder string, epoch int64) error {
				return c.commit.Commit(ctx, &store.Write{Fence: &store.Fence{Name: name, Holder: holder, Epoch: epoch, Renew: time.Minute}})
			}
			l1, got, err := r.Take(ctx, name, "h1", 150*time.Millisecond)
			ok(t, err)
			eq(t, "take", got, true)
			ok(t, fenced("h1", l1.Epoch))
			time.Sleep(250 * time.Millisecond) // past the lease's own expiry
			_, got, err = r.Take(ctx, name, "h2", time.Minute)
			ok(t, err)
			eq(t, "renewed by the fenced write: taken", got, false)

			ok(t, r.Release(ctx, name, "h1"))
			ok(t, fenced("h1", l1.Epoch)) // the row still names h1 at that epoch
			l2, got, err := r.Take(ctx, name, "h2", 150*time.Millisecond)
			ok(t, err)
			eq(t, "a released lease stays released", got, true)

			if err := fenced("h1", l1.Epoch); !errors.Is(err, store.ErrFenced) {
				t.Fatalf("stale renewing fence: %v, want ErrFenced", err)
			}
			time.Sleep(250 * time.Millisecond)
			l3, got, err := r.Take(ctx, name, "h3", time.Minute)
			ok(t, err)
			eq(t, "a stale fence renewed nothing: expired, taken over", got, true)
			eq(t, "taken from", l3.From, "h2")
			eq(t, "new epoch", l3.Epoch, l2.Epoch+1)
		})
	}
}

// testFenceLocks: a write whose fence has no Renew commits while its
// holder's epoch is the lease's, renewing nothing (the lease expires and
// is taken over as if the write had not been), and a stale one fails
// with ErrFenced, its write rolled back; written directly and through the
// engine's committer (pipelined on PostgreSQL).
func testFenceLocks(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Leases()
	for _, c := range fenceCommitters(db) {
		t.Run(c.name, func(t *testing.T) {
			name := "lock:" + c.name
			// A fenced write takes lease row (its own write, to tell
			// whether it committed).
			fenced := func(holder string, epoch int64, row string) error {
				return c.commit.Commit(ctx, &store.Write{Fence: &store.Fence{Name: name, Holder: holder, Epoch: epoch},
					Apply: func(ctx context.Context, tx store.Store) error {
						_, err := tx.Leases().Acquire(ctx, name+":"+row, "w", time.Minute)
						return err
					}})
			}
			l1, got, err := r.Take(ctx, name, "h1", 150*time.Millisecond)
			ok(t, err)
			eq(t, "take", got, true)
			ok(t, fenced("h1", l1.Epoch, "first"))
			eq(t, "the fenced write committed", acquireFree(t, r, name+":first"), false)
			time.Sleep(250 * time.Millisecond) // past the lease's expiry: nothing renewed it
			l2, got, err := r.Take(ctx, name, "h2", time.Minute)
			ok(t, err)
			eq(t, "not renewed by the fence: taken over", got, true)
			eq(t, "taken from", l2.From, "h1")
			if err := fenced("h1", l1.Epoch, "stale"); !errors.Is(err, store.ErrFenced) {
				t.Fatalf("stale fence: %v, want ErrFenced", err)
			}
			eq(t, "the stale fenced write rolled back", acquireFree(t, r, name+":stale"), true)
			ok(t, fenced("h2", l2.Epoch, "second"))
		})
	}
}

// acquireFree tells whether lease name can be acquired (nobody holds it).
func acquireFree(t *testing.T, r store.Leases, name string) bool {
	t.Helper()
	got, err := r.Acquire(t.Context(), name, "probe", time.Minute)
	ok(t, err)
	return got
}

// testLeasePrune: Prune deletes only released or long-expired leases of
// its prefix, at most limit of them, and a lease taken again after its
// row went starts above every epoch it had.
func testLeasePrune(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Leases()
	take := func(name, holder string, ttl time.Duration) store.Lease {
		t.Helper()
		l, got, err := r.Take(ctx, name, holder, ttl)
		ok(t, err)
		eq(t, "take "+name, got, true)
		return l
	}
	old := take("p:released", "h1", time.Minute)
	ok(t, r.Release(ctx, "p:released", "h1"))
	take("p:expired", "h1", 50*time.Millisecond)
	take("p:live", "h1", time.Minute)
	take("q:released", "h1", time.Minute)
	ok(t, r.Release(ctx, "q:released", "h1"))
	for i := range 3 {
		take(fmt.Sprint("p:many", i), "h1", time.Minute)
		ok(t, r.Release(ctx, fmt.Sprint("p:many", i), "h1"))
	}
	time.Sleep(100 * time.Millisecond)

	// Released and expired leases of the prefix go, the live one and
	// other prefixes stay; limit bounds one call.
	n, err := r.Prune(ctx, "p:", time.Now(), 2)
	ok(t, err)
	eq(t, "bounded by limit", n, 2)
	n, err = r.Prune(ctx, "p:", time.Now(), 100)
	ok(t, err)
	eq(t, "the rest", n, 3)
	n, err = r.Prune(ctx, "p:", time.Now(), 100)
	ok(t, err)
	eq(t, "nothing left to prune", n, 0)
	_, got, err := r.Take(ctx, "p:live", "h2", time.Minute)
	ok(t, err)
	eq(t, "live lease kept", got, false)
	_, got, err = r.Take(ctx, "q:released", "h2", time.Minute)
	ok(t, err)
	eq(t, "other prefix: row kept, taken at a new epoch", got, true)

	// Recently released (before > release time) is not pruned.
	take("p:recent", "h1", time.Minute)
	ok(t, r.Release(ctx, "p:recent", "h1"))
	n, err = r.Prune(ctx, "p:", time.Now().Add(-time.Hour), 100)
	ok(t, err)
	eq(t, "an epoch newer than before is kept", n, 0)

	// The pruned lease's old fence fails, and taken again (by the same
	// holder) it starts above its old epoch.
	if err := r.Check(ctx, store.Fence{Name: "p:released", Holder: "h1", Epoch: old.Epoch}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("fence of a pruned lease: %v, want ErrFenced", err)
	}
	again := take("p:released", "h1", time.Minute)
	if again.Epoch <= old.Epoch {
		t.Fatalf("epoch after prune %d, want above %d", again.Epoch, old.Epoch)
	}
	if err := r.Check(ctx, store.Fence{Name: "p:released", Holder: "h1", Epoch: old.Epoch}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("old fence after the lease came back: %v, want ErrFenced", err)
	}
	ok(t, r.Check(ctx, store.Fence{Name: "p:released", Holder: "h1", Epoch: again.Epoch}))
}

// testFenceTakes: a write whose fence takes its lease (Fence.Take)
// commits where the lease is free (never taken, or released at a lower
// epoch) and leaves it the fence's holder's, live, at the fence's epoch;
// anywhere else (held live by anyone, expired but not released, released
// at an epoch not below the fence's) it fails with ErrFenced, the lease
// and the rest of the write untouched. Written directly and through the
// engine's committer (pipelined on PostgreSQL), and by racing writers
// (one wins).
func testFenceTakes(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Leases()
	for _, c := range fenceCommitters(db) {
		t.Run(c.name, func(t *testing.T) {
			// takenBy takes the lease for holder (and releases it), then
			// waits: the lease as a case finds it, and its epoch.
			takenBy := func(holder string, ttl time.Duration, release bool, wait time.Duration) func(string) int64 {
				return func(name string) int64 {
					l, _, err := r.Take(ctx, name, holder, ttl)
					ok(t, err)
					if release {
						ok(t, r.Release(ctx, name, holder))
					}
					time.Sleep(wait)
					return l.Epoch
				}
			}
			for _, tc := range []struct {
				name   string
				setup  func(name string) int64 // the lease as found; returns its epoch (0: no row)
				behind bool                    // the fence's epoch is the row's, not above (a clock behind)
				taken  bool
			}{
				{"never taken", func(string) int64 { return 0 }, false, true},
				{"released", takenBy("h2", time.Minute, true, 0), false, true},
				{"released at the fence's epoch", takenBy("h2", time.Minute, true, 0), true, false},
				{"held by another", takenBy("h2", time.Minute, false, 0), false, false},
				{"held by the same holder", takenBy("h1", time.Minute, false, 0), false, false},
				{"expired, not released", takenBy("h2", 50*time.Millisecond, false, 100*time.Millisecond), false, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					name := "take:" + c.name + ":" + tc.name
					side := name + ":side"
					had := tc.setup(name)
					epoch := had + 1
					if had == 0 {
						epoch = time.Now().UnixMicro()
					} else if tc.behind {
						epoch = had
					}
					free, read, err := r.Free(ctx, name)
					ok(t, err)
					eq(t, "free", free, tc.taken || tc.behind)
					eq(t, "the epoch it has", read, had)
					err = c.commit.Commit(ctx, &store.Write{
						Fence: &store.Fence{Name: name, Holder: "h1", Epoch: epoch, Renew: time.Minute, Take: true},
						// The rest of the write: commits only with the take.
						Apply: func(ctx context.Context, tx store.Store) error {
							_, err := tx.Leases().Acquire(ctx, side, "h1", time.Minute)
							return err
						},
					})
					if !tc.taken {
						if !errors.Is(err, store.ErrFenced) {
							t.Fatalf("take of a lease not free: %v, want ErrFenced", err)
						}
						got, err := r.Acquire(ctx, side, "h3", time.Minute)
						ok(t, err)
						eq(t, "the rest of a refused write committed nothing: side lease free", got, true)
						return
					}
					ok(t, err)
					free, read, err = r.Free(ctx, name)
					ok(t, err)
					eq(t, "free once taken", free, false)
					eq(t, "at the fence's epoch", read, epoch)
					// The fence's holder's at its epoch, live.
					ok(t, r.Check(ctx, store.Fence{Name: name, Holder: "h1", Epoch: epoch}))
					_, got, err := r.Take(ctx, name, "h3", time.Minute)
					ok(t, err)
					eq(t, "another holder takes the taken lease", got, false)
					l, got, err := r.Take(ctx, name, "h1", time.Minute)
					ok(t, err)
					eq(t, "its holder renews it", got, true)
					eq(t, "at the fence's epoch", l.Epoch, epoch)
					got, err = r.Acquire(ctx, side, "h3", time.Minute)
					ok(t, err)
					eq(t, "the rest of the write committed: side lease held", got, false)
				})
			}

			// Racing writers for one free lease: one takes it.
			name := "take:" + c.name + ":race"
			epoch := time.Now().UnixMicro()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won, fenced int
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := c.commit.Commit(ctx, &store.Write{Fence: &store.Fence{Name: name, Holder: fmt.Sprint("r", i), Epoch: epoch, Renew: time.Minute, Take: true}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, store.ErrFenced):
						fenced++
					default:
						t.Errorf("racing take: %v", err)
					}
				}()
			}
			wg.Wait()
			eq(t, "racing takes won", won, 1)
			eq(t, "racing takes fenced", fenced, 5)
		})
	}
}

// fenceCommitter is a way a fenced write commits.
type fenceCommitter struct {
	name   string
	commit store.Committer
}

// fenceCommitters are the two ways a fenced write commits: directly, and
// through the engine's committer (pipelined on PostgreSQL).
func fenceCommitters(db store.DB) []fenceCommitter {
	return []fenceCommitter{
		{"direct", store.DirectCommitter{DB: db}},
		{"committer", db.NewCommitter(nil)},
	}
}

// testTakeCancelled: a Take cancelled while it waits for the lease's row
// (another transaction inserting it, then rolled back) runs to its end
// and says what it did: had it given up, its statement could still take
// the lease in the database afterwards (sqlstore's Take), held then by a
// node that believes it was refused. Its caller, whose ctx ended,
// releases it, and the lease is free.
func testTakeCancelled(t *testing.T, db store.DB) {
	ctx := t.Context()
	inserted, rollback := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- db.InTx(ctx, func(tx store.Store) error {
			if _, err := tx.Leases().Acquire(ctx, "tc", "other", time.Minute); err != nil {
				return err
			}
			close(inserted)
			<-rollback
			return errors.New("rolled back")
		})
	}()
	select {
	case <-inserted:
	case err := <-txDone:
		t.Fatalf("the other transaction ended early: %v", err)
	}
	tctx, cancel := context.WithCancel(ctx)
	type took struct {
		ok  bool
		err error
	}
	res := make(chan took, 1)
	go func() {
		_, got, err := db.Leases().Take(tctx, "tc", "n1", time.Minute)
		res <- took{got, err}
	}()
	time.Sleep(100 * time.Millisecond) // the Take waits for the row
	cancel()
	time.Sleep(100 * time.Millisecond)
	close(rollback)
	if err := <-txDone; err == nil || err.Error() != "rolled back" {
		t.Fatalf("other transaction: %v", err)
	}
	r := <-res
	if r.err != nil || !r.ok {
		t.Fatalf("a Take cancelled midway: ok=%v err=%v, want it taken (run to its end)", r.ok, r.err)
	}
	held, epoch, err := db.Leases().Free(ctx, "tc")
	ok(t, err)
	eq(t, "held once taken", held, false)
	if epoch == 0 {
		t.Fatal("no epoch on the lease taken")
	}
	ok(t, db.Leases().Release(ctx, "tc", "n1"))
	free, _, err := db.Leases().Free(ctx, "tc")
	ok(t, err)
	eq(t, "free after its release", free, true)
}
