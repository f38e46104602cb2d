package files

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"mime"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Caller is an authenticated Files API caller acting on one bot: the bot
// itself (a bot API key or bot token) or a workspace member with a role
// (a personal access token). The HTTP layer authenticates with the
// Runtime API's credentials and hands this over.
type Caller struct {
	BotID string
	Bot   bool
	Role  model.Role
}

// readOps are the operations a viewer may call; the others need
// model.PermWriteBots (developer and up).
var readOps = map[string]bool{"getFile": true, "listFiles": true, "searchFiles": true, "listFilePassages": true,
	"listFileTags": true, "listFileTagValues": true, "listKnowledgeBases": true}

func (c Caller) require(op string) error {
	if c.Bot {
		return nil
	}
	perm := model.PermWriteBots
	if readOps[op] {
		perm = model.PermRead
	}
	if !c.Role.Can(perm) {
		return model.Forbidden("your role %q in this workspace does not allow you to %s (%s)", c.Role, perm, op)
	}
	return nil
}

// API is the Files API: one type per resource.
type API struct {
	Files          *Library
	Passages       *Passages
	KnowledgeBases *KnowledgeBases
	Indexer        *Indexer
}

// NewAPI returns the Files API's use cases over st, contents in blobs;
// URLs start with publicURL. Its Indexer must be started.
func NewAPI(st store.Store, blobs Blobs, publicURL string, log *slog.Logger) *API {
	if log == nil {
		log = slog.Default()
	}
	ix := &Indexer{store: st, blobs: blobs, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	lib := &Library{store: st, blobs: blobs, base: strings.TrimRight(publicURL, "/"), indexer: ix}
	return &API{Files: lib, Passages: &Passages{store: st, lib: lib}, KnowledgeBases: &KnowledgeBases{store: st}, Indexer: ix}
}

// Library implements the file operations of the Files API.
type Library struct {
	store   store.Store
	blobs   Blobs
	base    string
	indexer *Indexer
}

// FileView is the client's File object.
type FileView struct {
	ID                 string            `json:"id"`
	BotID              string            `json:"botId"`
	Key                string            `json:"key"`
	URL                string            `json:"url"`
	Size               *int64            `json:"size"`
	ContentType        string            `json:"contentType"`
	Tags               map[string]string `json:"tags"`
	Metadata           map[string]any    `json:"metadata"`
	CreatedAt          string            `json:"createdAt"`
	UpdatedAt          string            `json:"updatedAt"`
	AccessPolicies     []string          `json:"accessPolicies"`
	Index              bool              `json:"index"`
	Status             string            `json:"status"`
	FailedStatusReason string            `json:"failedStatusReason,omitempty"`
	ExpiresAt          string            `json:"expiresAt,omitempty"`
	Owner              map[string]string `json:"owner"`
	UploadURL          string            `json:"uploadUrl,omitempty"`
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (l *Library) secret(ctx context.Context, botID string) (string, error) {
	b, err := l.store.Bots().GetByID(ctx, botID)
	if err != nil {
		return "", orNotFound(err, "Bot", botID)
	}
	return b.SigningSecret, nil
}

func sign(secret, purpose, botID, fileID, nonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("parley-files-api:" + purpose + ":" + botID + ":" + fileID + ":" + nonce))
	return hex.EncodeToString(m.Sum(nil))[:40]
}

// ref encodes the bot and file ids in a URL path segment.
func ref(botID, fileID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(botID + "\x00" + fileID))
}

func unref(s string) (string, string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", "", false
	}
	b, f, ok := strings.Cut(string(raw), "\x00")
	return b, f, ok && b != "" && f != ""
}

func (l *Library) view(ctx context.Context, f *model.File, withUpload bool) (*FileView, error) {
	secret, err := l.secret(ctx, f.BotID)
	if err != nil {
		return nil, err
	}
	v := &FileView{ID: f.ID, BotID: f.BotID, Key: f.Key, ContentType: f.ContentType, Tags: f.Tags, Metadata: f.Metadata,
		CreatedAt: iso(f.CreatedAt), UpdatedAt: iso(f.UpdatedAt), AccessPolicies: f.AccessPolicies, Index: f.Index,
		Status: f.Status, FailedStatusReason: f.FailedReason, Owner: map[string]string{"type": "bot", "id": f.BotID}}
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]any{}
	}
	if v.AccessPolicies == nil {
		v.AccessPolicies = []string{}
	}
	if f.Status != model.FileUploadPending && f.Status != model.FileUploadFailed {
		size := f.Size
		v.Size = &size
	}
	if !f.ExpiresAt.IsZero() {
		v.ExpiresAt = iso(f.ExpiresAt)
	}
	r := ref(f.BotID, f.ID)
	v.URL = l.base + "/v1/files/content/" + r + "/" + sign(secret, PurposeRead, f.BotID, f.ID, "") + "/" + url.PathEscape(path.Base(f.Key))
	if withUpload {
		v.UploadURL = l.base + "/v1/files/upload/" + r + "/" + sign(secret, PurposeUpload, f.BotID, f.ID, f.UploadNonce)
	}
	return v, nil
}

