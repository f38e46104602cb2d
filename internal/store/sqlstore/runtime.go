package sqlstore

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// The Runtime API's part of Chat (store.RuntimeChat): tags, filtered
// lists, updates.

// tagTable is a table mirroring the tags of the rows of parent, for
// filtering (EXISTS per tag) and listTagValues.
type tagTable struct {
	name   string // user_tags
	owner  string // its column naming the tagged row: user_id
	parent string // the tagged table: chat_users
}

var tagTables = struct{ user, conversation, message, workflow, task tagTable }{
	user:         tagTable{"user_tags", "user_id", "chat_users"},
	conversation: tagTable{"conversation_tags", "conversation_id", "conversations"},
	message:      tagTable{"message_tags", "message_id", "messages"},
	workflow:     tagTable{"workflow_tags", "workflow_id", "workflows"},
	task:         tagTable{"task_tags", "task_id", "tasks"},
}

// tagsText is the stored JSON of tags ({} for none).
func tagsText(tags map[string]string) (string, error) {
	if len(tags) == 0 {
		return "{}", nil
	}
	return jsonText(tags)
}

// putRowTags writes the mirror rows of a row's tags; replace deletes the old
// ones first.
func putRowTags(ctx context.Context, s *Store, tt tagTable, botID, ownerID string, tags map[string]string, replace bool) error {
	if replace {
		if _, err := s.exec(ctx, `DELETE FROM `+tt.name+` WHERE bot_id = ? AND `+tt.owner+` = ?`, botID, ownerID); err != nil {
			return s.fail(err, "tags")
		}
	}
	for _, k := range sortedKeys(tags) {
		if _, err := s.exec(ctx, `INSERT INTO `+tt.name+` (bot_id, `+tt.owner+`, key, value) VALUES (?, ?, ?, ?)`,
			botID, ownerID, k, tags[k]); err != nil {
			return s.fail(err, "tags")
		}
	}
	return nil
}

// tagsFrom reads stored tags; none is a nil map.
func tagsFrom(text string, tags *map[string]string) error {
	if err := fromJSON(text, tags); err != nil {
		return err
	}
	if len(*tags) == 0 {
		*tags = nil
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tagConds adds one EXISTS condition per tag to ls (sorted keys keep the
// query text, and so the statement cache, stable).
func tagConds(ls *listSpec, tt tagTable, tags map[string]string) {
	for _, k := range sortedKeys(tags) {
		ls.where = append(ls.where, fmt.Sprintf("EXISTS (SELECT 1 FROM %s t WHERE t.bot_id = %s.bot_id AND t.%s = %s.id AND t.key = ? AND t.value = ?)",
			tt.name, tt.parent, tt.owner, tt.parent))
		ls.args = append(ls.args, k, tags[k])
	}
}

// sortColumn maps a sort field to its column.
func sortColumn(field string) (string, error) {
	switch field {
	case "", "createdAt":
		return "created_at", nil
	case "updatedAt":
		return "updated_at", nil
	}
	return "", model.Errorf(model.ErrInvalidQuery, "unknown sort field %q", field)
}

func (r chat) UpdateConversation(ctx context.Context, c *model.Conversation) error {
	stamp(&c.UpdatedAt, model.Now())
	tags, err := tagsText(c.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "conversation", `UPDATE conversations SET tags = ?, updated_at = ? WHERE bot_id = ? AND id = ?`,
			tags, ms(c.UpdatedAt), c.BotID, c.ID); err != nil {
			return err
		}
		return putRowTags(ctx, s, tagTables.conversation, c.BotID, c.ID, c.Tags, true)
	})
}

func (r chat) UpdateMessage(ctx context.Context, m *model.Message) error {
	stamp(&m.UpdatedAt, model.Now())
	tags, err := tagsText(m.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "message", `UPDATE messages SET payload = ?, tags = ?, updated_at = ? WHERE bot_id = ? AND id = ?`,
			rawText(m.Payload), tags, ms(m.UpdatedAt), m.BotID, m.ID); err != nil {
			return err
		}
		return putRowTags(ctx, s, tagTables.message, m.BotID, m.ID, m.Tags, true)
	})
}

