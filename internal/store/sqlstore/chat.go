package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

type chat struct{ s *Store }

// ---- users

const userCols = `bot_id, id, name, picture_url, profile, tags, created_at, updated_at`

func scanUser(r scanner) (*model.ChatUser, error) {
	var u model.ChatUser
	var tags string
	var c, up int64
	if err := r.Scan(&u.BotID, &u.ID, &u.Name, &u.PictureURL, &u.Profile, &tags, &c, &up); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt = fromMS(c), fromMS(up)
	return &u, tagsFrom(tags, &u.Tags)
}

// CreateUser stores u and the user_tags rows mirroring its tags.
func (r chat) CreateUser(ctx context.Context, u *model.ChatUser) error {
	newID(&u.ID)
	stamp(&u.CreatedAt, model.Now())
	stamp(&u.UpdatedAt, u.CreatedAt)
	tags, err := tagsText(u.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		_, err := s.exec(ctx, `INSERT INTO chat_users (`+userCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			u.BotID, u.ID, u.Name, u.PictureURL, u.Profile, tags, ms(u.CreatedAt), ms(u.UpdatedAt))
		if err != nil {
			return s.fail(err, "user")
		}
		return putRowTags(ctx, s, tagTables.user, u.BotID, u.ID, u.Tags, false)
	})
}

func (r chat) GetUser(ctx context.Context, botID, id string) (*model.ChatUser, error) {
	return one(ctx, r.s, "user", scanUser, `SELECT `+userCols+` FROM chat_users WHERE bot_id = ? AND id = ?`, botID, id)
}

// UpdateUser writes every field of u, tags included.
func (r chat) UpdateUser(ctx context.Context, u *model.ChatUser) error {
	stamp(&u.UpdatedAt, model.Now())
	tags, err := tagsText(u.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "user", `UPDATE chat_users SET name = ?, picture_url = ?, profile = ?, tags = ?, updated_at = ? WHERE bot_id = ? AND id = ?`,
			u.Name, u.PictureURL, u.Profile, tags, ms(u.UpdatedAt), u.BotID, u.ID); err != nil {
			return err
		}
		return putRowTags(ctx, s, tagTables.user, u.BotID, u.ID, u.Tags, true)
	})
}

// DeleteUser removes the user and (by cascade) their participations.
func (r chat) DeleteUser(ctx context.Context, botID, id string) error {
	return r.s.execOne(ctx, "user", `DELETE FROM chat_users WHERE bot_id = ? AND id = ?`, botID, id)
}

// ---- conversations

const convCols = `bot_id, id, owner_id, integration, channel, tags, created_at, updated_at`

func scanConv(r scanner) (*model.Conversation, error) {
	var c model.Conversation
	var tags string
	var cr, up int64
	if err := r.Scan(&c.BotID, &c.ID, &c.OwnerID, &c.Integration, &c.Channel, &tags, &cr, &up); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = fromMS(cr), fromMS(up)
	return &c, tagsFrom(tags, &c.Tags)
}

// CreateConversation stores c; an empty Integration is "chat" and an
// empty Channel "channel".
func (r chat) CreateConversation(ctx context.Context, c *model.Conversation) error {
	newID(&c.ID)
	stamp(&c.CreatedAt, model.Now())
	stamp(&c.UpdatedAt, c.CreatedAt)
	if c.Integration == "" {
		c.Integration = model.IntegrationChat
	}
	if c.Channel == "" {
		c.Channel = "channel"
	}
	tags, err := tagsText(c.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		_, err := s.exec(ctx, `INSERT INTO conversations (`+convCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.BotID, c.ID, c.OwnerID, c.Integration, c.Channel, tags, ms(c.CreatedAt), ms(c.UpdatedAt))
		if err != nil {
			return s.fail(err, "conversation")
		}
		return putRowTags(ctx, s, tagTables.conversation, c.BotID, c.ID, c.Tags, false)
	})
}

func (r chat) GetConversation(ctx context.Context, botID, id string) (*model.Conversation, error) {
	return one(ctx, r.s, "conversation", scanConv, `SELECT `+convCols+` FROM conversations WHERE bot_id = ? AND id = ?`, botID, id)
}

