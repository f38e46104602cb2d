package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// GetTurn reads a turn's user, conversation and three states in one
// query instead of three (a read is a round trip on PostgreSQL and a read
// transaction on SQLite): rows of one shape, told apart by their first
// column.
func (r states) GetTurn(ctx context.Context, botID, userID, conversationID string) (store.TurnStart, error) {
	var out store.TurnStart
	rows, err := r.s.query(ctx, `SELECT 'u', bot_id, id, name, picture_url, profile, tags, created_at, updated_at
			FROM chat_users WHERE bot_id = ? AND id = ?
		UNION ALL
		SELECT 'c', bot_id, id, owner_id, integration, channel, tags, created_at, updated_at
			FROM conversations WHERE bot_id = ? AND id = ?
		UNION ALL
		SELECT 's', bot_id, owner_id, scope, data, '', '', 0, 0
			FROM states WHERE bot_id = ? AND (
			(scope = ? AND owner_id = ?) OR (scope = ? AND owner_id = ?) OR (scope = ? AND owner_id = ?))`,
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
			u := &model.ChatUser{BotID: bot, ID: id, Name: a, PictureURL: b, Profile: c,
				CreatedAt: fromMS(cr), UpdatedAt: fromMS(up)}
			if err := tagsFrom(tags, &u.Tags); err != nil {
				return out, err
			}
			out.User = u
		case "c":
			cv := &model.Conversation{BotID: bot, ID: id, OwnerID: a, Integration: b, Channel: c,
				CreatedAt: fromMS(cr), UpdatedAt: fromMS(up)}
			if err := tagsFrom(tags, &cv.Tags); err != nil {
				return out, err
			}
			out.Conversation = cv
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

// The columns and joins that read a turn's start along with the turn
// (PendingTurnInputs): its user, its conversation and the three states,
// each possibly missing. The joins take the three scopes as parameters,
// in the order user, conversation, bot.
const (
	turnStartSelect = `u.id, u.name, u.picture_url, u.profile, u.tags, u.created_at, u.updated_at,
		c.id, c.owner_id, c.integration, c.channel, c.tags, c.created_at, c.updated_at,
		su.data, sc.data, sb.data`
	turnStartJoins = `LEFT JOIN chat_users u ON u.bot_id = t.bot_id AND u.id = t.user_id
		LEFT JOIN conversations c ON c.bot_id = t.bot_id AND c.id = t.conversation_id
		LEFT JOIN states su ON su.bot_id = t.bot_id AND su.scope = ? AND su.owner_id = t.user_id
		LEFT JOIN states sc ON sc.bot_id = t.bot_id AND sc.scope = ? AND sc.owner_id = t.conversation_id
		LEFT JOIN states sb ON sb.bot_id = t.bot_id AND sb.scope = ? AND sb.owner_id = t.bot_id`
)

// turnStartCols scans turnStartSelect.
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
	if s.uID.Valid {
		u := &model.ChatUser{BotID: botID, ID: s.uID.String, Name: s.uName.String, PictureURL: s.uPicture.String,
			Profile: s.uProfile.String, CreatedAt: fromMS(s.uCreated.Int64), UpdatedAt: fromMS(s.uUpdated.Int64)}
		if err := tagsFrom(s.uTags.String, &u.Tags); err != nil {
			return nil, err
		}
		out.User = u
	}
	if s.cID.Valid {
		c := &model.Conversation{BotID: botID, ID: s.cID.String, OwnerID: s.cOwner.String, Integration: s.cIntegration.String,
			Channel: s.cChannel.String, CreatedAt: fromMS(s.cCreated.Int64), UpdatedAt: fromMS(s.cUpdated.Int64)}
		if err := tagsFrom(s.cTags.String, &c.Tags); err != nil {
			return nil, err
		}
		out.Conversation = c
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
