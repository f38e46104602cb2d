package storetest

import (
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// UpgradeTurnTables checks migration 0015 (the turn tables rebuilt and
// rekeyed): the turns and turn runs an older binary stored (schema 14)
// are all there once the database is opened at the latest schema, and
// behave as before. open opens one and the same database at a schema
// version; the test closes what it opens.
func UpgradeTurnTables(t *testing.T, open func(version int) store.DB) {
	ctx := t.Context()
	day0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	minute := func(n int) time.Time { return day0.Add(time.Duration(n) * time.Minute) }

	old := open(14)
	f := setup(t, old)
	ok(t, old.Chat().CreateUser(ctx, &model.ChatUser{BotID: f.bot.ID, ID: "u", CreatedAt: minute(0)}))
	for _, c := range []string{"c1", "c2"} {
		ok(t, old.Chat().CreateConversation(ctx, &model.Conversation{BotID: f.bot.ID, ID: c, OwnerID: "u", CreatedAt: minute(0)}))
	}
	turns := []*model.Turn{
		{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "m1", UserID: "u", Attempts: 2, CreatedAt: minute(1)},
		{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnEvent, RefID: "e1", UserID: "u", CreatedAt: minute(2)},
		{BotID: f.bot.ID, ConversationID: "c2", Kind: model.TurnMessage, RefID: "m2", UserID: "u", CreatedAt: minute(3)},
	}
	for _, tn := range turns {
		ok(t, old.Signals().EnqueueTurn(ctx, tn))
	}
	runs := []*model.TurnRun{
		{BotID: f.bot.ID, ConversationID: "c1", Seq: 7, RanAt: minute(4), Duration: 100 * time.Millisecond},
		{BotID: f.bot.ID, ConversationID: "c2", Seq: 7, RanAt: minute(5), Duration: 300 * time.Millisecond, Failed: true},
	}
	for _, r := range runs {
		ok(t, old.Activity().RecordTurn(ctx, r))
	}
	ok(t, old.Close())

	db := open(sqlstore.LatestVersion())
	t.Cleanup(func() { db.Close() })
	pending, err := db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	eq(t, "c1's turns after the upgrade", pending, turns[:2])
	convs, err := db.Signals().PendingConversations(ctx, 10)
	ok(t, err)
	eq(t, "pending conversations", convs, []model.ConversationRef{{BotID: f.bot.ID, ConversationID: "c1"}, {BotID: f.bot.ID, ConversationID: "c2"}})

	buckets := func(what string, want ...model.ActivityBucket) {
		t.Helper()
		got, err := db.Activity().Buckets(ctx, f.bot.ID, day0, day0.Add(time.Hour), time.Hour)
		ok(t, err)
		for i := range got { // only the turn figures
			got[i] = model.ActivityBucket{Start: got[i].Start, Turns: got[i].Turns, TurnFailures: got[i].TurnFailures, TurnDurations: got[i].TurnDurations}
		}
		if len(want) == 0 {
			want = []model.ActivityBucket{}
		}
		eq(t, what, got, want)
	}
	buckets("turn runs after the upgrade", model.ActivityBucket{Start: day0, Turns: 2, TurnFailures: 1,
		TurnDurations: []time.Duration{100 * time.Millisecond, 300 * time.Millisecond}})
	// A run recorded again (its completion committed again) counts once;
	// another turn's run at the same time counts.
	ok(t, db.Activity().RecordTurn(ctx, runs[0]))
	ok(t, db.Activity().RecordTurn(ctx, &model.TurnRun{BotID: f.bot.ID, ConversationID: "c1", Seq: 8, RanAt: minute(4), Duration: 200 * time.Millisecond}))
	buckets("turn runs recorded again", model.ActivityBucket{Start: day0, Turns: 3, TurnFailures: 1,
		TurnDurations: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}})

	// The queue goes on: completing the first turn leaves the second, and
	// the next turn takes the next number.
	ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", turns[0].Seq))
	next := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "m3", UserID: "u", CreatedAt: minute(7)}
	ok(t, db.Signals().EnqueueTurn(ctx, next))
	pending, err = db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	eq(t, "c1's turns once the first completed", pending, []*model.Turn{turns[1], next})
	if next.Seq != turns[1].Seq+1 {
		t.Fatalf("next turn's seq = %d, want %d", next.Seq, turns[1].Seq+1)
	}

	// The runs go with their bot, the turns with their conversation.
	ok(t, db.Chat().DeleteConversation(ctx, f.bot.ID, "c2"))
	convs, err = db.Signals().PendingConversations(ctx, 10)
	ok(t, err)
	eq(t, "pending conversations once c2 is deleted", convs, []model.ConversationRef{{BotID: f.bot.ID, ConversationID: "c1"}})
	ok(t, db.Bots().Delete(ctx, f.ws.ID, f.bot.ID))
	buckets("turn runs of the deleted bot")
}
