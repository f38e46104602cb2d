// Package files implements the Files API's use cases on a bot's files: a
// record in the store, the bytes in a Blobs (files under the data directory
// with SQLite, a table with PostgreSQL). Today's caller is the webchat,
// whose attachments are files: a file is created, its bytes arrive by a
// PUT to its upload URL, and it is served back at its URL. Both URLs carry
// a token (an HMAC of the file id under the owner's secret), so they need
// no stored secret and stop working when the secret is rotated.
package files

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Blobs keeps file contents.
type Blobs interface {
	// Put stores data for a file, replacing what it had; on error nothing
	// is left behind.
	Put(ctx context.Context, botID, fileID string, data []byte) error
	Get(ctx context.Context, botID, fileID string) ([]byte, error)
	// Delete removes a file's contents; a missing one is not an error.
	Delete(ctx context.Context, botID, fileID string) error
}

// Files implements the file operations.
type Files struct {
	store store.Store
	blobs Blobs
}

// New returns the file use cases over st, keeping contents in blobs.
func New(st store.Store, blobs Blobs) *Files {
	return &Files{store: st, blobs: blobs}
}

// Owner is whom a file belongs to: the bot, the uploading user, and the
// secret its URLs are signed with (the chat integration's encryption key).
type Owner struct {
	BotID  string
	UserID string
	Secret string
}

// Token purposes.
const (
	PurposeUpload = "upload"
	PurposeRead   = "read"
)

// Token authorises one purpose (upload or read) on one file.
func (o Owner) Token(purpose, fileID string) string {
	m := hmac.New(sha256.New, []byte(o.Secret))
	m.Write([]byte("parley-file:" + purpose + ":" + o.BotID + ":" + fileID))
	return hex.EncodeToString(m.Sum(nil))[:40]
}

func (o Owner) check(purpose, fileID, token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(o.Token(purpose, fileID))) == 1
}

// Input is the body of createFile.
type Input struct {
	Key            *string           `json:"key"`
	Size           *int64            `json:"size"`
	ContentType    *string           `json:"contentType"`
	Tags           map[string]string `json:"tags"`
	AccessPolicies []string          `json:"accessPolicies"`
	Index          *bool             `json:"index"`
	ExpiresAt      *string           `json:"expiresAt"`
	PublicContent  *bool             `json:"publicContentImmediatelyAccessible"`
}

