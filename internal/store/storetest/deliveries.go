package storetest

import (
	"testing"

	"github.com/parley-bots/parley/internal/store"
)

func testDeliveries(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newConv(t, db, f.bot.ID, "c1", "", 0)
	newConv(t, db, f.bot.ID, "c2", "", 0)
	r := db.Deliveries()
	type reply struct {
		seq   int64
		k     int
		msgID string
		ok    bool
	}
	next := func(conv string) reply {
		t.Helper()
		seq, k, id, found, err := r.NextReply(ctx, f.bot.ID, conv)
		ok(t, err)
		return reply{seq, k, id, found}
	}

	eq(t, "no turn in flight", next("c1"), reply{})
	ok(t, r.Begin(ctx, f.bot.ID, "c1", 7))
	eq(t, "1st reply", next("c1"), reply{7, 1, "", true})
	ok(t, r.RecordReply(ctx, f.bot.ID, "c1", 7, 1, "m1"))
	eq(t, "2nd reply", next("c1"), reply{7, 2, "", true})
	ok(t, r.RecordReply(ctx, f.bot.ID, "c1", 7, 2, "m2"))
	eq(t, "other conversation", next("c2"), reply{})
	ok(t, r.End(ctx, f.bot.ID, "c1"))
	eq(t, "ended", next("c1"), reply{})

	// Re-delivery of the same turn replays its replies.
	ok(t, r.Begin(ctx, f.bot.ID, "c1", 7))
	eq(t, "replayed 1st", next("c1"), reply{7, 1, "m1", true})
	eq(t, "replayed 2nd", next("c1"), reply{7, 2, "m2", true})
	eq(t, "new 3rd", next("c1"), reply{7, 3, "", true})

	// The next turn forgets the previous turn's replies.
	ok(t, r.Begin(ctx, f.bot.ID, "c1", 8))
	eq(t, "next turn", next("c1"), reply{8, 1, "", true})
	ok(t, r.Begin(ctx, f.bot.ID, "c1", 7))
	eq(t, "old replies gone", next("c1"), reply{7, 1, "", true})
}
