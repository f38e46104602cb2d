package service

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"mime"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Files (the webchat's attachments): a record in the store, the bytes in a
// Blobs (files under the data directory with SQLite, a table with
// PostgreSQL). A file is created by POST /files, its bytes arrive by a PUT
// to its upload URL, and it is served back at its URL.

// MaxFileSize is the SPEC's Files payload limit.
const MaxFileSize = 1 << 20

// Blobs keeps file contents.
type Blobs interface {
	// Put stores data for a file, replacing what it had; on error nothing
	// is left behind.
	Put(ctx context.Context, botID, fileID string, data []byte) error
	Get(ctx context.Context, botID, fileID string) ([]byte, error)
	// Delete removes a file's contents; a missing one is not an error.
	Delete(ctx context.Context, botID, fileID string) error
}

// blobsOf holds each Service's Blobs (set at wiring time, before serving).
// SetBlobs sets where file contents are kept; without it, file uploads are
// refused.
func (s *Service) SetBlobs(b Blobs) { s.fileBlobs = b }

func (s *Service) blobs() Blobs { return s.fileBlobs }

func (s *Service) fileStores() (store.Files, error) {
	fp, ok := s.store.(store.FilesProvider)
	if !ok || s.blobs() == nil {
		return nil, model.Errorf(model.ErrMethodNotFound, "file uploads are not available on this server")
	}
	return fp.Files(), nil
}

// FileInput is the body of createFile.
type FileInput struct {
	Key            *string           `json:"key"`
	Size           *int64            `json:"size"`
	ContentType    *string           `json:"contentType"`
	Tags           map[string]string `json:"tags"`
	AccessPolicies []string          `json:"accessPolicies"`
	Index          *bool             `json:"index"`
	ExpiresAt      *string           `json:"expiresAt"`
	PublicContent  *bool             `json:"publicContentImmediatelyAccessible"`
}

// FileView is the Files API File.
type FileView struct {
	ID                 string            `json:"id"`
	BotID              string            `json:"botId"`
	Key                string            `json:"key"`
	URL                string            `json:"url"`
	UploadURL          string            `json:"uploadUrl"`
	Size               *int64            `json:"size"`
	ContentType        string            `json:"contentType"`
	Tags               map[string]string `json:"tags"`
	CreatedAt          string            `json:"createdAt"`
	UpdatedAt          string            `json:"updatedAt"`
	AccessPolicies     []string          `json:"accessPolicies"`
	Index              bool              `json:"index"`
	Status             string            `json:"status"`
	FailedStatusReason string            `json:"failedStatusReason,omitempty"`
	ExpiresAt          string            `json:"expiresAt,omitempty"`
}

// fileToken authorises the upload to (and download of) one file: an HMAC
// of its id under the chat integration's key, so the URLs need no stored
// secret and stop working when the key is rotated.
func fileToken(sc *ChatScope, purpose, fileID string) string {
	m := hmac.New(sha256.New, []byte(sc.key))
	m.Write([]byte("parley-file:" + purpose + ":" + sc.BotID + ":" + fileID))
	return hex.EncodeToString(m.Sum(nil))[:40]
}

// RenderFile renders a file with its URLs under base (the webchat's
// {public-url}/webchat/{clientId}).
func (s *Service) RenderFile(sc *WebchatScope, base string, f *store.File) FileView {
	name := path.Base(f.Key)
	if i := strings.IndexByte(name, '-'); i == 6 {
		name = name[7:] // the component prefixes keys with 6 random chars and a dash
	}
	if name == "" || name == "." || name == "/" {
		name = "file"
	}
	v := FileView{ID: f.ID, BotID: f.BotID, Key: f.Key, ContentType: f.ContentType, Tags: nonNilStrings(f.Tags),
		CreatedAt: model.FormatTime(f.CreatedAt), UpdatedAt: model.FormatTime(f.UpdatedAt),
		AccessPolicies: f.AccessPolicies, Index: f.Index, Status: f.Status, FailedStatusReason: f.FailedReason,
		URL:       base + "/files/" + f.ID + "/" + fileToken(sc.ChatScope, "read", f.ID) + "/" + url.PathEscape(name),
		UploadURL: base + "/files/" + f.ID + "/upload?token=" + fileToken(sc.ChatScope, "upload", f.ID)}
	if v.AccessPolicies == nil {
		v.AccessPolicies = []string{}
	}
	if f.Status == store.FileUploadCompleted || f.Size > 0 {
		size := f.Size
		v.Size = &size
	}
	if !f.ExpiresAt.IsZero() {
		v.ExpiresAt = model.FormatTime(f.ExpiresAt)
	}
	return v
}

func nonNilStrings(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// WebchatCreateFile records a file the caller is about to upload. The
// content type comes from the body, else from the key's extension.
func (s *Service) WebchatCreateFile(ctx context.Context, c *ChatCaller, in FileInput) (*store.File, error) {
	fs, err := s.fileStores()
	if err != nil {
		return nil, err
	}
	if in.Key == nil || strings.TrimSpace(*in.Key) == "" {
		return nil, model.Invalid("key: required")
	}
	if len(*in.Key) > 500 {
		return nil, model.Invalid("key: at most 500 characters")
	}
	if in.Size != nil && *in.Size > MaxFileSize {
		return nil, model.Errorf(model.ErrPayloadTooLarge, "the file is %d bytes; files may be at most 1 MB (%d bytes)", *in.Size, MaxFileSize)
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
	f := &store.File{BotID: c.BotID, ID: model.NewSecret("file_"), Key: *in.Key, ContentType: ct,
		Tags: in.Tags, AccessPolicies: in.AccessPolicies, Status: store.FileUploadPending,
		UserID: c.UserID, CreatedAt: now, UpdatedAt: now}
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
	if err := fs.CreateFile(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// WebchatUploadFile stores a file's bytes, read from r (at most
// MaxFileSize). The upload URL's token is its credential. A failed upload
// (too large, cut off, storage error) deletes the file: nothing is left
// behind, and the component's next message cannot point at it.
func (s *Service) WebchatUploadFile(ctx context.Context, sc *WebchatScope, fileID, token string, r io.Reader) (*store.File, error) {
	fs, err := s.fileStores()
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(fileToken(sc.ChatScope, "upload", fileID))) != 1 {
		return nil, model.Forbidden("invalid upload token")
	}
	f, err := fs.GetFile(ctx, sc.BotID, fileID)
	if model.IsNotFound(err) {
		return nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, err
	}
	fail := func(cause error) (*store.File, error) {
		dctx := context.WithoutCancel(ctx)
		_ = s.blobs().Delete(dctx, sc.BotID, fileID)
		_ = fs.DeleteFile(dctx, sc.BotID, fileID)
		return nil, cause
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return fail(model.Invalid("the upload was interrupted (%v); the file was deleted", err))
	}
	if len(data) > MaxFileSize {
		return fail(model.Errorf(model.ErrPayloadTooLarge, "files may be at most 1 MB (%d bytes); the upload was refused and the file deleted", MaxFileSize))
	}
	if err := s.blobs().Put(ctx, sc.BotID, fileID, data); err != nil {
		return fail(err)
	}
	f.Size, f.Status, f.FailedReason = int64(len(data)), store.FileUploadCompleted, ""
	if err := fs.UpdateFile(ctx, f); err != nil {
		return fail(err)
	}
	return f, nil
}

// WebchatDeleteUpload removes a file whose upload failed before its
// contents could be read (an oversized declared length).
func (s *Service) WebchatDeleteUpload(ctx context.Context, sc *WebchatScope, fileID, token string) {
	fs, err := s.fileStores()
	if err != nil {
		return
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(fileToken(sc.ChatScope, "upload", fileID))) != 1 {
		return
	}
	_ = s.blobs().Delete(ctx, sc.BotID, fileID)
	_ = fs.DeleteFile(ctx, sc.BotID, fileID)
}

// WebchatReadFile returns an uploaded file and its bytes; the token in its
// URL is its credential (files are public_content, readable by whoever has
// the URL, like upstream's).
func (s *Service) WebchatReadFile(ctx context.Context, sc *WebchatScope, fileID, token string) (*store.File, []byte, error) {
	fs, err := s.fileStores()
	if err != nil {
		return nil, nil, err
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(fileToken(sc.ChatScope, "read", fileID))) != 1 {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	f, err := fs.GetFile(ctx, sc.BotID, fileID)
	if model.IsNotFound(err) || (err == nil && f.Status != store.FileUploadCompleted) {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := s.blobs().Get(ctx, sc.BotID, fileID)
	if model.IsNotFound(err) {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, nil, err
	}
	return f, data, nil
}

// MessageFeedback is a user's feedback on a message.
type MessageFeedback struct {
	Value   string `json:"value"`
	Comment string `json:"comment,omitempty"`
}

// feedbackFor loads the feedback userID gave on these messages; without a
// feedback store there is none.
func (s *Service) feedbackFor(ctx context.Context, botID, userID string, ms []*model.Message) (map[string]*MessageFeedback, error) {
	out := map[string]*MessageFeedback{}
	fp, ok := s.store.(store.FilesProvider)
	if !ok || len(ms) == 0 {
		return out, nil
	}
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	fbs, err := fp.Feedback().FeedbackFor(ctx, botID, userID, ids)
	if err != nil {
		return nil, err
	}
	for _, f := range fbs {
		out[f.MessageID] = &MessageFeedback{Value: f.Value, Comment: f.Comment}
	}
	return out, nil
}

// WebchatFeedback records (value set) or removes (value nil) the caller's
// feedback on a message of a conversation they take part in.
func (s *Service) WebchatFeedback(ctx context.Context, c *ChatCaller, messageID string, value *string, comment string) error {
	fp, ok := s.store.(store.FilesProvider)
	if !ok {
		return model.Errorf(model.ErrMethodNotFound, "feedback is not available on this server")
	}
	if _, err := s.ChatGetMessage(ctx, c, messageID); err != nil {
		return err
	}
	if value == nil {
		return fp.Feedback().DeleteFeedback(ctx, c.BotID, messageID, c.UserID)
	}
	if *value != "positive" && *value != "negative" {
		return model.Invalid("value: must be positive or negative")
	}
	if len(comment) > 2000 {
		return model.Invalid("comment: at most 2000 characters")
	}
	return fp.Feedback().PutFeedback(ctx, &store.Feedback{BotID: c.BotID, MessageID: messageID, UserID: c.UserID,
		Value: *value, Comment: comment})
}
