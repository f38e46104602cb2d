package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func testFiles(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	file := &model.File{BotID: f.bot.ID, ID: "file_1", Key: "abc123-photo.png", Size: 10, ContentType: "image/png",
		Tags: map[string]string{"conversation": "c1"}, AccessPolicies: []string{"public_content"}, Index: true,
		Status: model.FileUploadPending, ConversationID: "c1", UserID: "u1",
		ExpiresAt: at(50), CreatedAt: at(1), UpdatedAt: at(1)}
	ok(t, db.Files().CreateFile(ctx, file))
	wantErr(t, db.Files().CreateFile(ctx, &model.File{BotID: f.bot.ID, ID: "file_1", Key: "dup"}), model.ErrAlreadyExists)

	got, err := db.Files().GetFile(ctx, f.bot.ID, "file_1")
	ok(t, err)
	eq(t, "stored file", got, file)
	_, err = db.Files().GetFile(ctx, other.ID, "file_1")
	wantErr(t, err, model.ErrNotFound)

	file.Size, file.Status, file.UpdatedAt = 4, model.FileUploadCompleted, at(2)
	ok(t, db.Files().UpdateFile(ctx, file))
	got, err = db.Files().GetFile(ctx, f.bot.ID, "file_1")
	ok(t, err)
	eq(t, "updated status", got.Status, model.FileUploadCompleted)
	eq(t, "updated size", got.Size, int64(4))
	wantErr(t, db.Files().UpdateFile(ctx, &model.File{BotID: other.ID, ID: "file_1"}), model.ErrNotFound)

	ok(t, db.Files().PutBlob(ctx, f.bot.ID, "file_1", []byte("v1")))
	ok(t, db.Files().PutBlob(ctx, f.bot.ID, "file_1", []byte("data")))
	b, err := db.Files().GetBlob(ctx, f.bot.ID, "file_1")
	ok(t, err)
	eq(t, "blob replaced", string(b), "data")
	_, err = db.Files().GetBlob(ctx, other.ID, "file_1")
	wantErr(t, err, model.ErrNotFound)
	ok(t, db.Files().DeleteBlob(ctx, f.bot.ID, "file_1"))
	ok(t, db.Files().DeleteBlob(ctx, f.bot.ID, "file_1")) // a missing blob is not an error
	_, err = db.Files().GetBlob(ctx, f.bot.ID, "file_1")
	wantErr(t, err, model.ErrNotFound)

	wantErr(t, db.Files().DeleteFile(ctx, other.ID, "file_1"), model.ErrNotFound)
	ok(t, db.Files().DeleteFile(ctx, f.bot.ID, "file_1"))
	_, err = db.Files().GetFile(ctx, f.bot.ID, "file_1")
	wantErr(t, err, model.ErrNotFound)
}

func testFeedback(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	newUser(t, db, f.bot.ID, "u2")
	c := newConv(t, db, f.bot.ID, "c1", "u1", 0)
	m1 := newMessage(t, db, c, "u1", 1)
	m2 := newMessage(t, db, c, "u1", 2)

	ok(t, db.Feedback().PutFeedback(ctx, &model.Feedback{BotID: f.bot.ID, MessageID: m1.ID, UserID: "u1", Value: model.FeedbackPositive}))
	ok(t, db.Feedback().PutFeedback(ctx, &model.Feedback{BotID: f.bot.ID, MessageID: m1.ID, UserID: "u1", Value: model.FeedbackNegative, Comment: "changed my mind"}))
	ok(t, db.Feedback().PutFeedback(ctx, &model.Feedback{BotID: f.bot.ID, MessageID: m2.ID, UserID: "u2", Value: model.FeedbackPositive}))

	fb, err := db.Feedback().FeedbackFor(ctx, f.bot.ID, "u1", []string{m1.ID, m2.ID})
	ok(t, err)
	if len(fb) != 1 || fb[0].MessageID != m1.ID || fb[0].Value != model.FeedbackNegative || fb[0].Comment != "changed my mind" {
		t.Fatalf("u1's feedback: %+v", fb)
	}
	fb, err = db.Feedback().FeedbackFor(ctx, f.bot.ID, "u1", nil)
	ok(t, err)
	eq(t, "no message ids", len(fb), 0)

	ok(t, db.Feedback().DeleteFeedback(ctx, f.bot.ID, m1.ID, "u1"))
	ok(t, db.Feedback().DeleteFeedback(ctx, f.bot.ID, m1.ID, "u1"))
	fb, err = db.Feedback().FeedbackFor(ctx, f.bot.ID, "u1", []string{m1.ID})
	ok(t, err)
	eq(t, "after delete", len(fb), 0)
	fb, err = db.Feedback().FeedbackFor(ctx, f.bot.ID, "u2", []string{m1.ID, m2.ID})
	ok(t, err)
	eq(t, "u2 keeps hers", len(fb), 1)
}

// testCommitter checks the engine's Committer: every write commits with
// its own outcome, signals get consecutive numbers in submission order
// per conversation, a failing write fails alone, and the after-commit hook
// sees exactly the committed writes.
func testCommitter(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	c := newConv(t, db, f.bot.ID, "c1", "u1", 0)
	var mu sync.Mutex
	var after []*store.Write
	cm := db.NewCommitter(func(w *store.Write) {
		mu.Lock()
		after = append(after, w)
		mu.Unlock()
	})
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	writes := make([]*store.Write, n)
	for i := range n {
		m := &model.Message{BotID: f.bot.ID, ID: model.NewID(), ConversationID: c.ID, UserID: "u1",
			Payload: []byte(`{"type":"text","text":"hi"}`), Direction: model.DirectionIncoming, CreatedAt: at(i + 1)}
		if i == 7 {
			m.ConversationID = "missing" // fails: no such conversation
		}
		w := &store.Write{
			Apply:  func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) },
			Signal: &model.Signal{BotID: f.bot.ID, ConversationID: c.ID, Type: model.SignalMessageCreated, Data: []byte(`{}`), CreatedAt: m.CreatedAt},
			Turn:   &model.Turn{BotID: f.bot.ID, ConversationID: c.ID, Kind: model.TurnMessage, RefID: m.ID, UserID: "u1", CreatedAt: m.CreatedAt},
		}
		writes[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = cm.Commit(ctx, w) }()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 7) != (err != nil) {
			t.Fatalf("write %d: err = %v", i, err)
		}
	}
	eq(t, "writes seen after commit", len(after), n-1)
	for _, w := range after {
		if w == writes[7] {
			t.Fatal("the failed write was announced")
		}
	}
	sigs, err := db.Signals().SignalsAfter(ctx, f.bot.ID, c.ID, 0, 1000)
	ok(t, err)
	eq(t, "signals stored", len(sigs), n-1)
	for i, s := range sigs {
		eq(t, "signal seq", s.Seq, int64(i+1))
	}
	turns, err := db.Signals().PendingTurns(ctx, f.bot.ID, c.ID, 1000)
	ok(t, err)
	eq(t, "turns stored", len(turns), n-1)

	// A write whose context ended before it was committed is dropped.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	err = cm.Commit(dead, &store.Write{Signal: &model.Signal{BotID: f.bot.ID, ConversationID: c.ID, Type: model.SignalMessageCreated, Data: []byte(`{}`), CreatedAt: time.Now()}})
	if err == nil {
		sigs, _ = db.Signals().SignalsAfter(ctx, f.bot.ID, c.ID, 0, 1000)
		eq(t, "a cancelled write that reports success is stored", len(sigs), n)
	}
}