// UpsertInput is upsertFile's body.
type UpsertInput struct {
	Key            string            `json:"key"`
	Tags           map[string]string `json:"tags"`
	Size           *int64            `json:"size"`
	Index          bool              `json:"index"`
	AccessPolicies []string          `json:"accessPolicies"`
	ContentType    string            `json:"contentType"`
	ExpiresAt      *string           `json:"expiresAt"`
	Metadata       map[string]any    `json:"metadata"`
}

// Upsert creates the file with this key, or replaces the existing one's
// record (its content is replaced by the next upload), and returns it
// with a single-use upload URL taking at most its declared size.
func (l *Library) Upsert(ctx context.Context, c Caller, in UpsertInput) (*FileView, error) {
	if err := c.require("upsertFile"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Key) == "" {
		return nil, model.Invalid("key: required")
	}
	if len(in.Key) > 500 {
		return nil, model.Invalid("key: at most 500 characters")
	}
	if in.Size == nil || *in.Size < 0 {
		return nil, model.Invalid("size: required, a number of bytes")
	}
	if *in.Size > model.MaxUploadSize {
		return nil, model.Errorf(model.ErrPayloadTooLarge, "the file is %d bytes; files may be at most 100 MB (%d bytes)", *in.Size, model.MaxUploadSize)
	}
	for _, p := range in.AccessPolicies {
		if p != "public_content" && p != "integrations" {
			return nil, model.Invalid("accessPolicies: %q is not one of public_content, integrations", p)
		}
	}
	ct := in.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(strings.ToLower(path.Ext(in.Key)))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return nil, model.Invalid("contentType: not a media type")
	}
	var exp time.Time
	if in.ExpiresAt != nil && *in.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
		if err != nil {
			return nil, model.Invalid("expiresAt: must be an ISO 8601 date-time")
		}
		exp = t.UTC().Truncate(time.Millisecond)
	}
	if _, err := l.secret(ctx, c.BotID); err != nil {
		return nil, err
	}
	now := model.Now()
	f, err := l.store.Files().FileByKey(ctx, c.BotID, in.Key)
	exists := err == nil
	if err != nil && !model.IsNotFound(err) {
		return nil, err
	}
	if !exists {
		f = &model.File{BotID: c.BotID, ID: model.NewSecret("file_"), Key: in.Key, CreatedAt: now}
	}
	f.Size, f.ContentType, f.Tags, f.AccessPolicies, f.Index = *in.Size, ct, in.Tags, in.AccessPolicies, in.Index
	f.Metadata, f.ExpiresAt, f.Status, f.FailedReason = in.Metadata, exp, model.FileUploadPending, ""
	f.UploadNonce, f.UpdatedAt = model.NewSecret(""), now
	if exists {
		err = l.store.Files().UpdateFile(ctx, f)
	} else {
		err = l.store.Files().CreateFile(ctx, f)
	}
	if err != nil {
		return nil, err
	}
	return l.view(ctx, f, true)
}

