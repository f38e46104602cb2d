package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// GetTurn reads a turn's user, conversation and three states in one
// query instead of three (a read is a round trip on PostgreSQL and a read
// transaction on SQLite): rows of one shape, told apart by their first
// column.
func (r states) GetTurn(ctx context.Context, botID, userID, conversationID string) (store.TurnStart, error) {
	var out store.TurnStart
	rows, err := r.s.query(ctx, turnStartQuery,
		botID, userID, botID, conversationID,
		botID, store.ScopeUser, userID, store.ScopeConversation, conversationID, store.ScopeBot, botID)
	if err != nil {
		return out, r.s.fail(err, "turn")
	}
	defer rows.Close()
	for rows.Next() {
		var kind, bot, id, a, b, c, tags string
		var cr, up int64
		if err := rows.Scan(&kind, &bot, &id, &a, &b, &c, &tags, &cr, &up); err != nil {
			return out, r.s.fail(err, "turn")
		}
		switch kind {
		case "u":
			if out.User, err = turnUser(bot, id, a, b, c, tags, cr, up); err != nil {
				return out, err
			}
		case "c":
			if out.Conversation, err = turnConversation(bot, id, a, b, c, tags, cr, up); err != nil {
				return out, err
			}
		case "s":
			switch data := json.RawMessage(b); a {
			case store.ScopeUser:
				out.UserState = data
			case store.ScopeConversation:
				out.ConvState = data
			case store.ScopeBot:
				out.BotState = data
			}
		}
	}
	return out, r.s.fail(rows.Err(), "turn")
}

// GetIdleTurn is GetTurn, with, in the same read, whether the
// conversation is idle (no pending turn, no handoff) and its last turn's
// number: one row (a missing conversation, none: not idle), with the
// states and the checks as subqueries, where GetTurn's rows of one shape
// would take four (the per-row cost of a read adds up on the hot path
// that runs it for every message, Dispatcher.Fold).
func (r states) GetIdleTurn(ctx context.Context, botID, userID, conversationID string) (store.IdleTurn, error) {
	var out store.IdleTurn
	var st turnStartCols
	var seq int64
	var pending, handoff bool
	mark := r.s.e.changes.markFor(r.s)
	err := r.s.queryRow(ctx, `SELECT `+convStartSelect+`, c.turn_seq,
		EXISTS (SELECT 1 FROM turns WHERE bot_id = c.bot_id AND conversation_id = c.id),
		EXISTS (SELECT 1 FROM handoffs WHERE bot_id = c.bot_id AND conversation_id = c.id)
		`+convStartFrom, convStartArgs(botID, userID, conversationID)...).
		Scan(append(st.dest(), &seq, &pending, &handoff)...)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, r.s.fail(err, "turn")
	}
	start, err := st.start(botID)
	if err != nil {
		return out, err
	}
	if !handoff { // a start in handoff does not hold (RequireTurnStart)
		marked(mark, botID, userID, conversationID, start)
	}
	out.Start, out.TurnSeq, out.Idle, out.Handoff = *start, seq, !pending && !handoff, handoff
	return out, nil
}

const turnStartQuery = `SELECT 'u', bot_id, id, name, picture_url, profile, tags, created_at, updated_at
		FROM chat_users WHERE bot_id = ? AND id = ?
	UNION ALL
	SELECT 'c', bot_id, id, owner_id, integration, channel, tags, created_at, updated_at
		FROM conversations WHERE bot_id = ? AND id = ?
	UNION ALL
	SELECT 's', bot_id, owner_id, scope, data, '', '', 0, 0
		FROM states WHERE bot_id = ? AND (
		(scope = ? AND owner_id = ?) OR (scope = ? AND owner_id = ?) OR (scope = ? AND owner_id = ?))`

