package store_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/parley-bots/parley/internal/store"
)

// TestGroupCommitterBatches checks how writes are grouped into
// transactions: one shard batches every write queued behind a running
// transaction; with localOnly (one shard or several) a write that is not
// Local commits alone, in its place in its conversation's order; a failed batch is
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
		name      string
		shards    int
		localOnly bool
		writes    []string // "conv:name", "!" before a name: not Local, "x" before: fails
		want      [][]string
	}{
		{"one shard batches all", 1, false, []string{"a:1", "a:!2", "a:3"}, [][]string{{"a:0"}, {"a:1", "a:!2", "a:3"}}},
		{"one shard, local only: not local alone, in order", 1, true, []string{"a:1", "a:!2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:!2"}, {"a:3"}}},
		{"shards: not local alone, in order", 2, true, []string{"a:1", "a:!2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:!2"}, {"a:3"}}},
		{"shards: local ones batched", 2, true, []string{"a:1", "a:2", "a:3"}, [][]string{{"a:0"}, {"a:1", "a:2", "a:3"}}},
		{"a failed batch, each alone", 1, false, []string{"a:1", "a:x2", "a:3"}, [][]string{{"a:0"}, {"a:1"}, {"a:3"}}},
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
				if err := fn(ctx, nil); err != nil {
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
			g := store.NewGroupCommitter(store.GroupConfig{Shards: tc.shards, LocalOnly: tc.localOnly}, run, func(w *store.Write) {
				mu.Lock()
				announced = append(announced, specs[w])
				mu.Unlock()
			})
			// The writes have no signal or turn (the fake transaction has
			// no store): all of them are of one shard.
			write := func(spec string) *store.Write {
				name := spec[2:]
				w := &store.Write{Local: name[0] != '!',
					Apply: func(ctx context.Context, _ store.Store) error {
						if name[0] == 'x' {
							return bad
						}
						names := ctx.Value(txKey{}).(*[]string)
						*names = append(*names, spec)
						return nil
					}}
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
			var committed []string
			for _, tx := range tc.want {
				committed = append(committed, tx...)
			}
			if !slices.Equal(announced, committed) {
				t.Fatalf("announced %v, want %v", announced, committed)
			}
		})
	}
}

type txKey struct{}

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
