package store

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// Files stores file records and, for stores that keep file contents in the
// database (PostgreSQL), their bytes. Every method is scoped by bot id.
type Files interface {
	CreateFile(ctx context.Context, f *model.File) error
	GetFile(ctx context.Context, botID, id string) (*model.File, error)
	UpdateFile(ctx context.Context, f *model.File) error
	// CompleteUpload stores f (size, status, ...) only if the stored file
	// is still upload_pending, and reports whether it did.
	CompleteUpload(ctx context.Context, f *model.File) (bool, error)
	DeleteFile(ctx context.Context, botID, id string) error

	// ListFiles returns a bot's files, newest first (the Files API filters,
	// sorts and pages them).
	ListFiles(ctx context.Context, botID string) ([]*model.File, error)
	// FileByKey returns the bot's newest file with this key.
	FileByKey(ctx context.Context, botID, key string) (*model.File, error)
	// FilesToIndex returns files (every bot's) whose status is
	// indexing_pending, oldest first, at most limit.
	FilesToIndex(ctx context.Context, limit int) ([]*model.File, error)

	// SetPassages replaces a file's passages (and their full-text index).
	SetPassages(ctx context.Context, botID, fileID string, ps []*model.Passage) error
	// ListPassages returns a file's passages from position after+1 on.
	ListPassages(ctx context.Context, botID, fileID string, after, limit int) ([]*model.Passage, error)
	// SearchPassages ranks the bot's passages whose terms match any of
	// terms (BM25 on SQLite, ts_rank on PostgreSQL), best first, Score
	// higher for better.
	SearchPassages(ctx context.Context, botID string, terms []string, limit int) ([]*model.Passage, error)
	// EmbeddedPassages returns the bot's passages that have an embedding
	// (semantic search compares them with the query's in Go).
	EmbeddedPassages(ctx context.Context, botID string) ([]*model.Passage, error)

	CreateKnowledgeBase(ctx context.Context, kb *model.KnowledgeBase) error
	GetKnowledgeBase(ctx context.Context, botID, id string) (*model.KnowledgeBase, error)
	UpdateKnowledgeBase(ctx context.Context, kb *model.KnowledgeBase) error
	DeleteKnowledgeBase(ctx context.Context, botID, id string) error
	ListKnowledgeBases(ctx context.Context, botID string) ([]*model.KnowledgeBase, error)

	PutBlob(ctx context.Context, botID, id string, data []byte) error
	GetBlob(ctx context.Context, botID, id string) ([]byte, error)
	DeleteBlob(ctx context.Context, botID, id string) error
}

// Feedback keeps users' feedback on messages.
type Feedback interface {
	PutFeedback(ctx context.Context, f *model.Feedback) error
	DeleteFeedback(ctx context.Context, botID, messageID, userID string) error
	// FeedbackFor returns the feedback userID gave on these messages.
	FeedbackFor(ctx context.Context, botID, userID string, messageIDs []string) ([]*model.Feedback, error)
}