// The columns and joins that read a turn's start along with the turn
// (PendingTurnInputs): its user, its conversation and the three states,
// each possibly missing. The states are scalar subqueries, not joins:
// PostgreSQL plans a statement's joins together, and with three more
// tables that plan took 2.8 ms, several times the query's run. The
// subqueries take the three scopes as parameters, in the order user,
// conversation, bot, ahead of the statement's other parameters.
const (
	turnStartSelect = `u.id, u.name, u.picture_url, u.profile, u.tags, u.created_at, u.updated_at,
		c.id, c.owner_id, c.integration, c.channel, c.tags, c.created_at, c.updated_at,
		(SELECT data FROM states WHERE bot_id = t.bot_id AND scope = ? AND owner_id = t.user_id),
		(SELECT data FROM states WHERE bot_id = t.bot_id AND scope = ? AND owner_id = t.conversation_id),
		(SELECT data FROM states WHERE bot_id = t.bot_id AND scope = ? AND owner_id = t.bot_id)`
	turnStartJoins = `LEFT JOIN chat_users u ON u.bot_id = t.bot_id AND u.id = t.user_id
		LEFT JOIN conversations c ON c.bot_id = t.bot_id AND c.id = t.conversation_id`
)

// The same start read from the conversation's row (c) and a given user
// (GetIdleTurn, holdsStart): turnStartSelect's columns, with the arguments
// convStartArgs gives.
const (
	convStartSelect = `u.id, u.name, u.picture_url, u.profile, u.tags, u.created_at, u.updated_at,
		c.id, c.owner_id, c.integration, c.channel, c.tags, c.created_at, c.updated_at,
		(SELECT data FROM states WHERE bot_id = c.bot_id AND scope = ? AND owner_id = ?),
		(SELECT data FROM states WHERE bot_id = c.bot_id AND scope = ? AND owner_id = c.id),
		(SELECT data FROM states WHERE bot_id = c.bot_id AND scope = ? AND owner_id = c.bot_id)`
	convStartFrom = `FROM conversations c LEFT JOIN chat_users u ON u.bot_id = c.bot_id AND u.id = ?
		WHERE c.bot_id = ? AND c.id = ?`
)

func convStartArgs(botID, userID, conversationID string) []any {
	return []any{store.ScopeUser, userID, store.ScopeConversation, store.ScopeBot, userID, botID, conversationID}
}

// turnStartCols scans turnStartSelect and convStartSelect.
type turnStartCols struct {
	uID, uName, uPicture, uProfile, uTags      sql.NullString
	uCreated, uUpdated                         sql.NullInt64
	cID, cOwner, cIntegration, cChannel, cTags sql.NullString
	cCreated, cUpdated                         sql.NullInt64
	userState, convState, botState             sql.NullString
}

func (s *turnStartCols) dest() []any {
	return []any{&s.uID, &s.uName, &s.uPicture, &s.uProfile, &s.uTags, &s.uCreated, &s.uUpdated,
		&s.cID, &s.cOwner, &s.cIntegration, &s.cChannel, &s.cTags, &s.cCreated, &s.cUpdated,
		&s.userState, &s.convState, &s.botState}
}

func (s *turnStartCols) start(botID string) (*store.TurnStart, error) {
	var out store.TurnStart
	var err error
	if s.uID.Valid {
		if out.User, err = turnUser(botID, s.uID.String, s.uName.String, s.uPicture.String, s.uProfile.String,
			s.uTags.String, s.uCreated.Int64, s.uUpdated.Int64); err != nil {
			return nil, err
		}
	}
	if s.cID.Valid {
		if out.Conversation, err = turnConversation(botID, s.cID.String, s.cOwner.String, s.cIntegration.String,
			s.cChannel.String, s.cTags.String, s.cCreated.Int64, s.cUpdated.Int64); err != nil {
			return nil, err
		}
	}
	for _, x := range []struct {
		v   sql.NullString
		dst *json.RawMessage
	}{{s.userState, &out.UserState}, {s.convState, &out.ConvState}, {s.botState, &out.BotState}} {
		if x.v.Valid {
			*x.dst = json.RawMessage(x.v.String)
		}
	}
	return &out, nil
}

// turnUser and turnConversation build a turn's user and conversation from
// their columns (scanUser's and scanConv's, read by the queries above).
func turnUser(botID, id, name, picture, profile, tags string, created, updated int64) (*model.ChatUser, error) {
	u := &model.ChatUser{BotID: botID, ID: id, Name: name, PictureURL: picture, Profile: profile,
		CreatedAt: fromMS(created), UpdatedAt: fromMS(updated)}
	return u, tagsFrom(tags, &u.Tags)
}

