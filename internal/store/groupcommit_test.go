package store_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestGroupCommitterBatches checks how writes are grouped into
// transactions: one shard batches every write queued behind a running
// transaction; with localOnly (one shard or several) a write that is not
// Local commits alone, in its place in its conversation's order, unless
// it lists the states it shares and lockShared is on: it then joins the
// batch, whose transaction locks those states before any write; a failed batch is
// retried one write per transaction, the failing write alone failing; and
// the after-commit hook sees the committed writes, each conversation's in
// order.
func TestGroupCommitterBatches(t *testing.T) {
	type txLog struct {
		mu  sync.Mutex
		txs [][]string // the writes of each committed transaction
	}
	bad := errors.New("bad write")
	cases := []struct {
		name       string
		shards     int
		localOnly  bool
		lockShared bool
		// "conv:name"; before a name, "!": not Local, "s": not Local,
		// sharing the state named after it, "m": the same and more
		// (SharesMore); "x": fails
		writes []string
		want   [][]string
		// wantTx is Transactions: every transaction run, the rolled-back
		// batch included.
		wantTx uint64
	}{
		{"one shard batches all", 1, false, false, []string{"a:1", "a:!2", "a:3"}, [][]string{{"a:0"}, {"a:1", "a:!2", "a:3"}}, 2},
		{"one shard, local only: not local alone, in order", 1, true, false, []string{"a:1", "a:!2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:!2"}, {"a:3"}}, 4},
		{"shards: not local alone, in order", 2, true, false, []string{"a:1", "a:!2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:!2"}, {"a:3"}}, 4},
		{"shards: local ones batched", 2, true, false, []string{"a:1", "a:2", "a:3"}, [][]string{{"a:0"}, {"a:1", "a:2", "a:3"}}, 2},
		{"a failed batch, each alone", 1, false, false, []string{"a:1", "a:x2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:3"}}, 5},
		{"local only: shared states alone without lockShared", 2, true, false, []string{"a:1", "a:s2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:s2"}, {"a:3"}}, 4},
		{"lockShared: shared states batched, locked first", 2, true, true, []string{"a:1", "a:s2", "a:s3", "a:!4", "a:s5"},
			[][]string{{"a:0"}, {"lock:s2,s3", "a:1", "a:s2", "a:s3"}, {"a:!4"}, {"lock:s5", "a:s5"}}, 4},
		{"lockShared: a failed batch's writes locked alone", 1, true, true, []string{"a:s1", "a:x2", "a:s3"},
			[][]string{{"a:0"}, {"lock:s1", "a:s1"}, {"lock:s3", "a:s3"}}, 5},
		{"lockShared: sharing more, alone but locked", 2, true, true, []string{"a:s1", "a:m2", "a:s3"},
			[][]string{{"a:0"}, {"lock:s1", "a:s1"}, {"lock:m2", "a:m2"}, {"lock:s3", "a:s3"}}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log txLog
			started, release := make(chan struct{}), make(chan struct{})
			var first sync.Once
			run := func(ctx context.Context, fn func(context.Context, store.Store) error) error {
				first.Do(func() { close(started); <-release })
				var names []string
				ctx = context.WithValue(ctx, txKey{}, &names)
				if err := fn(ctx, lockLog{}); err != nil {
					return err // rolled back: not logged
				}
				log.mu.Lock()
				log.txs = append(log.txs, names)
				log.mu.Unlock()
				return nil
			}
			var announced []string
			var mu sync.Mutex
			specs := map[*store.Write]string{}
			g := store.NewGroupCommitter(store.GroupConfig{Shards: tc.shards, LocalOnly: tc.localOnly, LockShared: tc.lockShared}, run, func(w *store.Write) {
				mu.Lock()
				announced = append(announced, specs[w])
				mu.Unlock()
			})
			// The writes have no signal or turn (the fake transaction has
			// no store): all of them are of one shard.
			write := func(spec string) *store.Write {
				name := spec[2:]
				w := &store.Write{Local: !strings.ContainsRune("!sm", rune(name[0])), SharesMore: name[0] == 'm',
					Apply: func(ctx context.Context, _ store.Store) error {
						if name[0] == 'x' {
							return bad
						}
						names := ctx.Value(txKey{}).(*[]string)
						*names = append(*names, spec)
						return nil
					}}
				if name[0] == 's' || name[0] == 'm' {
					w.SharedStates = []store.StateKey{{BotID: "b", Scope: store.ScopeUser, OwnerID: name}}
				}
				mu.Lock()
				specs[w] = spec
				mu.Unlock()
				return w
			}
			// The first write's transaction holds the shard while the
			// others queue behind it.
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); _ = g.Commit(t.Context(), write("a:0")) }()
			<-started
			waits := make([]func() error, len(tc.writes))
			for i, spec := range tc.writes {
				waits[i] = g.Submit(t.Context(), write(spec))
			}
			close(release)
			for i, w := range waits {
				err := w()
				if fails := tc.writes[i][2] == 'x'; fails != errors.Is(err, bad) {
					t.Fatalf("write %s: err %v", tc.writes[i], err)
				}
			}
			wg.Wait()
			if !slices.EqualFunc(log.txs, tc.want, slices.Equal) {
				t.Fatalf("transactions %v, want %v", log.txs, tc.want)
			}
			if got := g.Transactions(); got != tc.wantTx {
				t.Fatalf("Transactions() = %d, want %d", got, tc.wantTx)
			}
			var committed []string
			for _, tx := range tc.want {
				for _, name := range tx {
					if !strings.HasPrefix(name, "lock:") {
						committed = append(committed, name)
					}
				}
			}
			if !slices.Equal(announced, committed) {
				t.Fatalf("announced %v, want %v", announced, committed)
			}
		})
	}
}