// DeleteConversation removes the conversation and, by cascade, its events,
// participants and turns; then its messages and signals, which have no
// key to it on PostgreSQL (migration 0016). The conversation's row goes
// first: its delete waits for the transactions writing to it (they lock
// it), and the deletes after it see what those committed, so no message
// or signal outlives it (storetest's testDeleteWhileWriting).
func (r chat) DeleteConversation(ctx context.Context, botID, id string) error {
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "conversation", `DELETE FROM conversations WHERE bot_id = ? AND id = ?`, botID, id); err != nil {
			return err
		}
		for _, table := range unkeyedConversationRows {
			if _, err := s.exec(ctx, `DELETE FROM `+table+` WHERE bot_id = ? AND conversation_id = ?`, botID, id); err != nil {
				return s.fail(err, "conversation")
			}
		}
		return nil
	})
}

// unkeyedConversationRows are the tables of a conversation's rows with no
// foreign key to it on PostgreSQL (migration 0016).
var unkeyedConversationRows = []string{"messages", "signals"}

// insertMessage inserts a message (its messageCols, args) only if its
// conversation exists: NotFound otherwise (execRequired). For a message
// with no key to its conversation in the schema (Dialect.UnkeyedChat)
// written by a transaction that does not number a signal of the
// conversation (store.Signalled), which would check it instead: 0.87x
// PostgreSQL's CPU per chat message without this check.
func insertMessage(ctx context.Context, s *Store, botID, conversationID string, args []any) error {
	return execRequired(ctx, s, "message", model.NotFound("conversation"),
		`INSERT INTO messages (`+messageCols+`) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
		WHERE EXISTS (SELECT 1 FROM conversations WHERE bot_id = ? AND id = ?)`, append(args, botID, conversationID)...)
}

func (r chat) ListConversations(ctx context.Context, botID, ownerID string, p store.Page) ([]*model.Conversation, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + convCols + ` FROM conversations`,
		where: []string{"bot_id = ?", "owner_id = ?"},
		args:  []any{botID, ownerID},
		tcol:  "created_at", idcol: "id",
	}
	return list(ctx, r.s, p, ls, "conversations", scanConv, convKey)
}

func (r chat) ListBotConversations(ctx context.Context, botID, search string, p store.Page) ([]*model.Conversation, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + convCols + ` FROM conversations c`,
		where: []string{"c.bot_id = ?"},
		args:  []any{botID},
		tcol:  "c.created_at", idcol: "c.id",
	}
	if search != "" {
		// A message's text is its payload's "text" (text, choice and
		// dropdown messages); users match by id or name.
		text := `json_extract(m.payload, '$.text')`
		if r.s.e.d.Name == "postgres" {
			text = `(CAST(m.payload AS jsonb) ->> 'text')`
		}
		like := "%" + likeEscaper.Replace(strings.ToLower(search)) + "%"
		ls.where = append(ls.where, `(LOWER(c.id) LIKE ? ESCAPE '\' OR LOWER(c.owner_id) LIKE ? ESCAPE '\'
			OR EXISTS (SELECT 1 FROM chat_users u WHERE u.bot_id = c.bot_id
				AND (u.id = c.owner_id OR u.id IN (SELECT pa.user_id FROM participants pa WHERE pa.bot_id = c.bot_id AND pa.conversation_id = c.id))
				AND (LOWER(u.id) LIKE ? ESCAPE '\' OR LOWER(u.name) LIKE ? ESCAPE '\'))
			OR EXISTS (SELECT 1 FROM messages m WHERE m.bot_id = c.bot_id AND m.conversation_id = c.id
				AND LOWER(`+text+`) LIKE ? ESCAPE '\'))`)
		ls.args = append(ls.args, like, like, like, like, like)
	}
	return list(ctx, r.s, p, ls, "conversations", scanConv, convKey)
}

func convKey(c *model.Conversation) (int64, string) { return ms(c.CreatedAt), c.ID }

// ---- participants

func (r chat) AddParticipant(ctx context.Context, botID, conversationID, userID string, at time.Time) error {
	stamp(&at, model.Now())
	_, err := r.s.exec(ctx, `INSERT INTO participants (bot_id, conversation_id, user_id, added_at) VALUES (?, ?, ?, ?)`,
		botID, conversationID, userID, ms(at))
	return r.s.fail(err, "participant")
}

func (r chat) RemoveParticipant(ctx context.Context, botID, conversationID, userID string) error {
	return r.s.execOne(ctx, "participant", `DELETE FROM participants WHERE bot_id = ? AND conversation_id = ? AND user_id = ?`,
		botID, conversationID, userID)
}

