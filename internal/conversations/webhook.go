package conversations

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Webhooks implements the built-in webhook integration: a request to
// {public-url}/{webhookId} of an enabled webhook integration becomes a
// model.WebhookEventType event of the bot, stored with the bot's turn in
// one write of the store's Committer before the caller is answered.
//
// The event's conversation: the request body's conversationId (a
// conversation of the bot, any integration's: a Chat API user's, a
// Telegram chat, ...), with its userId or else the conversation's owner;
// without one, the bot's webhook conversation (one per webhook
// integration, integration and channel "webhook", no participants),
// which keeps the bot's webhook events in order.
type Webhooks struct {
	store  store.Store
	commit store.Committer
}

// NewWebhooks returns the webhook integration's use case.
func NewWebhooks(st store.Store, commit store.Committer) *Webhooks {
	return &Webhooks{store: st, commit: commit}
}

// WebhookRequest is what the webhook integration reads of a request.
type WebhookRequest struct {
	Method string
	// Path is the part of the URL path after the webhook id ("" for none).
	Path string
	// Query holds one string per parameter, or a list for repeated ones.
	Query map[string]any
	// Headers are the request's headers without credentials (lowercase
	// names; a string, or a list for repeated ones).
	Headers map[string]any
	// Body is the request body: JSON, or empty (then {}).
	Body []byte
	// Secret is the x-bp-secret header ("" when absent).
	Secret string
}

// webhookNamespace derives the id of a webhook integration's conversation.
var webhookNamespace = uuid.MustParse("3d0c6f55-2b8e-4c1a-9f7d-6a1e0b4c2d93")

// WebhookConversationID is the id of the conversation that receives a
// webhook integration's events that name none.
func WebhookConversationID(botID, webhookID string) string {
	return uuid.NewSHA1(webhookNamespace, []byte(botID+"/"+webhookID)).String()
}

// Resolve returns the enabled webhook integration of a webhook id; an
// unknown or disabled one (or another integration's) is NotFound.
func (s *Webhooks) Resolve(ctx context.Context, webhookID string) (*model.Integration, error) {
	in, err := s.store.Bots().IntegrationByWebhook(ctx, webhookID)
	if model.IsNotFound(err) || (err == nil && (in.Name != model.IntegrationWebhook || !in.Enabled)) {
		return nil, model.Errorf(model.ErrNotFound, "no webhook integration with this webhook id")
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

// Receive turns a request to the webhook integration in (from Resolve)
// into the bot's webhook event. A wrong or missing secret (when the
// integration has one) is Unauthorized; a body that is not JSON, or that
// names a conversation or user the bot does not have, InvalidPayload.
// Nothing is stored unless the event and its turn are.
func (s *Webhooks) Receive(ctx context.Context, in *model.Integration, r WebhookRequest) (*model.Event, error) {
	webhookID := in.WebhookID
	if want, _ := in.Configuration[model.WebhookSecret].(string); want != "" &&
		subtle.ConstantTimeCompare([]byte(r.Secret), []byte(want)) != 1 {
		return nil, model.Unauthorized("invalid webhook secret: send the integration's secret in the %s header", model.WebhookSecretHeader)
	}
	body := bytes.TrimSpace(r.Body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		return nil, model.Invalid("body: must be JSON")
	}
	var target struct {
		ConversationID any `json:"conversationId"`
		UserID         any `json:"userId"`
	}
	if body[0] == '{' {
		_ = json.Unmarshal(body, &target)
	}
	convID, err := optionalString("conversationId", target.ConversationID)
	if err != nil {
		return nil, err
	}
	userID, err := optionalString("userId", target.UserID)
	if err != nil {
		return nil, err
	}
	botID := in.BotID
	var newConv *model.Conversation
	if convID != "" {
		conv, err := s.store.Chat().GetConversation(ctx, botID, convID)
		if model.IsNotFound(err) {
			return nil, model.Invalid("conversationId: the bot has no conversation %q", convID)
		}
		if err != nil {
			return nil, err
		}
		if userID == "" {
			userID = conv.OwnerID
		}
	} else {
		convID = WebhookConversationID(botID, webhookID)
		now := model.Now()
		newConv = &model.Conversation{BotID: botID, ID: convID, Integration: model.IntegrationWebhook,
			Channel: model.IntegrationWebhook, Tags: map[string]string{}, CreatedAt: now, UpdatedAt: now}
	}
	if userID != "" {
		if _, err := s.store.Chat().GetUser(ctx, botID, userID); model.IsNotFound(err) {
			return nil, model.Invalid("userId: the bot has no user %q", userID)
		} else if err != nil {
			return nil, err
		}
	}
	payload, err := json.Marshal(map[string]any{"body": json.RawMessage(body), "query": orEmpty(r.Query),
		"method": r.Method, "path": r.Path, "headers": orEmpty(r.Headers)})
	if err != nil {
		return nil, err
	}
	e := &model.Event{BotID: botID, ID: model.NewID(), ConversationID: convID, UserID: userID,
		Type: model.WebhookEventType, Payload: payload, Status: model.EventProcessed, CreatedAt: model.Now()}
	turn := &model.Turn{BotID: botID, ConversationID: convID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: userID, CreatedAt: e.CreatedAt}
	w := &store.Write{Turn: turn, Apply: func(ctx context.Context, tx store.Store) error {
		if newConv != nil {
			if _, err := tx.Chat().GetConversation(ctx, botID, convID); model.IsNotFound(err) {
				if err := tx.Chat().CreateConversation(ctx, newConv); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
		}
		return tx.Chat().CreateEvent(ctx, e)
	}}
	err = s.commit.Commit(ctx, w)
	if newConv != nil && model.TypeOf(err) == model.ErrAlreadyExists {
		// A concurrent first event created the webhook conversation.
		err = s.commit.Commit(ctx, w)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

func optionalString(field string, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	return "", model.Invalid("%s: must be a string", field)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
