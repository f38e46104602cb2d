package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestPinnedNumbering: the pinned writer numbers a conversation's signals
// and turns from the counters it remembers (number) while nothing else
// moved them, and from the row once something did (another connection's
// signal or turn, numbers given back, its own rolled-back transaction):
// every number is taken once, none is skipped.
func TestPinnedNumbering(t *testing.T) {
	ctx := context.Background()
	db, raw := pinnedSQLite(t)
	for _, q := range []string{
		`CREATE TABLE conversations (bot_id TEXT, id TEXT, last_seq INTEGER NOT NULL DEFAULT 0, turn_seq INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (bot_id, id))`,
		`CREATE TABLE signals (bot_id TEXT, conversation_id TEXT, seq INTEGER, type TEXT, data TEXT, created_at INTEGER, PRIMARY KEY (bot_id, conversation_id, seq))`,
		`CREATE TABLE turns (bot_id TEXT, conversation_id TEXT, seq INTEGER, kind TEXT, ref_id TEXT, user_id TEXT, attempts INTEGER, created_at INTEGER, PRIMARY KEY (bot_id, conversation_id, seq))`,
		`INSERT INTO conversations (bot_id, id) VALUES ('b', 'c'), ('b', 'other')`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ref := model.ConversationRef{BotID: "b", ConversationID: "c"}
	signal := func() *model.Signal {
		return &model.Signal{BotID: "b", ConversationID: "c", Type: "message_created", Data: []byte(`{}`)}
	}
	// folded is a folded message's numbering on the pinned writer: its
	// signal, its unstored turn, and ahead numbers taken after the signal.
	folded := func(ahead int, fail error) (seq, turn int64, err error) {
		sg, tn := signal(), &model.Turn{BotID: "b", ConversationID: "c", Kind: model.TurnMessage}
		err = db.InPinnedTx(ctx, func(tx store.Store) error {
			c := store.WithUnstoredTurn(ctx, tn)
			if ahead > 0 {
				c = store.WithSignalsAhead(c, &store.SignalsAhead{Want: ahead})
			}
			if err := tx.Signals().AppendSignalTurn(c, sg, tn); err != nil {
				return err
			}
			return fail
		})
		return sg.Seq, tn.Seq, err
	}
	casRan := func() bool {
		for q := range db.e.pinnedStmts {
			if strings.Contains(q, "AND last_seq = ? AND turn_seq = ?") {
				return true
			}
		}
		return false
	}
	onWriter := func(fn func(tx store.Store) (seq, turn int64, err error)) (seq, turn int64, err error) {
		err = db.InPinnedTx(ctx, func(tx store.Store) error {
			seq, turn, err = fn(tx)
			return err
		})
		return seq, turn, err
	}
	appendSignal := func(tx store.Store) (int64, int64, error) {
		sg := signal()
		err := tx.Signals().AppendSignal(ctx, sg)
		return sg.Seq, 0, err
	}
	enqueueTurn := func(tx store.Store) (int64, int64, error) {
		tn := &model.Turn{BotID: "b", ConversationID: "c", Kind: model.TurnMessage}
		err := tx.Signals().EnqueueTurn(ctx, tn)
		return 0, tn.Seq, err
	}
	rolledBack := errors.New("rolled back")
	for _, step := range []struct {
		name       string
		do         func() (seq, turn int64, err error)
		seq, turn  int64    // what the step numbered (0: nothing to check)
		remembered convSeqs // the writer's counters after the step (zero: none)
		casRanBy   bool     // the compare-and-set ran by then
		wantErr    error
	}{
		{"first: read from the row", func() (int64, int64, error) { return folded(0, nil) }, 1, 1, convSeqs{1, 1}, false, nil},
		{"second: from the counters remembered", func() (int64, int64, error) { return folded(0, nil) }, 2, 2, convSeqs{2, 2}, true, nil},
		{"a signal on another connection", func() (int64, int64, error) { return appendSignal(db) }, 3, 0, convSeqs{2, 2}, true, nil},
		{"after it: from the row again", func() (int64, int64, error) { return folded(0, nil) }, 4, 3, convSeqs{4, 3}, true, nil},
		{"a turn on another connection", func() (int64, int64, error) { return enqueueTurn(db) }, 0, 4, convSeqs{4, 3}, true, nil},
		{"after the turn", func() (int64, int64, error) { return folded(0, nil) }, 5, 5, convSeqs{5, 5}, true, nil},
		{"a signal on the writer", func() (int64, int64, error) { return onWriter(appendSignal) }, 6, 0, convSeqs{6, 5}, true, nil},
		{"a turn on the writer", func() (int64, int64, error) { return onWriter(enqueueTurn) }, 0, 6, convSeqs{6, 6}, true, nil},
		{"two numbers ahead", func() (int64, int64, error) { return folded(2, nil) }, 7, 7, convSeqs{9, 7}, true, nil},
		{"the two given back", func() (int64, int64, error) {
			return 0, 0, db.Signals().GiveBackSignals(ctx, "b", "c", 2)
		}, 0, 0, convSeqs{9, 7}, true, nil},
		{"after the give-back", func() (int64, int64, error) { return folded(0, nil) }, 8, 8, convSeqs{8, 8}, true, nil},
		{"rolled back", func() (int64, int64, error) { return folded(0, rolledBack) }, 0, 0, convSeqs{}, true, rolledBack},
		{"after the rollback", func() (int64, int64, error) { return folded(0, nil) }, 9, 9, convSeqs{9, 9}, true, nil},
	} {
		seq, turn, err := step.do()
		if !errors.Is(err, step.wantErr) {
			t.Fatalf("%s: err %v, want %v", step.name, err, step.wantErr)
		}
		if step.seq != 0 && seq != step.seq {
			t.Errorf("%s: signal %d, want %d", step.name, seq, step.seq)
		}
		if step.turn != 0 && turn != step.turn {
			t.Errorf("%s: turn %d, want %d", step.name, turn, step.turn)
		}
		if got, _ := db.e.pinnedSeqs.get(ref); got != step.remembered {
			t.Errorf("%s: counters remembered %v, want %v", step.name, got, step.remembered)
		}
		if got := casRan(); got != step.casRanBy {
			t.Errorf("%s: the compare-and-set ran: %v, want %v", step.name, got, step.casRanBy)
		}
	}
	var last, turns int64
	if err := raw.QueryRowContext(ctx, `SELECT last_seq, turn_seq FROM conversations WHERE id = 'c'`).Scan(&last, &turns); err != nil || last != 9 || turns != 9 {
		t.Errorf("the row: last_seq %d, turn_seq %d (err %v), want 9 and 9", last, turns, err)
	}
	var other int64
	if err := raw.QueryRowContext(ctx, `SELECT last_seq + turn_seq FROM conversations WHERE id = 'other'`).Scan(&other); err != nil || other != 0 {
		t.Errorf("another conversation moved: %d (err %v)", other, err)
	}
}

// TestPinnedSeqsBounded: the counters remembered stay within
// maxPinnedSeqs however many conversations the writer numbers, the newest
// kept. (That another store remembers nothing: TestPinnedNumbering's steps
// on another connection.)
func TestPinnedSeqsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want int
	}{
		{"below the bound, all", 100, 100},
		{"past it, the bound", 3 * maxPinnedSeqs, maxPinnedSeqs},
	} {
		var c convCounters
		var last model.ConversationRef
		for i := range tc.n {
			last = model.ConversationRef{BotID: "b", ConversationID: strconv.Itoa(i)}
			c.put(last, convSeqs{int64(i), 1})
		}
		if got := len(c.m); got != tc.want {
			t.Errorf("%s: %d remembered, want %d", tc.name, got, tc.want)
		}
		if v, ok := c.get(last); !ok || v != (convSeqs{int64(tc.n - 1), 1}) {
			t.Errorf("%s: the newest: %v %v", tc.name, v, ok)
		}
	}
}
