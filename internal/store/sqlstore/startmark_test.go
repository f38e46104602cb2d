package sqlstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestStartWrite: the statements that may change a turn's start are told
// from those that cannot, the conversation's counters included.
func TestStartWrite(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{`INSERT INTO chat_users (bot_id, id) VALUES (?, ?)`, true},
		{`UPDATE chat_users SET name = ? WHERE bot_id = ? AND id = ?`, true},
		{`DELETE FROM chat_users WHERE bot_id = ? AND id = ?`, true},
		{`INSERT INTO conversations (bot_id, id) VALUES (?, ?)`, true},
		{`UPDATE conversations SET tags = ?, updated_at = ? WHERE bot_id = ? AND id = ?`, true},
		{`UPDATE conversations SET last_seq = last_seq + 1, updated_at = ? WHERE bot_id = ?`, true},
		{`UPDATE conversations SET tags = ?`, true},
		{`DELETE FROM conversations WHERE bot_id = ? AND id = ?`, true},
		{"INSERT INTO states (bot_id, scope, owner_id, data, updated_at) VALUES (?, ?, ?, ?, ?)\n\t\tON CONFLICT (bot_id, scope, owner_id) DO UPDATE SET data = excluded.data", true},
		{`insert or replace into states (bot_id) values (?)`, true},
		{`REPLACE INTO handoffs (bot_id) VALUES (?)`, true},
		{`DELETE FROM handoffs WHERE bot_id = ? AND conversation_id = ?`, true},
		{`DELETE FROM bots WHERE workspace_id = ? AND id = ?`, true},
		{`DELETE FROM workspaces WHERE id = ?`, true},
		{`DELETE FROM accounts WHERE id = ?`, true},
		// A CTE that numbers, then one that tags.
		{`WITH c AS (UPDATE conversations SET last_seq = last_seq + 1 + ?, turn_seq = turn_seq + ? WHERE bot_id = ? AND id = ? RETURNING last_seq)
			INSERT INTO signals (bot_id) SELECT bot_id FROM c`, false},
		{`WITH c AS (UPDATE conversations SET last_seq = last_seq + 1 WHERE bot_id = ? RETURNING id) UPDATE conversations SET owner_id = ? WHERE id IN (SELECT id FROM c)`, true},
		{"UPDATE conversations SET last_seq = last_seq + 1, turn_seq = turn_seq + ?\n\t\tWHERE bot_id = ? AND id = ? RETURNING last_seq, turn_seq", false},
		{`UPDATE conversations SET turn_seq = turn_seq + 1 WHERE bot_id = ? AND id = ? RETURNING turn_seq`, false},
		{`UPDATE conversations SET last_seq = last_seq - ? WHERE bot_id = ? AND id = ?`, false},
		{`INSERT INTO messages (bot_id, id) VALUES (?, ?)`, false},
		{`INSERT INTO runtime_states (bot_id) VALUES (?)`, false},
		{`DELETE FROM runtime_states WHERE bot_id = ?`, false},
		{`SELECT data FROM states WHERE bot_id = ?`, false},
		{`SELECT 1 FROM conversations c LEFT JOIN chat_users u ON u.bot_id = c.bot_id`, false},
		{`UPDATE bot_tables SET next_row_id = next_row_id + ? WHERE id = ?`, false},
	} {
		if got := startWrite(tc.q); got != tc.want {
			t.Errorf("startWrite(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// markedDB is a migrated SQLite store that counts its start changes
// (Dialect.LocalWrites), with a bot, a user u1 and a conversation c1, and
// the database under it for writes the store does not see.
func markedDB(t *testing.T) (*DB, *sql.DB, string) {
	t.Helper()
	ctx := t.Context()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db := New(raw, Dialect{Name: "sqlite", CacheStatements: true, PinnedBegin: "BEGIN IMMEDIATE", LocalWrites: true})
	t.Cleanup(func() { _ = db.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Migrate(ctx))
	a := &model.Account{Email: "o@example.com"}
	must(db.Accounts().Create(ctx, a))
	w := &model.Workspace{Name: "w", OwnerID: a.ID}
	must(db.Workspaces().Create(ctx, w))
	b := &model.Bot{WorkspaceID: w.ID, Name: "b", Type: model.DefaultBotType}
	must(db.Bots().Create(ctx, b))
	must(db.Chat().CreateUser(ctx, &model.ChatUser{BotID: b.ID, ID: "u1"}))
	must(db.Chat().CreateConversation(ctx, &model.Conversation{BotID: b.ID, ID: "c1", OwnerID: "u1"}))
	return db, raw, b.ID
}

// TestStartHoldsUnread: on a store whose writes all go through it, a start
// read idle holds without being read again until the store writes what may
// change it, and a start changed since it was read is read.
func TestStartHoldsUnread(t *testing.T) {
	ctx := t.Context()
	db, raw, bot := markedDB(t)
	idle := func() store.TurnStart {
		t.Helper()
		it, err := db.States().GetIdleTurn(ctx, bot, "u1", "c1")
		if err != nil || it.Start.Mark.Changes == 0 {
			t.Fatalf("GetIdleTurn: mark %+v, err %v", it.Start.Mark, err)
		}
		return it.Start
	}
	holds := func(start store.TurnStart) bool {
		t.Helper()
		err := db.States().RequireTurnStart(ctx, bot, "u1", "c1", start)
		if err != nil && !errors.Is(err, store.ErrStartChanged) {
			t.Fatal(err)
		}
		return err == nil
	}
	start := idle()
	// A write the store does not see is not read: the start still holds.
	if _, err := raw.ExecContext(ctx, `UPDATE chat_users SET name = 'behind' WHERE id = 'u1'`); err != nil {
		t.Fatal(err)
	}
	if !holds(start) {
		t.Fatal("a marked start was read again with no write of the store since")
	}
	// The same start changed in memory, or checked for another user, is read.
	changed := start
	changed.ConvState = json.RawMessage(`{}`)
	if holds(changed) {
		t.Fatal("a start changed since it was read holds")
	}
	if err := db.States().RequireTurnStart(ctx, bot, "u2", "c1", start); !errors.Is(err, store.ErrStartChanged) {
		t.Fatalf("u1's start for u2: %v", err)
	}
	// A write of the store that may change it: read, and found changed.
	start = idle()
	if err := db.States().Put(ctx, bot, store.ScopeConversation, "c1", json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if holds(start) {
		t.Fatal("a start holds after its conversation's state was set")
	}
	// A change running in a transaction leaves the starts read meanwhile
	// without a mark, and once it rolls back, they have marks again.
	err := db.InTx(ctx, func(tx store.Store) error {
		if err := tx.States().Put(ctx, bot, store.ScopeBot, bot, json.RawMessage(`{"b":1}`)); err != nil {
			return err
		}
		if it, err := db.States().GetIdleTurn(ctx, bot, "u1", "c1"); err != nil || it.Start.Mark.Changes != 0 {
			t.Errorf("a start read while a change runs: mark %+v, err %v", it.Start.Mark, err)
		}
		return errors.New("rolled back")
	})
	if err == nil {
		t.Fatal("the transaction committed")
	}
	start = idle()
	if !holds(start) {
		t.Fatal("a start read after a rollback does not hold")
	}
	// The group commit's writer: a message, its signal and its turn's
	// numbers change no start.
	err = db.InPinnedTx(ctx, func(tx store.Store) error {
		m := &model.Message{BotID: bot, ConversationID: "c1", UserID: "u1", Payload: json.RawMessage(`{"text":"hi"}`), Direction: model.DirectionIncoming}
		if err := tx.Chat().CreateMessage(ctx, m); err != nil {
			return err
		}
		return tx.Signals().AppendSignalTurn(ctx, &model.Signal{BotID: bot, ConversationID: "c1", Type: "message_created", Data: json.RawMessage(`{}`)},
			&model.Turn{BotID: bot, ConversationID: "c1", Kind: model.TurnMessage, RefID: m.ID, UserID: "u1"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !holds(start) || db.e.changes.mark() != start.Mark.Changes {
		t.Fatal("a message moved the count of start changes")
	}
	// A change read as rows outside a transaction may end after the call:
	// the store reads every start from then on, those marked before too.
	before := idle()
	var name string
	if err := db.queryRow(ctx, `UPDATE chat_users SET name = 'rows' WHERE bot_id = ? AND id = 'u1' RETURNING name`, bot).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if it, err := db.States().GetIdleTurn(ctx, bot, "u1", "c1"); err != nil || it.Start.Mark.Changes != 0 {
		t.Fatalf("after a change read as rows: mark %+v, err %v", it.Start.Mark, err)
	}
	if db.e.changes.holdsUnread(bot, "u1", "c1", &before) {
		t.Fatal("a start marked before a change read as rows holds unread")
	}
}

// TestStartChangesCounted: each of the store's writes of what a turn
// starts with moves the count of start changes, and ends, so that starts
// read after it have marks again.
func TestStartChangesCounted(t *testing.T) {
	ctx := t.Context()
	db, _, bot := markedDB(t)
	ws := func() string {
		b, err := db.Bots().GetByID(ctx, bot)
		if err != nil {
			t.Fatal(err)
		}
		return b.WorkspaceID
	}()
	u := &model.ChatUser{BotID: bot, ID: "u2"}
	c := &model.Conversation{BotID: bot, ID: "c2", OwnerID: "u2"}
	for _, tc := range []struct {
		name   string
		change func() error
	}{
		{"user created", func() error { return db.Chat().CreateUser(ctx, u) }},
		{"user updated", func() error { u.Name = "n"; return db.Chat().UpdateUser(ctx, u) }},
		{"conversation created", func() error { return db.Chat().CreateConversation(ctx, c) }},
		{"conversation updated", func() error { c.Tags = map[string]string{"k": "v"}; return db.Chat().UpdateConversation(ctx, c) }},
		{"state set", func() error { return db.States().Put(ctx, bot, store.ScopeUser, "u2", json.RawMessage(`{}`)) }},
		{"handoff requested", func() error {
			_, err := db.Handoffs().Request(ctx, &model.Handoff{BotID: bot, ConversationID: "c2", Status: model.HandoffWaiting})
			return err
		}},
		{"handoff put", func() error {
			return db.Handoffs().Put(ctx, &model.Handoff{BotID: bot, ConversationID: "c2", Status: model.HandoffActive})
		}},
		{"handoff deleted", func() error { return db.Handoffs().Delete(ctx, bot, "c2") }},
		{"conversation deleted", func() error { return db.Chat().DeleteConversation(ctx, bot, "c2") }},
		{"user deleted", func() error { return db.Chat().DeleteUser(ctx, bot, "u2") }},
		{"bot deleted", func() error { return db.Bots().Delete(ctx, ws, bot) }},
		{"workspace deleted", func() error { return db.Workspaces().Delete(ctx, ws) }},
	} {
		before := db.e.changes.mark()
		if err := tc.change(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		after := db.e.changes.mark()
		if before == 0 || after == 0 || after == before {
			t.Errorf("%s: start changes %x, then %x", tc.name, before, after)
		}
	}
}
