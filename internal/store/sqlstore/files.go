package sqlstore

import (
	"context"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Files returns the file records (and database-held contents).
func (s *Store) Files() store.Files { return files{s} }

// Feedback returns the message feedback store.
func (s *Store) Feedback() store.Feedback { return feedback{s} }

type files struct{ s *Store }

const fileCols = `bot_id, id, file_key, size, content_type, tags, access_policies, indexed, status, failed_reason,
	conversation_id, user_id, expires_at, created_at, updated_at, metadata, upload_nonce`

func (r files) CreateFile(ctx context.Context, f *model.File) error {
	newID(&f.ID)
	now := model.Now()
	stamp(&f.CreatedAt, now)
	stamp(&f.UpdatedAt, now)
	tags, err := jsonText(nonNilMap(f.Tags))
	if err != nil {
		return err
	}
	pol, err := jsonText(nonNilSlice(f.AccessPolicies))
	if err != nil {
		return err
	}
	meta, err := jsonText(nonNilAny(f.Metadata))
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO files (`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		f.BotID, f.ID, f.Key, f.Size, f.ContentType, tags, pol, boolInt(f.Index), f.Status, f.FailedReason,
		f.ConversationID, f.UserID, ms(f.ExpiresAt), ms(f.CreatedAt), ms(f.UpdatedAt), meta, f.UploadNonce)
	return r.s.fail(err, "file")
}

func (r files) GetFile(ctx context.Context, botID, id string) (*model.File, error) {
	return one(ctx, r.s, "file", scanFile, `SELECT `+fileCols+` FROM files WHERE bot_id = ? AND id = ?`, botID, id)
}

func scanFile(sc scanner) (*model.File, error) {
	var f model.File
	var tags, pol, meta string
	var idx int
	var exp, c, u int64
	if err := sc.Scan(&f.BotID, &f.ID, &f.Key, &f.Size, &f.ContentType, &tags, &pol, &idx, &f.Status, &f.FailedReason,
		&f.ConversationID, &f.UserID, &exp, &c, &u, &meta, &f.UploadNonce); err != nil {
		return nil, err
	}
	if meta != "{}" {
		if err := fromJSON(meta, &f.Metadata); err != nil {
			return nil, err
		}
	}
	if err := fromJSON(tags, &f.Tags); err != nil {
		return nil, err
	}
	if err := fromJSON(pol, &f.AccessPolicies); err != nil {
		return nil, err
	}
	f.Index, f.ExpiresAt, f.CreatedAt, f.UpdatedAt = idx != 0, fromMS(exp), fromMS(c), fromMS(u)
	return &f, nil
}

func (r files) UpdateFile(ctx context.Context, f *model.File) error {
	stamp(&f.UpdatedAt, model.Now())
	tags, err := jsonText(nonNilMap(f.Tags))
	if err != nil {
		return err
	}
	pol, err := jsonText(nonNilSlice(f.AccessPolicies))
	if err != nil {
		return err
	}
	meta, err := jsonText(nonNilAny(f.Metadata))
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, "file", `UPDATE files SET file_key = ?, size = ?, content_type = ?, tags = ?, access_policies = ?, indexed = ?,
		status = ?, failed_reason = ?, expires_at = ?, updated_at = ?, metadata = ?, upload_nonce = ?
		WHERE bot_id = ? AND id = ?`, f.Key, f.Size, f.ContentType, tags, pol, boolInt(f.Index), f.Status, f.FailedReason,
		ms(f.ExpiresAt), ms(f.UpdatedAt), meta, f.UploadNonce, f.BotID, f.ID)
}

func (r files) CompleteUpload(ctx context.Context, f *model.File) (bool, error) {
	stamp(&f.UpdatedAt, model.Now())
	res, err := r.s.exec(ctx, `UPDATE files SET size = ?, status = ?, failed_reason = ?, updated_at = ?
		WHERE bot_id = ? AND id = ? AND status = ?`, f.Size, f.Status, f.FailedReason, ms(f.UpdatedAt), f.BotID, f.ID, model.FileUploadPending)
	if err != nil {
		return false, r.s.fail(err, "file")
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (r files) DeleteFile(ctx context.Context, botID, id string) error {
	if r.sqlite() { // the FTS5 table has no foreign key to cascade
		if _, err := r.s.exec(ctx, `DELETE FROM file_passages_fts WHERE bot_id = ? AND file_id = ?`, botID, id); err != nil {
			return r.s.fail(err, "passage")
		}
	}
	return r.s.execOne(ctx, "file", `DELETE FROM files WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r files) PutBlob(ctx context.Context, botID, id string, data []byte) error {
	return r.s.tx(ctx, func(s *Store) error {
		if _, err := s.exec(ctx, `DELETE FROM file_blobs WHERE bot_id = ? AND file_id = ?`, botID, id); err != nil {
			return s.fail(err, "file contents")
		}
		_, err := s.exec(ctx, `INSERT INTO file_blobs (bot_id, file_id, data) VALUES (?, ?, ?)`, botID, id, data)
		return s.fail(err, "file contents")
	})
}

func (r files) GetBlob(ctx context.Context, botID, id string) ([]byte, error) {
	return one(ctx, r.s, "file contents", func(sc scanner) ([]byte, error) {
		var b []byte
		err := sc.Scan(&b)
		return b, err
	}, `SELECT data FROM file_blobs WHERE bot_id = ? AND file_id = ?`, botID, id)
}

func (r files) DeleteBlob(ctx context.Context, botID, id string) error {
	_, err := r.s.exec(ctx, `DELETE FROM file_blobs WHERE bot_id = ? AND file_id = ?`, botID, id)
	return r.s.fail(err, "file contents")
}

type feedback struct{ s *Store }

func (r feedback) PutFeedback(ctx context.Context, f *model.Feedback) error {
	stamp(&f.UpdatedAt, model.Now())
	return r.s.tx(ctx, func(s *Store) error {
		if _, err := s.exec(ctx, `DELETE FROM message_feedback WHERE bot_id = ? AND message_id = ? AND user_id = ?`,
			f.BotID, f.MessageID, f.UserID); err != nil {
			return s.fail(err, "feedback")
		}
		_, err := s.exec(ctx, `INSERT INTO message_feedback (bot_id, message_id, user_id, value, comment, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			f.BotID, f.MessageID, f.UserID, f.Value, f.Comment, ms(f.UpdatedAt))
		return s.fail(err, "message")
	})
}

func (r feedback) DeleteFeedback(ctx context.Context, botID, messageID, userID string) error {
	_, err := r.s.exec(ctx, `DELETE FROM message_feedback WHERE bot_id = ? AND message_id = ? AND user_id = ?`, botID, messageID, userID)
	return r.s.fail(err, "feedback")
}

func (r feedback) FeedbackFor(ctx context.Context, botID, userID string, messageIDs []string) ([]*model.Feedback, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	args := []any{botID, userID}
	for _, id := range messageIDs {
		args = append(args, id)
	}
	q := `SELECT bot_id, message_id, user_id, value, comment, updated_at FROM message_feedback
		WHERE bot_id = ? AND user_id = ? AND message_id IN (?` + strings.Repeat(", ?", len(messageIDs)-1) + `)`
	return all(ctx, r.s, "feedback", func(sc scanner) (*model.Feedback, error) {
		var f model.Feedback
		var u int64
		if err := sc.Scan(&f.BotID, &f.MessageID, &f.UserID, &f.Value, &f.Comment, &u); err != nil {
			return nil, err
		}
		f.UpdatedAt = fromMS(u)
		return &f, nil
	}, q, args...)
}

func nonNilAny(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
