package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"
)

const (
	// checkpointInterval is the least time between two background
	// checkpoints. 100 ms (at 1,000 messages/s ~1,300 WAL frames, about
	// what SQLite's default threshold, 1,000 pages, copies at once) gave
	// 1.28x the sustained createMessage rate of the automatic checkpoint
	// in side-by-side runs, with the same p99 (250 ms: the same; 30 ms:
	// more CPU per message). A checkpoint syncs the WAL, then the database
	// file; at 1,000 messages/s those syncs took 1.7 to 22.7 ms and some
	// of the commits' WAL writes 1.2 to 6.4 ms (perf trace, calls over
	// 1 ms). Halving the interval halves
	// what each sync flushes. 50 ms against 100 ms, six side-by-side runs
	// at 1,000 messages/s: the replies' p99 lower in all six, median 22.5
	// against 28.5 ms, the same CPU per message (median 1,057 against
	// 1,069 µs); the closed loop's rate the same in three (2,405 against
	// 2,336/s, 2,127 against 2,122, 2,139 against 2,128). 30 ms: 0.89x
	// that rate in one run.
	checkpointInterval = 50 * time.Millisecond
	// autocheckpointBackstop is SQLite's own threshold in pages (40 MB
	// of WAL at 4 KB pages), for WAL growth the checkpointer is not told
	// of (writes outside group commit).
	autocheckpointBackstop = 10000
)

// checkpointer copies the WAL back into the database file off the
// writer's path. SQLite's automatic checkpoint runs inside the commit
// that crosses its threshold, so the single writer (the group committer)
// stopped every ~1,000 pages to copy them and fsync the file while every
// write waited behind it. Here a goroutine on another connection runs a
// PASSIVE checkpoint (it takes no write lock: the writer appends while it
// copies) when the committer pokes it, at most once per interval; the
// automatic checkpoint stays on as a backstop at a higher threshold for
// writes outside group commit.
type checkpointer struct {
	db       *sql.DB
	interval time.Duration
	poke     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

func startCheckpointer(db *sql.DB, interval time.Duration) *checkpointer {
	c := &checkpointer{db: db, interval: interval, poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// wrote tells the checkpointer that a commit appended to the WAL.
func (c *checkpointer) wrote() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.poke:
		}
		c.checkpoint()
		select {
		case <-c.stop:
			return
		case <-time.After(c.interval):
		}
	}
}

func (c *checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var busy, log, done int
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil {
		slog.Warn("sqlite: checkpoint", "err", err)
	}
}

// close stops the goroutine; the last connection's close checkpoints
// what is left.
func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}
