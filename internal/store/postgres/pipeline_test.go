package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// countingConn counts the writes Parley makes to PostgreSQL: each is a
// round trip of the protocol (pgx writes a statement, or a batch, at once).
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestPipelinedTransactions: the chat pipeline's writes (a turn's
// completion: fence, reply, run record, turn deletion, reply signal; a
// user's message: message, signal and turn) go out with their COMMIT in
// one round trip, commit all of their rows, and come back with their
// signals' and turn's numbers; a statement that fails while queued (a
// taken id, a stale fence, a conversation not found) fails the whole
// write, commits nothing, and leaves the connection usable.
func TestPipelinedTransactions(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgx.ParseConfig(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	var d net.Dialer
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &writes}, nil
	}
	db, err := postgres.OpenConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// One connection: its statements are prepared by the first write, so
	// later counts are the writes' own.
	db.(*postgres.DB).SQL().SetMaxOpenConns(1)

	acct := &model.Account{Email: "o@example.com"}
	must(t, db.Accounts().Create(ctx, acct))
	ws := &model.Workspace{Name: "ws", OwnerID: acct.ID}
	must(t, db.Workspaces().Create(ctx, ws))
	bot := &model.Bot{WorkspaceID: ws.ID, Name: "b", Type: model.DefaultBotType}
	must(t, db.Bots().Create(ctx, bot))
	conv := &model.Conversation{BotID: bot.ID, ID: "c", OwnerID: "u"}
	must(t, db.Chat().CreateConversation(ctx, conv))
	lease, took, err := db.Leases().Take(ctx, "turns:c", "node", time.Minute)
	if err != nil || !took {
		t.Fatalf("take: %v %v", took, err)
	}
	fence := &store.Fence{Name: "turns:c", Holder: "node", Epoch: lease.Epoch}

	completion := func(seq int64, replyID string) *store.Write {
		reply := &model.Message{ID: replyID, BotID: bot.ID, ConversationID: conv.ID, UserID: bot.ID,
			Payload: json.RawMessage(`{"text":"hi"}`), Direction: model.DirectionOutgoing}
		return &store.Write{
			Fence: fence,
			Apply: func(ctx context.Context, tx store.Store) error {
				if err := tx.Chat().CreateMessage(ctx, reply); err != nil {
					return err
				}
				if err := tx.Activity().RecordTurn(ctx, &model.TurnRun{BotID: bot.ID, ConversationID: conv.ID, Seq: seq, RanAt: time.Now()}); err != nil {
					return err
				}
				return tx.Signals().CompleteTurn(ctx, bot.ID, conv.ID, seq)
			},
			More: []*model.Signal{{BotID: bot.ID, ConversationID: conv.ID, Type: model.SignalMessageCreated,
				Data: json.RawMessage(fmt.Sprintf(`{"id":%q}`, replyID))}},
		}
	}
	committer := db.NewCommitter(nil)
	plain := func(ctx context.Context, w *store.Write) error { // the same statements, not pipelined
		return db.InTx(ctx, func(tx store.Store) error { return w.Run(ctx, tx) })
	}
	signals := func() int {
		sg, err := db.Signals().SignalsAfter(ctx, bot.ID, conv.ID, 0, 0)
		must(t, err)
		return len(sg)
	}
	must(t, committer.Commit(ctx, completion(1, "warm-1"))) // prepares the statements
	must(t, plain(ctx, completion(2, "warm-2")))

	count := func(commit func(context.Context, *store.Write) error, w *store.Write) (int64, error) {
		before := writes.Load()
		err := commit(ctx, w)
		return writes.Load() - before, err
	}
	plainTrips, err := count(plain, completion(3, "r-3"))
	must(t, err)
	pipeTrips, err := count(committer.Commit, completion(4, "r-4"))
	must(t, err)
	t.Logf("round trips of a turn's completion: %d one by one, %d pipelined", plainTrips, pipeTrips)
	if pipeTrips != 1 || pipeTrips >= plainTrips {
		t.Fatalf("pipelined completion took %d round trips (one by one: %d), want 1", pipeTrips, plainTrips)
	}
	w := completion(40, "r-40")
	must(t, committer.Commit(ctx, w))
	if got := w.More[0].Seq; got != 5 {
		t.Fatalf("the reply's signal has number %d after the commit, want 5", got)
	}

	// A user's message: the message, its signal and its turn, one round
	// trip, both numbers back.
	message := func(id string) *store.Write {
		m := &model.Message{ID: id, BotID: bot.ID, ConversationID: conv.ID, UserID: "u",
			Payload: json.RawMessage(`{"text":"hello"}`), Direction: model.DirectionIncoming}
		return &store.Write{
			Apply:  func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) },
			Signal: &model.Signal{BotID: bot.ID, ConversationID: conv.ID, Type: model.SignalMessageCreated, Data: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))},
			Turn:   &model.Turn{BotID: bot.ID, ConversationID: conv.ID, Kind: model.TurnMessage, RefID: id, UserID: "u"},
		}
	}
	warm := message("m-0") // prepares the statement
	must(t, committer.Commit(ctx, warm))
	in := message("m-1")
	trips, err := count(committer.Commit, in)
	must(t, err)
	if trips != 1 || in.Signal.Seq != 7 || in.Turn.Seq != warm.Turn.Seq+1 {
		t.Fatalf("user's message: %d round trips, signal %d, turn %d; want 1, 7 and %d", trips, in.Signal.Seq, in.Turn.Seq, warm.Turn.Seq+1)
	}
	pending, err := db.Signals().PendingTurns(ctx, bot.ID, conv.ID, 10)
	must(t, err)
	if len(pending) != 2 || pending[1].Seq != in.Turn.Seq || pending[1].RefID != "m-1" {
		t.Fatalf("pending turns %+v, want the messages' turns, the last %d", pending, in.Turn.Seq)
	}
	for _, p := range pending {
		must(t, db.Signals().CompleteTurn(ctx, bot.ID, conv.ID, p.Seq))
	}
	// A signal of a conversation that is not there: not found, nothing of
	// the write stored (its Apply wrote a turn run, which has no key to
	// the conversation).
	err = committer.Commit(ctx, &store.Write{
		Apply: func(ctx context.Context, tx store.Store) error {
			return tx.Activity().RecordTurn(ctx, &model.TurnRun{BotID: bot.ID, ConversationID: "gone", Seq: 1, RanAt: time.Now()})
		},
		Signal: &model.Signal{BotID: bot.ID, ConversationID: "gone", Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)},
	})
	if !model.IsNotFound(err) || !strings.Contains(err.Error(), "conversation") {
		t.Fatalf("signal of a missing conversation: %v, want the conversation not found", err)
	}
	var runs int
	must(t, db.(*postgres.DB).SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_runs WHERE conversation_id = 'gone'`).Scan(&runs))
	if runs != 0 {
		t.Fatalf("the failed write's turn run was stored")
	}
	for _, id := range []string{"r-3", "r-4"} {
		if _, err := db.Chat().GetMessage(ctx, bot.ID, id); err != nil {
			t.Fatalf("reply %s: %v", id, err)
		}
	}
	if n := signals(); n != 7 {
		t.Fatalf("%d signals, want 7", n)
	}

	// A queued statement that fails (the reply's id is taken) fails the
	// write: nothing of it is stored, the turn run included.
	err = committer.Commit(ctx, completion(5, "r-4"))
	if model.TypeOf(err) != model.ErrAlreadyExists || !strings.HasSuffix(err.Error(), ": message already exists") {
		// The error surfaces at the COMMIT the INSERT went out with: it
		// still names the message.
		t.Fatalf("write with a duplicate reply: %v, want the message's conflict", err)
	}
	if n := signals(); n != 7 {
		t.Fatalf("%d signals after the failed write, want 7", n)
	}
	must(t, db.(*postgres.DB).SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_runs WHERE seq = 5`).Scan(&runs))
	if runs != 0 {
		t.Fatalf("the failed write's turn run was stored")
	}
	// A stale fence, told by the engine before the COMMIT it went out with.
	stale := completion(6, "r-6")
	stale.Fence = &store.Fence{Name: fence.Name, Holder: fence.Holder, Epoch: fence.Epoch + 1}
	if err := committer.Commit(ctx, stale); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale fence: %v, want ErrFenced", err)
	}
	// A stale fence whose write has no signal after it: the same, and
	// nothing of the write is stored.
	err = committer.Commit(ctx, &store.Write{Fence: stale.Fence, Apply: func(ctx context.Context, tx store.Store) error {
		return tx.Activity().RecordTurn(ctx, &model.TurnRun{BotID: bot.ID, ConversationID: conv.ID, Seq: 6, RanAt: time.Now()})
	}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale fence, writes only: %v, want ErrFenced", err)
	}
	must(t, db.(*postgres.DB).SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_runs WHERE seq = 6`).Scan(&runs))
	if runs != 0 {
		t.Fatalf("the fenced write's turn run was stored")
	}
	// A transaction that fails before its first statement sends nothing.
	if trips, err := count(func(ctx context.Context, w *store.Write) error {
		return db.InTx(store.WithPipeline(ctx), func(store.Store) error { return errors.New("no") })
	}, nil); err == nil || trips != 0 {
		t.Fatalf("empty failed transaction: %d round trips, err %v", trips, err)
	}
	// The one connection is still in a clean state.
	must(t, committer.Commit(ctx, completion(7, "r-7")))
	if n := signals(); n != 8 {
		t.Fatalf("%d signals, want 8", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
