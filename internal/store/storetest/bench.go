package storetest

import (
	"context"
	"encoding/json"
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
	must(chat.CreateUser(ctx, &model.ChatUser{BotID: bot.ID, ID: "u", Name: "user"}))
	must(chat.CreateConversation(ctx, &model.Conversation{BotID: bot.ID, ID: "c", OwnerID: "u", CreatedAt: at(0)}))
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
	ids := []string{"a", "b"}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		id := ids[i%2]
		i++
		got, err := db.States().GetTurn(ctx, bot.ID, id, id)
		if err != nil || got.User == nil || got.Conversation == nil || got.UserState == nil || got.ConvState == nil {
			b.Fatalf("GetTurn = %+v, %v", got, err)
		}
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
