package sqlstore

import (
	"context"
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
