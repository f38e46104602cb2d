package store_test

import (
	"context"
	"errors"
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
			g := store.NewGroupCommitter(tc.shards, tc.localOnly, run, func(w *store.Write) {
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
