package storetest

import (
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// testFilesAPI covers what the Files API adds: metadata, keys, passages
// with full-text ranking, knowledge bases; every read scoped by bot.
func testFilesAPI(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	fs := db.Files()
	a := &model.File{BotID: f.bot.ID, ID: "file_a", Key: "docs/a.md", Size: 3, ContentType: "text/markdown",
		Tags: map[string]string{"kb": "faq"}, Metadata: map[string]any{"source": "test", "n": float64(2)},
		Status: model.FileIndexingPending, Index: true, UploadNonce: "n1", CreatedAt: at(1), UpdatedAt: at(1)}
	b := &model.File{BotID: f.bot.ID, ID: "file_b", Key: "docs/b.md", ContentType: "text/plain",
		Status: model.FileUploadCompleted, CreatedAt: at(2), UpdatedAt: at(2)}
	ok(t, fs.CreateFile(ctx, a))
	ok(t, fs.CreateFile(ctx, b))
	got, err := fs.GetFile(ctx, f.bot.ID, "file_a")
	ok(t, err)
	eq(t, "metadata", got.Metadata, a.Metadata)
	eq(t, "nonce", got.UploadNonce, "n1")

	byKey, err := fs.FileByKey(ctx, f.bot.ID, "docs/b.md")
	ok(t, err)
	eq(t, "by key", byKey.ID, "file_b")
	_, err = fs.FileByKey(ctx, other.ID, "docs/b.md")
	wantErr(t, err, model.ErrNotFound)

	list, err := fs.ListFiles(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "list newest first", len(list) == 2 && list[0].ID == "file_b", true)
	none, err := fs.ListFiles(ctx, other.ID)
	ok(t, err)
	eq(t, "other bot's files", len(none), 0)

	pending, err := fs.FilesToIndex(ctx, 10)
	ok(t, err)
	eq(t, "to index", len(pending) == 1 && pending[0].ID == "file_a", true)

	a.Key, a.Metadata, a.AccessPolicies, a.UploadNonce = "docs/a2.md", map[string]any{"x": "y"}, []string{"integrations"}, "n2"
	ok(t, fs.UpdateFile(ctx, a))
	got, err = fs.GetFile(ctx, f.bot.ID, "file_a")
	ok(t, err)
	eq(t, "updated key", got.Key, "docs/a2.md")
	eq(t, "updated metadata", got.Metadata, map[string]any{"x": "y"})
	eq(t, "updated policies", got.AccessPolicies, []string{"integrations"})
	eq(t, "updated nonce", got.UploadNonce, "n2")

	ok(t, fs.SetPassages(ctx, f.bot.ID, "file_a", []*model.Passage{
		{Content: "Opening hours", Subtype: "title", Terms: "open hour"},
		{Content: "We open at nine.", Breadcrumb: "Opening hours", Terms: "we open at nine"},
		{Content: "Refunds take a week.", Breadcrumb: "Refunds", Terms: "refund take a week"},
	}))
	ok(t, fs.SetPassages(ctx, f.bot.ID, "file_b", []*model.Passage{{Content: "refund refund refund", Terms: "refund refund refund"}}))
	ps, err := fs.ListPassages(ctx, f.bot.ID, "file_a", -1, 2)
	ok(t, err)
	eq(t, "first page", len(ps), 2)
	eq(t, "passage", ps[1].Content+"|"+ps[1].Breadcrumb+"|"+ps[1].Subtype, "We open at nine.|Opening hours|paragraph")
	ps, err = fs.ListPassages(ctx, f.bot.ID, "file_a", 1, 2)
	ok(t, err)
	eq(t, "second page", len(ps) == 1 && ps[0].Position == 2, true)

	hits, err := fs.SearchPassages(ctx, f.bot.ID, []string{"refund"}, 10)
	ok(t, err)
	eq(t, "hits", len(hits), 2)
	eq(t, "best first", hits[0].FileID, "file_b")
	eq(t, "scores decrease", hits[0].Score > hits[1].Score && hits[1].Score > 0, true)
	hits, err = fs.SearchPassages(ctx, f.bot.ID, []string{"nine", "zzz", `"'`}, 10)
	ok(t, err)
	eq(t, "one hit", len(hits) == 1 && hits[0].Position == 1, true)
	hits, err = fs.SearchPassages(ctx, other.ID, []string{"refund"}, 10)
	ok(t, err)
	eq(t, "other bot searches nothing", len(hits), 0)

	// Embeddings are kept as given; only embedded passages are listed
	// for semantic search, and only the bot's.
	ok(t, fs.SetPassages(ctx, f.bot.ID, "file_b", []*model.Passage{
		{Content: "refund refund refund", Terms: "refund refund refund", Embedding: []float32{0.5, -1.25, 3}},
		{Content: "no vector", Terms: "no vector"},
	}))
	emb, err := fs.EmbeddedPassages(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "embedded passages", len(emb), 1)
	eq(t, "embedding", emb[0].Content+"|"+emb[0].FileID, "refund refund refund|file_b")
	eq(t, "vector", emb[0].Embedding, []float32{0.5, -1.25, 3})
	ps, err = fs.ListPassages(ctx, f.bot.ID, "file_b", -1, 10)
	ok(t, err)
	eq(t, "listed with vectors", len(ps) == 2 && len(ps[0].Embedding) == 3 && ps[1].Embedding == nil, true)
	emb, err = fs.EmbeddedPassages(ctx, other.ID)
	ok(t, err)
	eq(t, "other bot's embedded passages", len(emb), 0)

	// Replacing passages replaces the index; deleting a file drops both.
	ok(t, fs.SetPassages(ctx, f.bot.ID, "file_b", []*model.Passage{{Content: "hello", Terms: "hello"}}))
	hits, err = fs.SearchPassages(ctx, f.bot.ID, []string{"refund"}, 10)
	ok(t, err)
	eq(t, "replaced", len(hits) == 1 && hits[0].FileID == "file_a", true)
	ok(t, fs.DeleteFile(ctx, f.bot.ID, "file_a"))
	hits, err = fs.SearchPassages(ctx, f.bot.ID, []string{"refund", "open"}, 10)
	ok(t, err)
	eq(t, "deleted file's passages", len(hits), 0)
	ps, err = fs.ListPassages(ctx, f.bot.ID, "file_a", -1, 10)
	ok(t, err)
	eq(t, "no passages left", len(ps), 0)

	kb := &model.KnowledgeBase{BotID: f.bot.ID, ID: "kb_1", Name: "FAQ", Tags: map[string]string{"kb": "faq"}}
	ok(t, fs.CreateKnowledgeBase(ctx, kb))
	wantErr(t, fs.CreateKnowledgeBase(ctx, &model.KnowledgeBase{BotID: f.bot.ID, ID: "kb_1", Name: "dup"}), model.ErrAlreadyExists)
	kb.Name, kb.Tags = "Help", map[string]string{"kb": "help"}
	ok(t, fs.UpdateKnowledgeBase(ctx, kb))
	gotKB, err := fs.GetKnowledgeBase(ctx, f.bot.ID, "kb_1")
	ok(t, err)
	eq(t, "kb", gotKB.Name+"|"+gotKB.Tags["kb"], "Help|help")
	_, err = fs.GetKnowledgeBase(ctx, other.ID, "kb_1")
	wantErr(t, err, model.ErrNotFound)
	wantErr(t, fs.UpdateKnowledgeBase(ctx, &model.KnowledgeBase{BotID: other.ID, ID: "kb_1", Name: "x"}), model.ErrNotFound)
	kbs, err := fs.ListKnowledgeBases(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "kbs", len(kbs), 1)
	wantErr(t, fs.DeleteKnowledgeBase(ctx, other.ID, "kb_1"), model.ErrNotFound)
	ok(t, fs.DeleteKnowledgeBase(ctx, f.bot.ID, "kb_1"))
	kbs, err = fs.ListKnowledgeBases(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "kbs deleted", len(kbs), 0)
}
