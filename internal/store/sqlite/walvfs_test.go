package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlite"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// writeCalls is the number of write system calls this process made
// (pwrite included), from /proc/self/io.
func writeCalls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no syscw in /proc/self/io")
	return 0
}

func sqlOf(db store.DB) *sql.DB { return db.(*sqlite.DB).SQL() }

// commitRows inserts n rows of size bytes each in one transaction.
func commitRows(t *testing.T, db *sql.DB, first, n, size int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := tx.ExecContext(ctx, `INSERT INTO walt (id, v) VALUES (?, ?)`, first+i, bytes.Repeat([]byte{byte(first + i)}, size)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkRows: the rows first..first+n-1 are there with their contents, and
// the file passes SQLite's integrity check.
func checkRows(t *testing.T, db *sql.DB, first, n, size int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		var v []byte
		if err := db.QueryRow(`SELECT v FROM walt WHERE id = ?`, i).Scan(&v); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, size)) {
			t.Fatalf("row %d: %d bytes, not what was written", i, len(v))
		}
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
}

// TestWALWritesGathered: a commit of ~100 pages reaches the WAL in a few
// writes through walVFS, against two per page through SQLite's default
// VFS; another connection reads it at once.
func TestWALWritesGathered(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts system calls in /proc/self/io")
	}
	const rows, size = 400, 1000
	for _, tc := range []struct {
		name     string
		open     func(context.Context, string) (store.DB, error)
		min, max int
	}{
		{"walVFS", func(ctx context.Context, path string) (store.DB, error) { return sqlite.Open(ctx, path) }, 1, 12},
		{"walVFS, sync full", func(ctx context.Context, path string) (store.DB, error) {
			return sqlite.OpenWith(ctx, path, sqlite.Options{SyncFull: true})
		}, 1, 12},
		{"default VFS", sqlite.OpenPlain, 150, 1 << 20}, // two a page
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := tc.open(t.Context(), testdb.SQLitePath(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := sqlOf(db)
			s.SetMaxOpenConns(2) // a writer and a reader
			if _, err := s.Exec(`CREATE TABLE walt (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
				t.Fatal(err)
			}
			before := writeCalls(t)
			commitRows(t, s, 0, rows, size)
			writes := writeCalls(t) - before
			t.Logf("a commit of %d KB: %d write calls", rows*size/1000, writes)
			if writes < tc.min || writes > tc.max {
				t.Errorf("a commit of %d KB made %d write calls, want %d to %d", rows*size/1000, writes, tc.min, tc.max)
			}
			checkRows(t, s, 0, rows, size)
		})
	}
}

// TestWALLargeAndRolledBack: a transaction larger than walVFS's buffer,
// one rolled back after spilling frames to the WAL, commits after it, and
// a WAL restarted from its start all leave the rows committed, in this
// process and once reopened.
func TestWALLargeAndRolledBack(t *testing.T) {
	ctx := t.Context()
	path := testdb.SQLitePath(t)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s := sqlOf(db)
	s.SetMaxOpenConns(1) // the pragma below holds for the one connection
	if _, err := s.Exec(`CREATE TABLE walt (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	commitRows(t, s, 0, 3000, 2000) // ~6 MB: more than one buffer
	// A small page cache spills the transaction's pages to the WAL before
	// its commit; this one rolls back.
	if _, err := s.Exec(`PRAGMA cache_size = 20`); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := tx.Exec(`INSERT INTO walt (id, v) VALUES (?, ?)`, 10000+i, bytes.Repeat([]byte{9}, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	commitRows(t, s, 3000, 50, 3000)
	for range 3 {
		commitRows(t, s, 3050, 1, 10)
		if _, err := s.Exec(`DELETE FROM walt WHERE id = 3050`); err != nil {
			t.Fatal(err)
		}
	}
	// The next commit after a truncating checkpoint writes the WAL from its
	// start again.
	var busy, logged, done int
	if err := s.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil || busy != 0 {
		t.Fatalf("checkpoint: busy %d, %v", busy, err)
	}
	commitRows(t, s, 4000, 100, 500)
	var spilled int
	if err := s.QueryRow(`SELECT count(*) FROM walt WHERE id >= 10000`).Scan(&spilled); err != nil || spilled != 0 {
		t.Fatalf("rolled-back rows: %d, %v", spilled, err)
	}
	checkRows(t, s, 0, 3000, 2000)
	checkRows(t, s, 3000, 50, 3000)
	db.Close()

	again, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	checkRows(t, sqlOf(again), 4000, 100, 500)
	checkRows(t, sqlOf(again), 3000, 50, 3000)
}

// TestWALCommitsSurviveKill: every commit that returned is in the file
// after the process is killed (SIGKILL, nothing closed): walVFS writes a
// commit's frames before the commit returns, as SQLite's own VFS does.
func TestWALCommitsSurviveKill(t *testing.T) {
	if path := os.Getenv("PARLEY_WALVFS_CHILD"); path != "" {
		walKillChild(path)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("kills a child with SIGKILL")
	}
	path := testdb.SQLitePath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALCommitsSurviveKill$")
	cmd.Env = append(os.Environ(), "PARLEY_WALVFS_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last := -1
	lines := bufio.NewScanner(out)
	for last < 300 && lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "committed "); ok {
			last, _ = strconv.Atoi(v)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if last < 300 {
		t.Fatalf("the child committed up to %d before it stopped", last)
	}
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkRows(t, sqlOf(db), 0, last+1, 5000)
}

// walKillChild commits a row at a time and says so, until it is killed.
func walKillChild(path string) {
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := sqlOf(db)
	if _, err := s.Exec(`CREATE TABLE walt (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		if _, err := s.Exec(`INSERT INTO walt (id, v) VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 5000)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("committed %d\n", i)
	}
}
