package app

import (
	"context"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

// commitObserver is told about every write of the chat pipeline
// (metrics.Metrics.CommitDone).
type commitObserver interface {
	CommitDone(d time.Duration, failed bool)
}

// observedCommitter times each write from its submission to its outcome:
// the wait for its group commit, then the commit.
type observedCommitter struct {
	store.Committer
	obs commitObserver
}

func (c observedCommitter) Commit(ctx context.Context, w *store.Write) error {
	return c.Submit(ctx, w)()
}

func (c observedCommitter) Submit(ctx context.Context, w *store.Write) (wait func() error) {
	start := time.Now()
	committed := c.Committer.Submit(ctx, w)
	var once sync.Once
	return func() error {
		err := committed()
		once.Do(func() { c.obs.CommitDone(time.Since(start), err != nil) })
		return err
	}
}