// Upload stores the content PUT to an upload URL (its path segments ref
// and token are the credential): at most the declared size, once. A
// body larger than declared is refused with 413 and nothing is stored;
// the URL stays usable for a correct upload.
func (l *Library) Upload(ctx context.Context, refSeg, token string, contentLength int64, r io.Reader) (*FileView, error) {
	botID, fileID, ok := unref(refSeg)
	if !ok {
		return nil, model.NotFound("upload URL")
	}
	secret, err := l.secret(ctx, botID)
	if err != nil {
		return nil, model.NotFound("upload URL")
	}
	f, err := l.store.Files().GetFile(ctx, botID, fileID)
	if model.IsNotFound(err) {
		return nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(sign(secret, PurposeUpload, botID, fileID, f.UploadNonce))) != 1 {
		return nil, model.Forbidden("invalid or expired upload URL")
	}
	if f.Status != model.FileUploadPending {
		return nil, uploadUsed(fileID)
	}
	tooLarge := model.Errorf(model.ErrPayloadTooLarge, "the upload is larger than the file's declared size (%d bytes); nothing was stored", f.Size)
	if contentLength > f.Size {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(r, f.Size+1))
	if err != nil {
		return nil, model.Invalid("the upload was interrupted (%v); nothing was stored", err)
	}
	if int64(len(data)) > f.Size {
		return nil, tooLarge
	}
	// Single use: the upload that moves the file out of upload_pending (a
	// conditional update) is the only one that stores bytes. An indexed
	// file becomes indexing_pending once its bytes are stored.
	f.Size, f.Status = int64(len(data)), model.FileUploadCompleted
	won, err := l.store.Files().CompleteUpload(ctx, f)
	if err != nil {
		return nil, err
	}
	if !won {
		return nil, uploadUsed(fileID)
	}
	if err := l.blobs.Put(ctx, botID, fileID, data); err != nil {
		f.Status, f.FailedReason = model.FileUploadFailed, "the content could not be stored"
		_ = l.store.Files().UpdateFile(context.WithoutCancel(ctx), f)
		return nil, err
	}
	if f.Index {
		f.Status = model.FileIndexingPending
		if err := l.store.Files().UpdateFile(ctx, f); err != nil {
			return nil, err
		}
		l.indexer.Wake()
	}
	return l.view(ctx, f, false)
}