func turnConversation(botID, id, owner, integration, channel, tags string, created, updated int64) (*model.Conversation, error) {
	c := &model.Conversation{BotID: botID, ID: id, OwnerID: owner, Integration: integration, Channel: channel,
		CreatedAt: fromMS(created), UpdatedAt: fromMS(updated)}
	return c, tagsFrom(tags, &c.Tags)
}

// RequireTurnStart fails with store.ErrStartChanged unless the store still
// holds start and no handoff: a read compared in Go, or, pipelined, a
// statement that fails in the server (a division by zero) unless it finds
// the row with States.GetTurn's columns each as start has them (tags as
// written, an empty set as any empty encoding), with no answer needed
// before the COMMIT.
func (r states) RequireTurnStart(ctx context.Context, botID, userID, conversationID string, start store.TurnStart) error {
	if r.s.e.changes.holdsUnread(botID, userID, conversationID, &start) {
		return nil
	}
	if !r.s.deferRows(ctx) {
		// A read compared here, as the fold's check was before (SQLite,
		// on the writer's warm connection): the statement below measured
		// no better there (parley-bench, side by side).
		return r.holdsStart(ctx, botID, userID, conversationID, start)
	}
	// The statement's text depends only on which of the start's parts are
	// missing or empty (its shape), so it is built once per shape: built
	// at every call it was a tenth of the bytes the server allocated in
	// PostgreSQL's closed loop.
	// The write's RequireLastTurn, offered (store.LastTurn), is one more
	// condition on the conversation's row read here anyway.
	last := store.LastTurnOf(ctx)
	if last != nil && last.Checked {
		last = nil
	}
	shape := startShape(start, last != nil)
	q := startChecks[shape].Load()
	b := startCheck{text: q == nil, args: make([]any, 0, 21)}
	b.add(`SELECT 1 FROM conversations c LEFT JOIN chat_users u ON u.bot_id = c.bot_id AND u.id = ?
		WHERE c.bot_id = ? AND c.id = ?
		AND NOT EXISTS (SELECT 1 FROM handoffs WHERE bot_id = c.bot_id AND conversation_id = c.id)`, userID, botID, conversationID)
	if last != nil {
		b.add(` AND c.turn_seq = ?`, last.Seq)
	}
	// tags adds a tags column's condition: empty (any empty encoding), or
	// as tagsText writes m.
	tags := func(empty, equal string, m map[string]string) error {
		if len(m) == 0 {
			b.add(empty)
			return nil
		}
		text, err := tagsText(m)
		b.add(equal, text)
		return err
	}
	if u := start.User; u == nil {
		b.add(` AND u.id IS NULL`)
	} else {
		b.add(` AND u.id IS NOT NULL AND u.name = ? AND u.picture_url = ? AND u.profile = ? AND u.created_at = ? AND u.updated_at = ?`,
			u.Name, u.PictureURL, u.Profile, ms(u.CreatedAt), ms(u.UpdatedAt))
		if err := tags(` AND u.tags IN ('', '{}', 'null')`, ` AND u.tags = ?`, u.Tags); err != nil {
			return err
		}
	}
	if c := start.Conversation; c != nil { // else the conversation is gone, and so is this row
		b.add(` AND c.owner_id = ? AND c.integration = ? AND c.channel = ? AND c.created_at = ? AND c.updated_at = ?`,
			c.OwnerID, c.Integration, c.Channel, ms(c.CreatedAt), ms(c.UpdatedAt))
		if err := tags(` AND c.tags IN ('', '{}', 'null')`, ` AND c.tags = ?`, c.Tags); err != nil {
			return err
		}
	}
	for _, st := range [...]struct {
		scope, owner string
		data         json.RawMessage
	}{{store.ScopeUser, userID, start.UserState}, {store.ScopeConversation, conversationID, start.ConvState}, {store.ScopeBot, botID, start.BotState}} {
		const state = `(SELECT data FROM states WHERE bot_id = c.bot_id AND scope = ? AND owner_id = ?)`
		if st.data == nil {
			b.add(` AND `+state+` IS NULL`, st.scope, st.owner)
		} else {
			b.add(` AND `+state+` = ?`, st.scope, st.owner, string(st.data))
		}
	}
	if q == nil {
		text := `SELECT 1 / ` + asInt(`EXISTS (`+b.q.String()+`)`)
		startChecks[shape].Store(&text)
		q = &text
	}
	_, err := r.s.exec(store.WithRequiredRow(ctx, store.ErrStartChanged), *q, b.args...)
	if last != nil && err == nil {
		// Queued with the condition: it fails the transaction in the
		// engine unless the turn got its number. (An error here leaves
		// the write to check the number itself.)
		last.Checked = true
	}
	return r.s.fail(err, "turn")
}

