package storetest

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// BenchTurnRead measures the dispatcher's read of a conversation's
// pending turn with everything its run needs (PendingTurnInputs: the turn,
// its message, the handoff, the user, the conversation and three states),
// the read every message's turn starts with.
func BenchTurnRead(b *testing.B, db store.DB) {
	ctx, bot, must := benchBot(b, db)
	chat := db.Chat()
	benchConversation(ctx, db, bot, must)
	m := &model.Message{BotID: bot.ID, ConversationID: "c", UserID: "u", Payload: json.RawMessage(`{"type":"text","text":"hi"}`),
		Direction: model.DirectionIncoming, CreatedAt: at(1)}
	must(chat.CreateMessage(ctx, m))
	must(db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: bot.ID, ConversationID: "c", Kind: model.TurnMessage, RefID: m.ID, UserID: "u", CreatedAt: at(2)}))
	b.ResetTimer()
	for b.Loop() {
		got, err := db.Signals().PendingTurnInputs(ctx, bot.ID, "c", 50)
		if err != nil || len(got) != 1 || got[0].Message == nil || got[0].Start == nil {
			b.Fatalf("PendingTurnInputs = %v, %v", got, err)
		}
	}
}

// BenchTurnStart measures States.GetTurn, the read a turn after the first
// of its batch starts with (its user, conversation and three states),
// alternating two conversations as a busy dispatcher does.
func BenchTurnStart(b *testing.B, db store.DB) {
	ctx, bot, must := benchBot(b, db)
	chat := db.Chat()
	for _, id := range []string{"a", "b"} {
		must(chat.CreateUser(ctx, &model.ChatUser{BotID: bot.ID, ID: id, Name: "user"}))
		must(chat.CreateConversation(ctx, &model.Conversation{BotID: bot.ID, ID: id, OwnerID: id, CreatedAt: at(0)}))
		must(db.States().Put(ctx, bot.ID, store.ScopeUser, id, json.RawMessage(`{"n":1}`)))
		must(db.States().Put(ctx, bot.ID, store.ScopeConversation, id, json.RawMessage(`{"n":2}`)))
	}
	alternating(b, []string{"a", "b"}, func(id string) {
		got, err := db.States().GetTurn(ctx, bot.ID, id, id)
		if err != nil || got.User == nil || got.Conversation == nil || got.UserState == nil || got.ConvState == nil {
			b.Fatalf("GetTurn = %+v, %v", got, err)
		}
	})
}

// alternating times op on each of ids in turn.
func alternating(b *testing.B, ids []string, op func(id string)) {
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		op(ids[i%len(ids)])
	}
}

// BenchTurnStartCheck measures States.RequireTurnStart of a start that
// holds (a fold's check of the start its conversation's last turn left,
// in every folded message's commit), alternating two conversations, with
// the starts read by GetTurn (a store reads them to check them) and as a
// fold reads them (GetIdleTurn: a store that counts what may change a
// start tells they hold without a read).
func BenchTurnStartCheck(b *testing.B, db store.DB) {
	ctx, bot, must := benchBot(b, db)
	chat := db.Chat()
	read, idle := map[string]store.TurnStart{}, map[string]store.TurnStart{}
	for _, id := range []string{"a", "b"} {
		must(chat.CreateUser(ctx, &model.ChatUser{BotID: bot.ID, ID: id, Name: "user", Tags: map[string]string{"k": "v"}}))
		must(chat.CreateConversation(ctx, &model.Conversation{BotID: bot.ID, ID: id, OwnerID: id, CreatedAt: at(0)}))
		must(db.States().Put(ctx, bot.ID, store.ScopeConversation, id, json.RawMessage(`{"n":2}`)))
		start, err := db.States().GetTurn(ctx, bot.ID, id, id)
		must(err)
		read[id] = start
	}
	for _, id := range []string{"a", "b"} { // once nothing is written any more
		it, err := db.States().GetIdleTurn(ctx, bot.ID, id, id)
		must(err)
		idle[id] = it.Start
	}
	for _, bc := range []struct {
		name   string
		starts map[string]store.TurnStart
	}{{"read", read}, {"idle", idle}} {
		starts := bc.starts
		b.Run(bc.name, func(b *testing.B) {
			alternating(b, []string{"a", "b"}, func(id string) {
				if err := db.States().RequireTurnStart(ctx, bot.ID, id, id, starts[id]); err != nil {
					b.Fatalf("RequireTurnStart: %v", err)
				}
			})
		})
	}
}