func (r chat) UpdateEvent(ctx context.Context, e *model.Event) error {
	var due int64
	if !e.DueAt.IsZero() {
		due = ms(e.DueAt)
	}
	return r.s.execOne(ctx, "event", `UPDATE events SET status = ?, failure_reason = ?, due_at = ? WHERE bot_id = ? AND id = ?`,
		e.Status, e.FailureReason, due, e.BotID, e.ID)
}

func (r chat) TransitionEvent(ctx context.Context, botID, id, from, to string) error {
	return r.s.execOne(ctx, "event", `UPDATE events SET status = ?, due_at = 0 WHERE bot_id = ? AND id = ? AND status = ?`,
		to, botID, id, from)
}

func (r chat) ListUsers(ctx context.Context, botID string, f store.UserFilter, p store.Page) ([]*model.ChatUser, string, error) {
	col, err := sortColumn(f.SortField)
	if err != nil {
		return nil, "", err
	}
	ls := listSpec{sel: `SELECT ` + userCols + ` FROM chat_users`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: col, idcol: "id", asc: f.Ascending}
	if f.ConversationID != "" {
		ls.where = append(ls.where, "EXISTS (SELECT 1 FROM participants p WHERE p.bot_id = chat_users.bot_id AND p.user_id = chat_users.id AND p.conversation_id = ?)")
		ls.args = append(ls.args, f.ConversationID)
	}
	tagConds(&ls, tagTables.user, f.Tags)
	return list(ctx, r.s, p, ls, "users", scanUser, func(u *model.ChatUser) (int64, string) {
		if col == "updated_at" {
			return ms(u.UpdatedAt), u.ID
		}
		return ms(u.CreatedAt), u.ID
	})
}

func (r chat) ListConversationsBy(ctx context.Context, botID string, f store.ConversationFilter, p store.Page) ([]*model.Conversation, string, error) {
	col, err := sortColumn(f.SortField)
	if err != nil {
		return nil, "", err
	}
	ls := listSpec{sel: `SELECT ` + convCols + ` FROM conversations`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: col, idcol: "id", asc: f.Ascending}
	if f.Integration != "" {
		ls.where = append(ls.where, "integration = ?")
		ls.args = append(ls.args, f.Integration)
	}
	if f.Channel != "" {
		ls.where = append(ls.where, "channel = ?")
		ls.args = append(ls.args, f.Channel)
	}
	for _, id := range f.ParticipantIDs {
		ls.where = append(ls.where, "EXISTS (SELECT 1 FROM participants p WHERE p.bot_id = conversations.bot_id AND p.conversation_id = conversations.id AND p.user_id = ?)")
		ls.args = append(ls.args, id)
	}
	tagConds(&ls, tagTables.conversation, f.Tags)
	return list(ctx, r.s, p, ls, "conversations", scanConv, func(c *model.Conversation) (int64, string) {
		if col == "updated_at" {
			return ms(c.UpdatedAt), c.ID
		}
		return ms(c.CreatedAt), c.ID
	})
}

func (r chat) ListMessagesBy(ctx context.Context, botID string, f store.MessageFilter, p store.Page) ([]*model.Message, string, error) {
	ls := listSpec{sel: `SELECT ` + messageCols + ` FROM messages`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: "created_at", idcol: "id"}
	if f.ConversationID != "" {
		ls.where = append(ls.where, "conversation_id = ?")
		ls.args = append(ls.args, f.ConversationID)
	}
	tagConds(&ls, tagTables.message, f.Tags)
	return list(ctx, r.s, p, ls, "messages", scanMessage, func(m *model.Message) (int64, string) { return ms(m.CreatedAt), m.ID })
}

func (r chat) ListEvents(ctx context.Context, botID string, f store.EventFilter, p store.Page) ([]*model.Event, string, error) {
	ls := listSpec{sel: `SELECT ` + eventCols + ` FROM events`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: "created_at", idcol: "id"}
	for _, c := range []struct{ col, v string }{{"type", f.Type}, {"conversation_id", f.ConversationID},
		{"user_id", f.UserID}, {"message_id", f.MessageID}, {"workflow_id", f.WorkflowID}, {"status", f.Status}} {
		if c.v != "" {
			ls.where = append(ls.where, c.col+" = ?")
			ls.args = append(ls.args, c.v)
		}
	}
	return list(ctx, r.s, p, ls, "events", scanEvent, func(e *model.Event) (int64, string) { return ms(e.CreatedAt), e.ID })
}

