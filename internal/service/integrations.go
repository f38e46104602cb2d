package service

import (
	"context"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// ChatEncryptionKey is the configuration key of the chat integration that
// holds the HS256 secret of user keys.
const ChatEncryptionKey = "encryptionKey"

// EnsureBuiltinIntegrations gives a bot the built-in integrations it lacks:
// chat (an unguessable webhook id and a generated encryption key) and
// webchat (a client id). A chat integration without an encryption key gets
// one. Call it inside the transaction that creates or updates the bot.
func (s *Service) EnsureBuiltinIntegrations(ctx context.Context, tx store.Store, botID string) error {
	have, err := tx.Bots().Integrations(ctx, botID)
	if err != nil {
		return err
	}
	byName := map[string]*model.Integration{}
	for _, in := range have {
		byName[in.Name] = in
	}
	now := model.Now()
	if in := byName[model.IntegrationChat]; in == nil {
		in = &model.Integration{BotID: botID, Name: model.IntegrationChat, Enabled: true, WebhookID: newWebhookID(),
			Configuration: map[string]any{ChatEncryptionKey: newEncryptionKey()}, CreatedAt: now, UpdatedAt: now}
		if err := tx.Bots().PutIntegration(ctx, in); err != nil {
			return err
		}
	} else if k, _ := in.Configuration[ChatEncryptionKey].(string); k == "" || in.WebhookID == "" {
		if in.Configuration == nil {
			in.Configuration = map[string]any{}
		}
		if k == "" {
			in.Configuration[ChatEncryptionKey] = newEncryptionKey()
		}
		if in.WebhookID == "" {
			in.WebhookID = newWebhookID()
		}
		in.UpdatedAt = now
		if err := tx.Bots().PutIntegration(ctx, in); err != nil {
			return err
		}
	}
	if in := byName[model.IntegrationWebchat]; in == nil {
		in = &model.Integration{BotID: botID, Name: model.IntegrationWebchat, Enabled: true, WebhookID: newWebhookID(),
			Configuration: map[string]any{}, CreatedAt: now, UpdatedAt: now}
		if err := tx.Bots().PutIntegration(ctx, in); err != nil {
			return err
		}
	} else if in.WebhookID == "" {
		in.WebhookID, in.UpdatedAt = newWebhookID(), now
		if err := tx.Bots().PutIntegration(ctx, in); err != nil {
			return err
		}
	}
	return nil
}

// newWebhookID returns a random (v4, 122 random bits) UUID: unguessable,
// URL-safe, and shaped like Botpress webhook ids.
func newWebhookID() string { return uuid.New().String() }

func newEncryptionKey() string { return model.NewSecret("") }

// ChatIntegration resolves a Chat API webhook id to the bot's chat
// integration and the bot. An unknown webhook id and a disabled
// integration are both ResourceNotFound, so a disabled Chat API looks
// exactly like one that never existed.
func (s *Service) ChatIntegration(ctx context.Context, webhookID string) (*model.Integration, *model.Bot, error) {
	if webhookID == "" {
		return nil, nil, chatWebhookNotFound()
	}
	in, err := s.store.Bots().IntegrationByWebhook(ctx, webhookID)
	if model.IsNotFound(err) {
		return nil, nil, chatWebhookNotFound()
	}
	if err != nil {
		return nil, nil, err
	}
	if in.Name != model.IntegrationChat || !in.Enabled {
		return nil, nil, chatWebhookNotFound()
	}
	b, err := s.store.Bots().GetByID(ctx, in.BotID)
	if model.IsNotFound(err) {
		return nil, nil, chatWebhookNotFound()
	}
	if err != nil {
		return nil, nil, err
	}
	return in, b, nil
}

func chatWebhookNotFound() error {
	return model.Errorf(model.ErrNotFound, "no chat integration with this webhook id")
}
