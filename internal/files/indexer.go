package files

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Indexer extracts and splits files whose status is indexing_pending in
// the background (one at a time): their passages are stored with their
// terms, and the file becomes indexing_completed, or indexing_failed with
// the reason. It polls every few seconds and is woken by uploads; files
// left pending by a stop are indexed at the next start.
type Indexer struct {
	store    store.Store
	blobs    Blobs
	embedder Embedder // nil: no semantic search
	log      *slog.Logger
	wake     chan struct{}
	done     chan struct{}
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// Wake asks the indexer to look for work now.
func (ix *Indexer) Wake() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// Start runs the indexer until Stop.
func (ix *Indexer) Start(ctx context.Context) {
	ctx, ix.stop = context.WithCancel(ctx)
	ix.wg.Add(1)
	go func() {
		defer ix.wg.Done()
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			for ix.RunOnce(ctx) > 0 {
			}
			select {
			case <-ctx.Done():
				return
			case <-ix.wake:
			case <-t.C:
			}
		}
	}()
}

// Stop stops the indexer and waits for the file in progress.
func (ix *Indexer) Stop() {
	if ix.stop != nil {
		ix.stop()
	}
	ix.wg.Wait()
}

// RunOnce indexes the pending files it finds and returns how many.
func (ix *Indexer) RunOnce(ctx context.Context) int {
	fs, err := ix.store.Files().FilesToIndex(ctx, 10)
	if err != nil {
		if ctx.Err() == nil {
			ix.log.Warn("files: listing files to index", "err", err)
		}
		return 0
	}
	for _, f := range fs {
		if ctx.Err() != nil {
			return 0
		}
		ix.index(ctx, f)
	}
	return len(fs)
}

func (ix *Indexer) index(ctx context.Context, f *model.File) {
	fail := func(reason string) {
		f.Status, f.FailedReason = model.FileIndexingFailed, reason
		if err := ix.store.Files().UpdateFile(ctx, f); err != nil && ctx.Err() == nil {
			ix.log.Warn("files: recording an indexing failure", "file", f.ID, "err", err)
		}
	}
	data, err := ix.blobs.Get(ctx, f.BotID, f.ID)
	if err != nil {
		fail("the file's content could not be read")
		return
	}
	blocks, err := extract(f.ContentType, f.Key, data)
	if err != nil {
		fail(err.Error())
		return
	}
	var ps []*model.Passage
	for _, p := range chunk(blocks) {
		ps = append(ps, &model.Passage{Content: p.text, Subtype: p.subtype, PageNumber: p.page, Breadcrumb: p.breadcrumb,
			Terms: passageTerms(p.subtype, p.text, p.breadcrumb)})
	}
	embedPassages(ctx, ix.embedder, ix.log, f.ID, ps)
	if err := ix.store.Files().SetPassages(ctx, f.BotID, f.ID, ps); err != nil {
		if !model.IsNotFound(err) && ctx.Err() == nil {
			fail("the passages could not be stored")
		}
		return
	}
	f.Status, f.FailedReason = model.FileIndexingCompleted, ""
	if err := ix.store.Files().UpdateFile(ctx, f); err != nil && ctx.Err() == nil && !model.IsNotFound(err) {
		ix.log.Warn("files: recording an indexed file", "file", f.ID, "err", err)
	}
}