// benchBot creates a bot to benchmark with, and a check that fails the
// benchmark on an error.
func benchBot(b *testing.B, db store.DB) (context.Context, *model.Bot, func(error)) {
	ctx := b.Context()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	a := &model.Account{Email: "bench@example.com"}
	must(db.Accounts().Create(ctx, a))
	w := &model.Workspace{Name: "bench", OwnerID: a.ID, CreatedAt: at(0)}
	must(db.Workspaces().Create(ctx, w))
	bot := &model.Bot{WorkspaceID: w.ID, Name: "bench", Type: model.DefaultBotType, CreatedAt: at(0), UpdatedAt: at(0)}
	must(db.Bots().Create(ctx, bot))
	return ctx, bot, must
}

// benchConversation creates the user "u" and its conversation "c".
func benchConversation(ctx context.Context, db store.DB, bot *model.Bot, must func(error)) {
	must(db.Chat().CreateUser(ctx, &model.ChatUser{BotID: bot.ID, ID: "u", Name: "user"}))
	must(db.Chat().CreateConversation(ctx, &model.Conversation{BotID: bot.ID, ID: "c", OwnerID: "u", CreatedAt: at(0)}))
}

// BenchCommit measures the chat pipeline's writes through the engine's
// Committer: 32 writers, each a user's message (the message, its signal
// and its turn) then the turn's completion (the bot's reply, its signal,
// the run's record, the turn's deletion), all Local, in 32 conversations, with a
// request's context (one that can be cancelled). One op is one message
// and its reply.
func BenchCommit(b *testing.B, db store.DB) {
	benchWriters(b, db, func(bot *model.Bot, conv string, committer store.Committer) func(rctx context.Context) {
		return func(rctx context.Context) {
			m := &model.Message{BotID: bot.ID, ConversationID: conv, UserID: conv, Direction: model.DirectionIncoming,
				Payload: json.RawMessage(`{"type":"text","text":"hi"}`)}
			turn := &model.Turn{BotID: bot.ID, ConversationID: conv, Kind: model.TurnMessage, UserID: conv}
			in := &store.Write{Local: true,
				Apply: func(ctx context.Context, tx store.Store) error {
					turn.RefID = m.ID
					return tx.Chat().CreateMessage(ctx, m)
				},
				Signal: &model.Signal{BotID: bot.ID, ConversationID: conv, Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)},
				Turn:   turn,
			}
			if err := committer.Commit(rctx, in); err != nil {
				b.Fatal(err)
			}
			reply := &model.Message{BotID: bot.ID, ConversationID: conv, UserID: bot.ID, Direction: model.DirectionOutgoing,
				Payload: json.RawMessage(`{"type":"text","text":"echo hi"}`)}
			seq := turn.Seq
			out := &store.Write{Local: true,
				Apply: func(ctx context.Context, tx store.Store) error {
					if err := tx.Chat().CreateMessage(ctx, reply); err != nil {
						return err
					}
					if err := tx.Activity().RecordTurn(ctx, &model.TurnRun{BotID: bot.ID, ConversationID: conv, Seq: seq, RanAt: at(3)}); err != nil {
						return err
					}
					return tx.Signals().CompleteTurn(ctx, bot.ID, conv, seq)
				},
				More: []*model.Signal{{BotID: bot.ID, ConversationID: conv, Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)}},
			}
			if err := committer.Commit(rctx, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchCommitFolded is BenchCommit with the fold (turns.Dispatcher.Fold):
// the message and its turn's completion in one write (Write.Then), as the
// chat pipeline commits a message its bot answered at once. One op is one
// message and its reply.
func BenchCommitFolded(b *testing.B, db store.DB) {
	benchWriters(b, db, func(bot *model.Bot, conv string, committer store.Committer) func(rctx context.Context) {
		var last int64 // the conversation's last turn
		return func(rctx context.Context) {
			m := &model.Message{BotID: bot.ID, ConversationID: conv, UserID: conv, Direction: model.DirectionIncoming,
				Payload: json.RawMessage(`{"type":"text","text":"hi"}`)}
			turn := &model.Turn{BotID: bot.ID, ConversationID: conv, Kind: model.TurnMessage, UserID: conv}
			reply := &model.Message{BotID: bot.ID, ConversationID: conv, UserID: bot.ID, Direction: model.DirectionOutgoing,
				Payload: json.RawMessage(`{"type":"text","text":"echo hi"}`)}
			w := &store.Write{Local: true,
				Apply: func(ctx context.Context, tx store.Store) error {
					turn.RefID = m.ID
					return tx.Chat().CreateMessage(ctx, m)
				},
				Signal: &model.Signal{BotID: bot.ID, ConversationID: conv, Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)},
				Turn:   turn,
				Then: &store.Write{Local: true, Ref: model.ConversationRef{BotID: bot.ID, ConversationID: conv},
					Apply: func(ctx context.Context, tx store.Store) error {
						if err := tx.Chat().CreateMessage(ctx, reply); err != nil {
							return err
						}
						if err := tx.Activity().RecordTurn(ctx, &model.TurnRun{BotID: bot.ID, ConversationID: conv, Seq: turn.Seq, RanAt: at(3)}); err != nil {
							return err
						}
						return tx.Signals().CompleteTurn(ctx, bot.ID, conv, turn.Seq)
					},
					More: []*model.Signal{{BotID: bot.ID, ConversationID: conv, Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)}},
				},
				ThenSeq: last + 1,
			}
			if err := committer.Commit(rctx, w); err != nil {
				b.Fatal(err)
			}
			if !w.ThenRan() {
				b.Fatal("the turn was not completed with its message")
			}
			last = turn.Seq
		}
	})
}

// benchWriters runs 32 writers, each in a conversation of its own (and
// its user, both named conv), with one committer and a request's context
// (one that can be cancelled): newWriter gives each its op.
func benchWriters(b *testing.B, db store.DB, newWriter func(bot *model.Bot, conv string, committer store.Committer) func(rctx context.Context)) {
	ctx, bot, must := benchBot(b, db)
	chat := db.Chat()
	const writers = 32
	for i := range writers {
		id := "c" + string(rune('A'+i))
		must(chat.CreateUser(ctx, &model.ChatUser{BotID: bot.ID, ID: id, Name: "user"}))
		must(chat.CreateConversation(ctx, &model.Conversation{BotID: bot.ID, ID: id, OwnerID: id, CreatedAt: at(0)}))
	}
	committer := db.NewCommitter(nil)
	var next atomic.Int64
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		op := newWriter(bot, "c"+string(rune('A'+next.Add(1)-1)), committer)
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for pb.Next() {
			op(rctx)
		}
	})
}