// Create records a file the owner's user is about to upload. The content
// type comes from the body, else from the key's extension.
func (s *Files) Create(ctx context.Context, o Owner, in Input) (*model.File, error) {
	if in.Key == nil || strings.TrimSpace(*in.Key) == "" {
		return nil, model.Invalid("key: required")
	}
	if len(*in.Key) > 500 {
		return nil, model.Invalid("key: at most 500 characters")
	}
	if in.Size != nil && *in.Size > model.MaxFileSize {
		return nil, model.Errorf(model.ErrPayloadTooLarge, "the file is %d bytes; files may be at most 1 MB (%d bytes)", *in.Size, model.MaxFileSize)
	}
	if in.Size != nil && *in.Size < 0 {
		return nil, model.Invalid("size: must not be negative")
	}
	ct := ""
	if in.ContentType != nil {
		ct = *in.ContentType
	}
	if ct == "" {
		ct = mime.TypeByExtension(strings.ToLower(path.Ext(*in.Key)))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return nil, model.Invalid("contentType: not a media type")
	}
	now := model.Now()
	f := &model.File{BotID: o.BotID, ID: model.NewSecret("file_"), Key: *in.Key, ContentType: ct,
		Tags: in.Tags, AccessPolicies: in.AccessPolicies, Status: model.FileUploadPending,
		UserID: o.UserID, CreatedAt: now, UpdatedAt: now}
	if in.Size != nil {
		f.Size = *in.Size
	}
	if in.Index != nil {
		f.Index = *in.Index
	}
	if in.Tags != nil {
		f.ConversationID = in.Tags["conversation"]
	}
	if in.ExpiresAt != nil && *in.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
		if err != nil {
			return nil, model.Invalid("expiresAt: must be an ISO 8601 date-time")
		}
		f.ExpiresAt = t.UTC().Truncate(time.Millisecond)
	}
	if err := s.store.Files().CreateFile(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Upload stores a file's bytes, read from r (at most model.MaxFileSize).
// The upload URL's token is its credential. A failed upload (too large,
// cut off, storage error) deletes the file: nothing is left behind, and
// the component's next message cannot point at it.
func (s *Files) Upload(ctx context.Context, o Owner, fileID, token string, r io.Reader) (*model.File, error) {
	if !o.check(PurposeUpload, fileID, token) {
		return nil, model.Forbidden("invalid upload token")
	}
	f, err := s.store.Files().GetFile(ctx, o.BotID, fileID)
	if model.IsNotFound(err) {
		return nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, err
	}
	if f.Status != model.FileUploadPending {
		return nil, uploadUsed(fileID)
	}
	fail := func(cause error) (*model.File, error) {
		dctx := context.WithoutCancel(ctx)
		_ = s.blobs.Delete(dctx, o.BotID, fileID)
		_ = s.store.Files().DeleteFile(dctx, o.BotID, fileID)
		return nil, cause
	}
	data, err := io.ReadAll(io.LimitReader(r, model.MaxFileSize+1))
	if err != nil {
		return fail(model.Invalid("the upload was interrupted (%v); the file was deleted", err))
	}
	if len(data) > model.MaxFileSize {
		return fail(model.Errorf(model.ErrPayloadTooLarge, "files may be at most 1 MB (%d bytes); the upload was refused and the file deleted", model.MaxFileSize))
	}
	// Single use: the upload that moves the file from pending to completed
	// (a conditional update) is the only one that stores bytes; any other
	// finds it claimed and changes nothing.
	f.Size, f.Status, f.FailedReason = int64(len(data)), model.FileUploadCompleted, ""
	won, err := s.store.Files().CompleteUpload(ctx, f)
	if err != nil {
		return fail(err)
	}
	if !won {
		return nil, uploadUsed(fileID)
	}
	if err := s.blobs.Put(ctx, o.BotID, fileID, data); err != nil {
		return fail(err)
	}
	return f, nil
}

func uploadUsed(fileID string) error {
	return model.Errorf(model.ErrAlreadyExists, "the upload URL of file %s was already used; upload URLs are single-use", quote(fileID))
}

// RefuseUpload handles an upload refused before its contents were read
// (an oversized declared length): a pending file is deleted, so nothing
// is left behind; a completed one is kept and the upload is refused as
// a second use of its URL.
func (s *Files) RefuseUpload(ctx context.Context, o Owner, fileID, token string, cause error) error {
	if !o.check(PurposeUpload, fileID, token) {
		return model.Forbidden("invalid upload token")
	}
	f, err := s.store.Files().GetFile(ctx, o.BotID, fileID)
	if model.IsNotFound(err) {
		return model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return err
	}
	if f.Status != model.FileUploadPending {
		return uploadUsed(fileID)
	}
	_ = s.blobs.Delete(ctx, o.BotID, fileID)
	_ = s.store.Files().DeleteFile(ctx, o.BotID, fileID)
	return cause
}

// Read returns an uploaded file and its bytes; the token in its URL is its
// credential (files are public_content, readable by whoever has the URL,
// like upstream's).
func (s *Files) Read(ctx context.Context, o Owner, fileID, token string) (*model.File, []byte, error) {
	if !o.check(PurposeRead, fileID, token) {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	f, err := s.store.Files().GetFile(ctx, o.BotID, fileID)
	if model.IsNotFound(err) || (err == nil && f.Status != model.FileUploadCompleted) {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := s.blobs.Get(ctx, o.BotID, fileID)
	if model.IsNotFound(err) {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, nil, err
	}
	return f, data, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