// Content returns an uploaded file's bytes; the read URL's token is the
// credential.
func (l *Library) Content(ctx context.Context, refSeg, token string) (*model.File, []byte, error) {
	botID, fileID, ok := unref(refSeg)
	if !ok {
		return nil, nil, model.NotFound("file")
	}
	secret, err := l.secret(ctx, botID)
	if err != nil || subtle.ConstantTimeCompare([]byte(token), []byte(sign(secret, PurposeRead, botID, fileID, ""))) != 1 {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	f, err := l.store.Files().GetFile(ctx, botID, fileID)
	if model.IsNotFound(err) || (err == nil && (f.Status == model.FileUploadPending || f.Status == model.FileUploadFailed)) {
		return nil, nil, model.NotFound("File " + quote(fileID))
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := l.blobs.Get(ctx, botID, fileID)
	return f, data, err
}

// ReadFile returns the content of one of the bot's uploaded files, for
// another use case acting for that bot (importTable's fileId:
// tables.FileSource). A file not uploaded yet is not found.
func (l *Library) ReadFile(ctx context.Context, botID, fileID string) ([]byte, error) {
	f, err := l.get(ctx, botID, fileID)
	if err != nil {
		return nil, err
	}
	if f.Status == model.FileUploadPending || f.Status == model.FileUploadFailed {
		return nil, model.NotFound("File " + quote(fileID))
	}
	return l.blobs.Get(ctx, botID, fileID)
}

func (l *Library) get(ctx context.Context, botID, id string) (*model.File, error) {
	f, err := l.store.Files().GetFile(ctx, botID, id)
	return f, orNotFound(err, "File", id)
}

// Get returns a file.
func (l *Library) Get(ctx context.Context, c Caller, id string) (*FileView, error) {
	if err := c.require("getFile"); err != nil {
		return nil, err
	}
	f, err := l.get(ctx, c.BotID, id)
	if err != nil {
		return nil, err
	}
	return l.view(ctx, f, false)
}

// ListInput is listFiles' query.
type ListInput struct {
	NextToken     string
	PageSize      int
	SortField     string
	SortDirection string
	Tags          map[string]string
	IDs           []string
	Indexed       *bool
}

// Page is one page of a list.
type Page struct {
	NextToken string `json:"nextToken,omitempty"`
}

// matches reports whether tags has every wanted tag.
func matches(tags, want map[string]string) bool {
	for k, v := range want {
		if tags[k] != v {
			return false
		}
	}
	return true
}

// page cuts items at an offset token.
func page(n int, token string, size int) (from, to int, next string, err error) {
	if size <= 0 || size > 100 {
		size = 100
	}
	if token != "" {
		from, err = strconv.Atoi(token)
		if err != nil || from < 0 {
			return 0, 0, "", model.Errorf(model.ErrInvalidQuery, "nextToken: invalid")
		}
	}
	from = min(from, n)
	to = min(from+size, n)
	if to < n {
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

// List returns a page of the bot's files matching the filters.
func (l *Library) List(ctx context.Context, c Caller, in ListInput) ([]*FileView, Page, error) {
	if err := c.require("listFiles"); err != nil {
		return nil, Page{}, err
	}
	all, err := l.store.Files().ListFiles(ctx, c.BotID)
	if err != nil {
		return nil, Page{}, err
	}
	ids := map[string]bool{}
	for _, id := range in.IDs {
		ids[id] = true
	}
	var keep []*model.File
	for _, f := range all {
		if (len(ids) > 0 && !ids[f.ID]) || !matches(f.Tags, in.Tags) || (in.Indexed != nil && f.Index != *in.Indexed) {
			continue
		}
		keep = append(keep, f)
	}
	less := func(a, b *model.File) bool { return a.CreatedAt.Before(b.CreatedAt) }
	switch in.SortField {
	case "", "createdAt":
	case "key":
		less = func(a, b *model.File) bool { return a.Key < b.Key }
	case "size":
		less = func(a, b *model.File) bool { return a.Size < b.Size }
	case "updatedAt":
		less = func(a, b *model.File) bool { return a.UpdatedAt.Before(b.UpdatedAt) }
	case "status":
		less = func(a, b *model.File) bool { return a.Status < b.Status }
	default:
		return nil, Page{}, model.Errorf(model.ErrInvalidQuery, "sortField: %q is not one of key, size, createdAt, updatedAt, status", in.SortField)
	}
	asc := in.SortDirection == "asc"
	if in.SortDirection != "" && in.SortDirection != "asc" && in.SortDirection != "desc" {
		return nil, Page{}, model.Errorf(model.ErrInvalidQuery, "sortDirection: asc or desc")
	}
	sort.SliceStable(keep, func(i, j int) bool {
		if asc {
			return less(keep[i], keep[j])
		}
		return less(keep[j], keep[i])
	})
	from, to, next, err := page(len(keep), in.NextToken, in.PageSize)
	if err != nil {
		return nil, Page{}, err
	}
	out := []*FileView{}
	for _, f := range keep[from:to] {
		v, err := l.view(ctx, f, false)
		if err != nil {
			return nil, Page{}, err
		}
		out = append(out, v)
	}
	return out, Page{NextToken: next}, nil
}

// MetadataInput is updateFileMetadata's body.
type MetadataInput struct {
	Metadata       map[string]any     `json:"metadata"`
	Tags           map[string]*string `json:"tags"`
	AccessPolicies []string           `json:"accessPolicies"`
	ExpiresAt      *string            `json:"expiresAt"`
	ExpiresAtSet   bool               `json:"-"`
}

// UpdateMetadata merges metadata (a null value removes a key) and tags
// (null removes one), replaces access policies and the expiry.
func (l *Library) UpdateMetadata(ctx context.Context, c Caller, id string, in MetadataInput) (*FileView, error) {
	if err := c.require("updateFileMetadata"); err != nil {
		return nil, err
	}
	f, err := l.get(ctx, c.BotID, id)
	if err != nil {
		return nil, err
	}
	if in.Metadata != nil {
		if f.Metadata == nil {
			f.Metadata = map[string]any{}
		}
		for k, v := range in.Metadata {
			if v == nil {
				delete(f.Metadata, k)
			} else {
				f.Metadata[k] = v
			}
		}
	}
	if in.Tags != nil {
		if f.Tags == nil {
			f.Tags = map[string]string{}
		}
		for k, v := range in.Tags {
			if v == nil {
				delete(f.Tags, k)
			} else {
				f.Tags[k] = *v
			}
		}
	}
	if in.AccessPolicies != nil {
		f.AccessPolicies = in.AccessPolicies
	}
	if in.ExpiresAtSet {
		f.ExpiresAt = time.Time{}
		if in.ExpiresAt != nil && *in.ExpiresAt != "" {
			t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
			if err != nil {
				return nil, model.Invalid("expiresAt: must be an ISO 8601 date-time")
			}
			f.ExpiresAt = t.UTC().Truncate(time.Millisecond)
		}
	}
	f.UpdatedAt = model.Now()
	if err := l.store.Files().UpdateFile(ctx, f); err != nil {
		return nil, err
	}
	return l.view(ctx, f, false)
}

// Delete deletes a file, its content and passages.
func (l *Library) Delete(ctx context.Context, c Caller, id string) error {
	if err := c.require("deleteFile"); err != nil {
		return err
	}
	if _, err := l.get(ctx, c.BotID, id); err != nil {
		return err
	}
	if err := l.store.Files().DeleteFile(ctx, c.BotID, id); err != nil {
		return orNotFound(err, "File", id)
	}
	return l.blobs.Delete(ctx, c.BotID, id)
}

// Copy copies a file (by id or key) of the caller's bot to key dstKey of
// dst's bot (the same bot, or another the credential may write to), with
// its content and passages. An existing destination key needs overwrite.
func (l *Library) Copy(ctx context.Context, c, dst Caller, idOrKey, dstKey string, overwrite bool) (*FileView, error) {
	if err := c.require("getFile"); err != nil {
		return nil, err
	}
	if err := dst.require("copyFile"); err != nil {
		return nil, err
	}
	src, err := l.store.Files().GetFile(ctx, c.BotID, idOrKey)
	if model.IsNotFound(err) {
		src, err = l.store.Files().FileByKey(ctx, c.BotID, idOrKey)
	}
	if err != nil {
		return nil, orNotFound(err, "File", idOrKey)
	}
	if src.Status == model.FileUploadPending || src.Status == model.FileUploadFailed {
		return nil, model.Invalid("file %s has no content yet: upload it first", quote(src.ID))
	}
	if strings.TrimSpace(dstKey) == "" || len(dstKey) > 500 {
		return nil, model.Invalid("destinationKey: 1 to 500 characters")
	}
	old, err := l.store.Files().FileByKey(ctx, dst.BotID, dstKey)
	if err == nil && !overwrite {
		return nil, model.Errorf(model.ErrAlreadyExists, "a file with key %s already exists; pass overwrite: true to replace it", quote(dstKey))
	}
	if err != nil && !model.IsNotFound(err) {
		return nil, err
	}
	data, err := l.blobs.Get(ctx, src.BotID, src.ID)
	if err != nil {
		return nil, err
	}
	passages, err := l.store.Files().ListPassages(ctx, src.BotID, src.ID, -1, 1<<30)
	if err != nil {
		return nil, err
	}
	now := model.Now()
	cp := *src
	cp.BotID, cp.ID, cp.Key, cp.CreatedAt, cp.UpdatedAt, cp.UploadNonce = dst.BotID, model.NewSecret("file_"), dstKey, now, now, ""
	if err := l.store.Files().CreateFile(ctx, &cp); err != nil {
		return nil, err
	}
	fail := func(err error) (*FileView, error) {
		dctx := context.WithoutCancel(ctx)
		_ = l.blobs.Delete(dctx, cp.BotID, cp.ID)
		_ = l.store.Files().DeleteFile(dctx, cp.BotID, cp.ID)
		return nil, err
	}
	if err := l.blobs.Put(ctx, cp.BotID, cp.ID, data); err != nil {
		return fail(err)
	}
	for _, p := range passages {
		p.ID = ""
	}
	if err := l.store.Files().SetPassages(ctx, cp.BotID, cp.ID, passages); err != nil {
		return fail(err)
	}
	if old != nil {
		_ = l.store.Files().DeleteFile(ctx, old.BotID, old.ID)
		_ = l.blobs.Delete(ctx, old.BotID, old.ID)
	}
	return l.view(ctx, &cp, false)
}

// Tags returns the tag names used by the bot's files, sorted.
func (l *Library) Tags(ctx context.Context, c Caller, token string, size int) ([]string, Page, error) {
	return l.tagList(ctx, c, "listFileTags", token, size, func(k, _ string) string { return k }, "")
}

// TagValues returns the values tag takes on the bot's files, sorted.
func (l *Library) TagValues(ctx context.Context, c Caller, tag, token string, size int) ([]string, Page, error) {
	return l.tagList(ctx, c, "listFileTagValues", token, size, func(_, v string) string { return v }, tag)
}

func (l *Library) tagList(ctx context.Context, c Caller, op, token string, size int, pick func(k, v string) string, only string) ([]string, Page, error) {
	if err := c.require(op); err != nil {
		return nil, Page{}, err
	}
	files, err := l.store.Files().ListFiles(ctx, c.BotID)
	if err != nil {
		return nil, Page{}, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, f := range files {
		for k, v := range f.Tags {
			if only != "" && k != only {
				continue
			}
			if s := pick(k, v); !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	from, to, next, err := page(len(out), token, size)
	if err != nil {
		return nil, Page{}, err
	}
	return out[from:to], Page{NextToken: next}, nil
}

func orNotFound(err error, what, id string) error {
	if model.IsNotFound(err) {
		return model.NotFound(what + " " + quote(id))
	}
	return err
}