// findByTags returns the oldest row of ls with every tag.
func findByTags[T any](ctx context.Context, s *Store, ls listSpec, tt tagTable, tags map[string]string, what string, scan func(scanner) (T, error)) (T, error) {
	tagConds(&ls, tt, tags)
	q := ls.sel + " WHERE " + joinAnd(ls.where) + " ORDER BY created_at, id LIMIT 1"
	return one(ctx, s, what, scan, q, ls.args...)
}

func joinAnd(conds []string) string {
	out := ""
	for i, c := range conds {
		if i > 0 {
			out += " AND "
		}
		out += c
	}
	return out
}

func (r chat) FindUserByTags(ctx context.Context, botID string, tags map[string]string) (*model.ChatUser, error) {
	ls := listSpec{sel: `SELECT ` + userCols + ` FROM chat_users`, where: []string{"bot_id = ?"}, args: []any{botID}}
	return findByTags(ctx, r.s, ls, tagTables.user, tags, "user", scanUser)
}

func (r chat) FindConversationByTags(ctx context.Context, botID, integration, channel string, tags map[string]string) (*model.Conversation, error) {
	ls := listSpec{sel: `SELECT ` + convCols + ` FROM conversations`, where: []string{"bot_id = ?"}, args: []any{botID}}
	if integration != "" {
		ls.where = append(ls.where, "integration = ?")
		ls.args = append(ls.args, integration)
	}
	if channel != "" {
		ls.where = append(ls.where, "channel = ?")
		ls.args = append(ls.args, channel)
	}
	return findByTags(ctx, r.s, ls, tagTables.conversation, tags, "conversation", scanConv)
}

func (r chat) FindMessageByTags(ctx context.Context, botID, conversationID string, tags map[string]string) (*model.Message, error) {
	ls := listSpec{sel: `SELECT ` + messageCols + ` FROM messages`, where: []string{"bot_id = ?", "conversation_id = ?"},
		args: []any{botID, conversationID}}
	return findByTags(ctx, r.s, ls, tagTables.message, tags, "message", scanMessage)
}

func (r chat) CountMessages(ctx context.Context, botID, conversationID string) (int, error) {
	var n int
	err := r.s.queryRow(ctx, `SELECT COUNT(*) FROM messages WHERE bot_id = ? AND conversation_id = ?`, botID, conversationID).Scan(&n)
	return n, r.s.fail(err, "messages")
}

// TagValues pages on the value itself (the token's id part).
func (r chat) TagValues(ctx context.Context, botID, kind, key string, p store.Page) ([]string, string, error) {
	var tt tagTable
	switch kind {
	case store.TagsUser:
		tt = tagTables.user
	case store.TagsConversation:
		tt = tagTables.conversation
	case store.TagsMessage:
		tt = tagTables.message
	default:
		return nil, "", model.Errorf(model.ErrInvalidQuery, "type: must be user, conversation or message")
	}
	after := ""
	if p.Token != "" {
		c, err := decodeToken(p.Token)
		if err != nil {
			return nil, "", err
		}
		after = c.ID
	}
	n := pageSize(p)
	vals, err := upTo(ctx, r.s, "tags", n+1, func(sc scanner) (string, error) {
		var v string
		return v, sc.Scan(&v)
	}, `SELECT DISTINCT value FROM `+tt.name+` WHERE bot_id = ? AND key = ? AND value > ? ORDER BY value`, botID, key, after)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(vals) > n {
		vals = vals[:n]
		next = encodeToken(0, vals[n-1])
	}
	return vals, next, nil
}

func (r chat) DueEvents(ctx context.Context, now time.Time, limit int) ([]*model.Event, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "events", limit, scanEvent, `SELECT `+eventCols+` FROM events
		WHERE due_at > 0 AND due_at <= ? AND status = ? ORDER BY due_at, id`, ms(now), model.EventScheduled)
}