// BenchListMessages measures a page of a conversation's latest messages
// (Chat API listMessages, the webchat's history), 20 of 60.
func BenchListMessages(b *testing.B, db store.DB) {
	ctx, bot, must := benchBot(b, db)
	chat := db.Chat()
	benchConversation(ctx, db, bot, must)
	for i := range 60 {
		must(chat.CreateMessage(ctx, &model.Message{BotID: bot.ID, ConversationID: "c", UserID: "u",
			Payload: json.RawMessage(`{"type":"text","text":"hi"}`), Direction: model.DirectionIncoming, CreatedAt: at(1 + i)}))
	}
	b.ResetTimer()
	for b.Loop() {
		got, next, err := chat.ListMessages(ctx, bot.ID, "c", store.Page{})
		if err != nil || len(got) != 20 || next == "" {
			b.Fatalf("ListMessages = %d messages, next %q, %v", len(got), next, err)
		}
	}
}

// BenchSignalsAfter measures a stream's read of the signal log from a
// cursor (a listener's start and catch-up): 10 of a conversation's 60.
func BenchSignalsAfter(b *testing.B, db store.DB) {
	ctx, bot, must := benchBot(b, db)
	benchConversation(ctx, db, bot, must)
	for range 60 {
		must(db.Signals().AppendSignal(ctx, &model.Signal{BotID: bot.ID, ConversationID: "c", Type: "message_created",
			Data: json.RawMessage(`{"id":"m","text":"hi"}`)}))
	}
	b.ResetTimer()
	for b.Loop() {
		got, err := db.Signals().SignalsAfter(ctx, bot.ID, "c", 50, 256)
		if err != nil || len(got) != 10 {
			b.Fatalf("SignalsAfter = %d signals, %v", len(got), err)
		}
	}
}
