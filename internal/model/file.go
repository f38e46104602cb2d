package model

import "time"

// File is a file uploaded to a bot (the Files API object; the webchat's
// attachments are files): its record, whatever holds its bytes. Status is
// FileUploadPending until the bytes are stored, then FileUploadCompleted
// (or FileUploadFailed).
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
	// Metadata is the Files API's free-form metadata (JSON object).
	Metadata map[string]any
	// UploadNonce is part of the upload URL's token: a new one per
	// upsert, so an earlier upload URL of the same file stops working.
	UploadNonce string
}

// Passage is a piece of an indexed file's text (searchFiles,
// listFilePassages). Terms is the stemmed text the full-text index
// holds (files.Terms), Breadcrumb the headings above it (" > ").
type Passage struct {
	BotID      string
	FileID     string
	ID         string
	Position   int
	Content    string
	Subtype    string // paragraph, title, subtitle, list, table, code, ...
	PageNumber int    // 0: none
	Breadcrumb string
	Terms      string
	Score      float64 // search results only: higher is better
	// Embedding is the passage's vector from the configured embeddings
	// endpoint (semantic search); nil when there is none.
	Embedding []float32
}

// KnowledgeBase is a named set of a bot's files, selected by tags.
type KnowledgeBase struct {
	BotID     string
	ID        string
	Name      string
	Tags      map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// File statuses.
const (
	FileUploadPending     = "upload_pending"
	FileUploadCompleted   = "upload_completed"
	FileUploadFailed      = "upload_failed"
	FileIndexingPending   = "indexing_pending"
	FileIndexingCompleted = "indexing_completed"
	FileIndexingFailed    = "indexing_failed"
)

// MaxUploadSize bounds the declared size of a Files API upload (the
// upload URL's body); larger is refused with 413 (docs/files-api.md).
const MaxUploadSize = 100 << 20

// MaxFileSize is the Files interface's payload limit (docs/architecture.md, Limits).
const MaxFileSize = 1 << 20

// Feedback is a user's thumbs up or down on a message.
type Feedback struct {
	BotID     string
	MessageID string
	UserID    string
	Value     string // FeedbackPositive or FeedbackNegative
	Comment   string
	UpdatedAt time.Time
}

// Feedback values.
const (
	FeedbackPositive = "positive"
	FeedbackNegative = "negative"
)