func (r chat) IsParticipant(ctx context.Context, botID, conversationID, userID string) (bool, error) {
	var n int
	err := r.s.queryRow(ctx, `SELECT COUNT(*) FROM participants WHERE bot_id = ? AND conversation_id = ? AND user_id = ?`,
		botID, conversationID, userID).Scan(&n)
	return n > 0, r.s.fail(err, "participant")
}

func (r chat) RequireParticipant(ctx context.Context, botID, conversationID, userID string) error {
	return r.s.require(ctx, store.ErrNotParticipant, "participant",
		`EXISTS (SELECT 1 FROM participants WHERE bot_id = ? AND conversation_id = ? AND user_id = ?)`,
		botID, conversationID, userID)
}

// participant carries the keyset value (added_at) next to the user.
type participant struct {
	u     *model.ChatUser
	added int64
}

func (r chat) ListParticipants(ctx context.Context, botID, conversationID string, p store.Page) ([]*model.ChatUser, string, error) {
	ls := listSpec{
		sel: `SELECT u.bot_id, u.id, u.name, u.picture_url, u.profile, u.tags, u.created_at, u.updated_at, p.added_at
			FROM participants p JOIN chat_users u ON u.bot_id = p.bot_id AND u.id = p.user_id`,
		where: []string{"p.bot_id = ?", "p.conversation_id = ?"},
		args:  []any{botID, conversationID},
		tcol:  "p.added_at", idcol: "p.user_id", asc: true,
	}
	ps, next, err := list(ctx, r.s, p, ls, "participants", func(sc scanner) (participant, error) {
		var u model.ChatUser
		var tags string
		var c, up, added int64
		if err := sc.Scan(&u.BotID, &u.ID, &u.Name, &u.PictureURL, &u.Profile, &tags, &c, &up, &added); err != nil {
			return participant{}, err
		}
		u.CreatedAt, u.UpdatedAt = fromMS(c), fromMS(up)
		return participant{&u, added}, tagsFrom(tags, &u.Tags)
	}, func(p participant) (int64, string) { return p.added, p.u.ID })
	if err != nil {
		return nil, "", err
	}
	out := make([]*model.ChatUser, len(ps))
	for i, p := range ps {
		out[i] = p.u
	}
	return out, next, nil
}

// ---- messages

const messageCols = `bot_id, id, conversation_id, user_id, payload, metadata, tags, direction, created_at, updated_at`

func scanMessage(r scanner) (*model.Message, error) {
	var m model.Message
	var payload, tags string
	var meta sql.NullString
	var c, u int64
	if err := r.Scan(&m.BotID, &m.ID, &m.ConversationID, &m.UserID, &payload, &meta, &tags, &m.Direction, &c, &u); err != nil {
		return nil, err
	}
	m.CreatedAt = fromMS(c)
	if u != 0 {
		m.UpdatedAt = fromMS(u)
	}
	m.Payload = json.RawMessage(payload)
	if meta.Valid {
		m.Metadata = json.RawMessage(meta.String)
	}
	return &m, fromJSON(tags, &m.Tags)
}

