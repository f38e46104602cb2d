package store

import (
	"context"
	"time"
)

// File is a file uploaded to a bot (the Files API object the webchat uses):
// its record, whatever holds its bytes. Status is "upload_pending" until
// the bytes are stored, then "upload_completed" (or "upload_failed").
type File struct {
	BotID          string
	ID             string
	Key            string
	Size           int64 // declared size, then the stored size
	ContentType    string
	Tags           map[string]string
	AccessPolicies []string
	Index          bool
	Status         string
	FailedReason   string
	ConversationID string
	UserID         string
	ExpiresAt      time.Time // zero: never
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// File statuses.
const (
	FileUploadPending   = "upload_pending"
	FileUploadCompleted = "upload_completed"
	FileUploadFailed    = "upload_failed"
)

// Files stores file records and, for stores that keep file contents in the
// database (PostgreSQL), their bytes. Every method is scoped by bot id.
type Files interface {
	CreateFile(ctx context.Context, f *File) error
	GetFile(ctx context.Context, botID, id string) (*File, error)
	UpdateFile(ctx context.Context, f *File) error
	DeleteFile(ctx context.Context, botID, id string) error

	PutBlob(ctx context.Context, botID, id string, data []byte) error
	GetBlob(ctx context.Context, botID, id string) ([]byte, error)
	DeleteBlob(ctx context.Context, botID, id string) error
}

// Feedback is a user's thumbs up or down on a message.
type Feedback struct {
	BotID     string
	MessageID string
	UserID    string
	Value     string // "positive" or "negative"
	Comment   string
	UpdatedAt time.Time
}

// FeedbackStore keeps message feedback.
type FeedbackStore interface {
	PutFeedback(ctx context.Context, f *Feedback) error
	DeleteFeedback(ctx context.Context, botID, messageID, userID string) error
	// FeedbackFor returns the feedback userID gave on these messages.
	FeedbackFor(ctx context.Context, botID, userID string, messageIDs []string) ([]*Feedback, error)
}

// FilesProvider is implemented by stores that offer Files and
// FeedbackStore (both SQL stores do); the service finds them by type
// assertion, so the Store interface stays as it is.
type FilesProvider interface {
	Files() Files
	Feedback() FeedbackStore
}