type txKey struct{}

// lockLog is a transaction that logs, as "lock:<owners>", the states
// locked through it (the rest of its store is nil).
type lockLog struct{ store.Store }

func (lockLog) States() store.States { return lockStates{} }

type lockStates struct{ store.States }

func (lockStates) LockShared(ctx context.Context, keys []store.StateKey) error {
	owners := make([]string, len(keys))
	for i, k := range keys {
		owners[i] = k.OwnerID
	}
	names := ctx.Value(txKey{}).(*[]string)
	*names = append(*names, "lock:"+strings.Join(owners, ","))
	return nil
}

// TestGroupCommitterYield checks that with Yield a batch waits for the
// goroutines ready to run: on one P, a goroutine that becomes ready before
// the shard's goroutine takes its first batch submits its write into that
// batch. Without the yield the shard's goroutine runs first and commits the
// first write alone. The scheduler may pick the shard's goroutine back at
// once (it checks its global queue first every 61 schedules), so a few
// attempts of twenty may commit alone.
func TestGroupCommitterYield(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const attempts = 20
	together := 0
	for range attempts {
		var sizes []int // of each transaction; one P: no lock needed, but the race detector wants one
		var mu sync.Mutex
		run := func(ctx context.Context, fn func(context.Context, store.Store) error) error {
			var names []string
			if err := fn(context.WithValue(ctx, txKey{}, &names), nil); err != nil {
				return err
			}
			mu.Lock()
			sizes = append(sizes, len(names))
			mu.Unlock()
			return nil
		}
		g := store.NewGroupCommitter(store.GroupConfig{Shards: 1, Yield: true}, run, func(*store.Write) {})
		write := func() *store.Write {
			return &store.Write{Local: true, Apply: func(ctx context.Context, _ store.Store) error {
				names := ctx.Value(txKey{}).(*[]string)
				*names = append(*names, "w")
				return nil
			}}
		}
		second := make(chan func() error, 1)
		go func() { second <- g.Submit(t.Context(), write()) }() // ready, not yet run
		if err := g.Submit(t.Context(), write())(); err != nil {
			t.Fatal(err)
		}
		if err := (<-second)(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if slices.Equal(sizes, []int{2}) {
			together++
		}
		mu.Unlock()
	}
	if together < attempts*3/4 {
		t.Fatalf("%d of %d attempts committed both writes in one batch, want most", together, attempts)
	}
}

// TestGroupCommitterSpills checks where writes go with several shards:
// while shard 0 commits, writes of other conversations wait for it until
// spillAt of them do, then go to the next shard, which commits them side
// by side; a write of a conversation with a write not committed yet goes
// to that write's shard, after it, whatever the lines. Once all are
// committed, no conversation is held.
func TestGroupCommitterSpills(t *testing.T) {
	for _, c := range []struct {
		name  string
		queue int  // writes of other conversations queued behind "a:0" before "z:1"
		spill bool // z:1 goes to the next shard
	}{
		{"a short line waits", store.SpillAt - 1, false},
		{"a long line spills", store.SpillAt, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			var first sync.Once
			var mu sync.Mutex
			var txs [][]string
			run := func(ctx context.Context, fn func(context.Context, store.Store) error) error {
				isFirst := false
				first.Do(func() { isFirst = true })
				if isFirst {
					close(started)
					<-release
				}
				var names []string
				if err := fn(context.WithValue(ctx, txKey{}, &names), nil); err != nil {
					return err
				}
				mu.Lock()
				txs = append(txs, names)
				mu.Unlock()
				return nil
			}
			g := store.NewGroupCommitter(store.GroupConfig{Shards: 2, LocalOnly: true}, run, nil)
			write := func(spec string) *store.Write {
				conv, _, _ := strings.Cut(spec, ":")
				return &store.Write{Local: true, Ref: model.ConversationRef{BotID: "b", ConversationID: conv},
					Apply: func(ctx context.Context, _ store.Store) error {
						names := ctx.Value(txKey{}).(*[]string)
						*names = append(*names, spec)
						return nil
					}}
			}
			txOf := func(spec string) []string {
				mu.Lock()
				defer mu.Unlock()
				for _, tx := range txs {
					if slices.Contains(tx, spec) {
						return tx
					}
				}
				return nil
			}
			waits := []func() error{g.Submit(t.Context(), write("a:0"))}
			<-started // a:0's batch holds shard 0
			for i := range c.queue {
				waits = append(waits, g.Submit(t.Context(), write(fmt.Sprintf("c%d:1", i))))
			}
			z := g.Submit(t.Context(), write("z:1"))
			// a's next write joins a:0's shard, whatever its line.
			waits = append(waits, z, g.Submit(t.Context(), write("a:1")))
			if c.spill {
				done := make(chan error, 1)
				go func() { done <- z() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("z:1 did not commit on the next shard while shard 0 was held")
				}
				if tx := txOf("a:0"); tx != nil {
					t.Fatalf("a:0 committed while held: %v", tx)
				}
			}
			close(release)
			for _, w := range waits {
				if err := w(); err != nil {
					t.Fatal(err)
				}
			}
			// z:1 alone on the next shard, or in shard 0's next batch;
			// a:1 in shard 0's next batch, whatever its line.
			want := []string{"z:1"}
			if !c.spill {
				want = append([]string{"a:1"}, append(names("c", c.queue, ":1"), "z:1")...)
			}
			if got := txOf("z:1"); !slices.Equal(got, want) {
				t.Fatalf("z:1 committed in %v, want %v", got, want)
			}
			if got := txOf("a:1"); !slices.Contains(got, "c0:1") {
				t.Fatalf("a:1 committed in %v, want shard 0's next batch", got)
			}
			if got := txOf("a:0"); !slices.Equal(got, []string{"a:0"}) {
				t.Fatalf("a:0 committed in %v", got)
			}
			if n := store.Held(g); n != 0 {
				t.Fatalf("%d conversations still held once all committed", n)
			}
		})
	}
}

// names are prefix0suffix ... prefix(n-1)suffix.
func names(prefix string, n int, suffix string) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d%s", prefix, i, suffix))
	}
	return out
}