func (r chat) CreateMessage(ctx context.Context, m *model.Message) error {
	newID(&m.ID)
	stamp(&m.CreatedAt, model.Now())
	tags, err := jsonText(m.Tags)
	if err != nil {
		return err
	}
	var updated int64
	if !m.UpdatedAt.IsZero() {
		updated = ms(m.UpdatedAt)
	}
	insert := func(s *Store) error {
		args := []any{m.BotID, m.ID, m.ConversationID, m.UserID, rawText(m.Payload), nullRaw(m.Metadata), tags, m.Direction, ms(m.CreatedAt), updated}
		if !s.e.d.UnkeyedChat || store.Signalled(ctx, m.BotID, m.ConversationID) { // the key, or the signal, checks the conversation
			_, err := s.exec(ctx, `INSERT INTO messages (`+messageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
			return s.fail(err, "message")
		}
		return insertMessage(ctx, s, m.BotID, m.ConversationID, args)
	}
	if len(m.Tags) == 0 { // the Chat API's hot path: one statement
		return insert(r.s)
	}
	return r.s.tx(ctx, func(s *Store) error {
		if err := insert(s); err != nil {
			return err
		}
		return putRowTags(ctx, s, tagTables.message, m.BotID, m.ID, m.Tags, false)
	})
}

func (r chat) GetMessage(ctx context.Context, botID, id string) (*model.Message, error) {
	return one(ctx, r.s, "message", scanMessage, `SELECT `+messageCols+` FROM messages WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r chat) DeleteMessage(ctx context.Context, botID, id string) error {
	return r.s.execOne(ctx, "message", `DELETE FROM messages WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r chat) ListMessages(ctx context.Context, botID, conversationID string, p store.Page) ([]*model.Message, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + messageCols + ` FROM messages`,
		where: []string{"bot_id = ?", "conversation_id = ?"},
		args:  []any{botID, conversationID},
		tcol:  "created_at", idcol: "id",
	}
	return list(ctx, r.s, p, ls, "messages", scanMessage, func(m *model.Message) (int64, string) { return ms(m.CreatedAt), m.ID })
}

// ---- events

const eventCols = `bot_id, id, conversation_id, user_id, type, payload, created_at, message_id, workflow_id, status, failure_reason, due_at`

func scanEvent(sc scanner) (*model.Event, error) {
	var e model.Event
	var conv sql.NullString
	var payload string
	var c, due int64
	if err := sc.Scan(&e.BotID, &e.ID, &conv, &e.UserID, &e.Type, &payload, &c, &e.MessageID, &e.WorkflowID, &e.Status, &e.FailureReason, &due); err != nil {
		return nil, err
	}
	e.ConversationID, e.Payload, e.CreatedAt = conv.String, json.RawMessage(payload), fromMS(c)
	if due != 0 {
		e.DueAt = fromMS(due)
	}
	return &e, nil
}

// CreateEvent stores e; an empty Status is "processed".
func (r chat) CreateEvent(ctx context.Context, e *model.Event) error {
	newID(&e.ID)
	stamp(&e.CreatedAt, model.Now())
	if e.Status == "" {
		e.Status = model.EventProcessed
	}
	var due int64
	if !e.DueAt.IsZero() {
		due = ms(e.DueAt)
	}
	_, err := r.s.exec(ctx, `INSERT INTO events (`+eventCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.BotID, e.ID, nullStr(e.ConversationID), e.UserID, e.Type, rawText(e.Payload), ms(e.CreatedAt),
		e.MessageID, e.WorkflowID, e.Status, e.FailureReason, due)
	return r.s.fail(err, "event")
}

func (r chat) GetEvent(ctx context.Context, botID, id string) (*model.Event, error) {
	return one(ctx, r.s, "event", scanEvent, `SELECT `+eventCols+` FROM events WHERE bot_id = ? AND id = ?`, botID, id)
}

// ---- states

type states struct{ s *Store }

func (r states) Get(ctx context.Context, botID, scope, ownerID string) (json.RawMessage, error) {
	var data string
	err := r.s.queryRow(ctx, `SELECT data FROM states WHERE bot_id = ? AND scope = ? AND owner_id = ?`, botID, scope, ownerID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, r.s.fail(err, "state")
	}
	return json.RawMessage(data), nil
}

func (r states) Put(ctx context.Context, botID, scope, ownerID string, data json.RawMessage) error {
	_, err := r.s.exec(ctx, `INSERT INTO states (bot_id, scope, owner_id, data, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (bot_id, scope, owner_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
		botID, scope, ownerID, rawText(data), ms(model.Now()))
	return r.s.fail(err, "state")
}

// LockShared hashes each key to 64 bits and locks the hashes in ascending
// order, each once (Dialect.KeyLocks): one order whatever the keys', so
// that two transactions never each hold a lock the other waits for. Two
// keys with the same hash share a lock, which costs a wait, never a
// deadlock.
func (r states) LockShared(ctx context.Context, keys []store.StateKey) error {
	if r.s.e.d.KeyLocks == "" || len(keys) == 0 {
		return nil
	}
	ids := make([]int64, len(keys))
	for i, k := range keys {
		h := fnv.New64a()
		for _, part := range []string{k.BotID, k.Scope, k.OwnerID} {
			h.Write([]byte(part))
			h.Write([]byte{0})
		}
		ids[i] = int64(h.Sum64())
	}
	slices.Sort(ids)
	_, err := r.s.exec(ctx, r.s.e.d.KeyLocks, slices.Compact(ids))
	return r.s.fail(err, "state")
}