// startShape tells which of a start's parts are missing or empty: the
// user, its tags, the conversation, its tags, the three states; and
// whether the check has the conversation's last turn number too.
func startShape(st store.TurnStart, lastTurn bool) uint8 {
	var shape uint8
	set := func(bit int, missing bool) {
		if missing {
			shape |= 1 << bit
		}
	}
	set(0, st.User == nil)
	set(1, st.User != nil && len(st.User.Tags) == 0)
	set(2, st.Conversation == nil)
	set(3, st.Conversation != nil && len(st.Conversation.Tags) == 0)
	set(4, st.UserState == nil)
	set(5, st.ConvState == nil)
	set(6, st.BotState == nil)
	set(7, lastTurn)
	return shape
}

// startChecks are RequireTurnStart's pipelined statements, by shape: which
// of the user, its tags, the conversation, its tags and the three states
// are missing or empty, and whether the last turn is checked too.
var startChecks [1 << 8]atomic.Pointer[string]

// startCheck builds RequireTurnStart's statement: its text, and its
// arguments in the order of their placeholders.
type startCheck struct {
	text bool // build the text too: its shape's is not cached yet
	q    strings.Builder
	args []any
}

func (b *startCheck) add(text string, args ...any) {
	if b.text {
		b.q.WriteString(text)
	}
	b.args = append(b.args, args...)
}

// holdsStart is RequireTurnStart answered before the COMMIT: the columns
// GetTurn reads, in one row, compared as stored with start's, without
// building a start of them (GetIdleTurn's read and a comparison of its
// objects took 8.5 % of the server's CPU in SQLite's closed loop, on the
// group commit's one writer).
func (r states) holdsStart(ctx context.Context, botID, userID, conversationID string, start store.TurnStart) error {
	var st turnStartCols
	var handoff bool
	err := r.s.queryRow(ctx, `SELECT `+convStartSelect+`,
		EXISTS (SELECT 1 FROM handoffs WHERE bot_id = c.bot_id AND conversation_id = c.id)
		`+convStartFrom, convStartArgs(botID, userID, conversationID)...).
		Scan(append(st.dest(), &handoff)...)
	if errors.Is(err, sql.ErrNoRows) { // the conversation is gone: so must it be in start
		if start.Conversation == nil && start.User == nil && start.UserState == nil && start.ConvState == nil && start.BotState == nil {
			return nil
		}
		return store.ErrStartChanged
	}
	if err != nil {
		return r.s.fail(err, "turn")
	}
	u, c := start.User, start.Conversation
	holds := !handoff && c != nil &&
		sameState(st.userState, start.UserState) && sameState(st.convState, start.ConvState) && sameState(st.botState, start.BotState) &&
		c.OwnerID == st.cOwner.String && c.Integration == st.cIntegration.String && c.Channel == st.cChannel.String &&
		ms(c.CreatedAt) == st.cCreated.Int64 && ms(c.UpdatedAt) == st.cUpdated.Int64 && sameTags(st.cTags.String, c.Tags) &&
		(u == nil) == !st.uID.Valid
	if holds && u != nil {
		holds = u.Name == st.uName.String && u.PictureURL == st.uPicture.String && u.Profile == st.uProfile.String &&
			ms(u.CreatedAt) == st.uCreated.Int64 && ms(u.UpdatedAt) == st.uUpdated.Int64 && sameTags(st.uTags.String, u.Tags)
	}
	if !holds {
		return store.ErrStartChanged
	}
	return nil
}

// sameState tells whether a state's column holds data (NULL: no state).
func sameState(col sql.NullString, data json.RawMessage) bool {
	return col.Valid == (data != nil) && col.String == string(data)
}

// sameTags tells whether a tags column holds m, as tagsFrom reads it.
func sameTags(text string, m map[string]string) bool {
	if text == "{}" || text == "" || text == "null" { // the usual case, without a decode
		return len(m) == 0
	}
	var stored map[string]string
	return tagsFrom(text, &stored) == nil && maps.Equal(stored, m)
}
