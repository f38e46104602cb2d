package runtimeapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Credentials authenticates Runtime API callers: `Authorization: Bearer
// <token>` with `x-bot-id`. Three kinds of token are accepted:
//   - a bot API key (createBotApiKey): acts fully on its own bot only;
//   - a bot token (MintBotToken), the BP_TOKEN of a bot's own process:
//     the same rights as a bot API key;
//   - a member's personal access token: the member's role in the bot's
//     workspace decides (permissions.go).
type Credentials struct {
	store store.Store
}

// NewCredentials returns the Runtime API's credential checks on st (also
// used before the API is built, to mint the tokens of bot processes).
func NewCredentials(st store.Store) *Credentials { return &Credentials{store: st} }

// BotTokenPrefix starts every bot token.
const BotTokenPrefix = "bp_bot_"

// MintBotToken returns the token a bot's own process uses (BP_TOKEN):
// "bp_bot_" + base64url(botID) + "." + hex(HMAC-SHA256(bot signing
// secret, botID)). It is stateless and stable for a bot; it stops working
// when the bot is deleted (or its signing secret changes).
func (s *Credentials) MintBotToken(ctx context.Context, botID string) (string, error) {
	b, err := s.store.Bots().GetByID(ctx, botID)
	if err != nil {
		return "", orNotFound(err, "Bot", botID)
	}
	if b.SigningSecret == "" {
		return "", model.Errorf(model.ErrInternal, "bot %s has no signing secret", botID)
	}
	return BotTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(botID)) + "." + botTokenMAC(b.SigningSecret, botID), nil
}

func botTokenMAC(secret, botID string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("parley-bot-token:" + botID))
	return hex.EncodeToString(m.Sum(nil))
}

// Authenticate returns the caller a bearer token (without "Bearer ")
// stands for on bot botID: 401 for a missing or unknown token, 403 for a
// credential of another bot or of a non-member, 404 for an unknown bot.
func (s *Credentials) Authenticate(ctx context.Context, token, botID string) (*Caller, error) {
	if token == "" {
		return nil, model.Unauthorized("missing credential: send Authorization: Bearer <token>")
	}
	if botID == "" {
		return nil, model.Unauthorized("missing x-bot-id header")
	}
	if strings.HasPrefix(token, BotTokenPrefix) {
		return s.botToken(ctx, token, botID)
	}
	t, err := s.store.Tokens().GetByHash(ctx, auth.HashToken(token))
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("invalid credential")
	}
	if err != nil {
		return nil, err
	}
	switch t.Kind {
	case model.TokenBotKey:
		if t.BotID != botID {
			return nil, model.Forbidden("this API key belongs to another bot")
		}
		if _, err := s.store.Bots().GetByID(ctx, botID); err != nil {
			return nil, orNotFound(err, "Bot", botID)
		}
		return &Caller{BotID: botID, Kind: KindBot}, nil
	case model.TokenPAT:
		b, err := s.store.Bots().GetByID(ctx, botID)
		if err != nil {
			return nil, orNotFound(err, "Bot", botID)
		}
		m, err := s.store.Members().GetByAccount(ctx, b.WorkspaceID, t.AccountID)
		if model.IsNotFound(err) {
			return nil, model.Forbidden("you are not a member of this bot's workspace")
		}
		if err != nil {
			return nil, err
		}
		return &Caller{BotID: botID, Kind: KindMember, Role: m.Role}, nil
	}
	return nil, model.Unauthorized("invalid credential")
}

func (s *Credentials) botToken(ctx context.Context, token, botID string) (*Caller, error) {
	enc, mac, ok := strings.Cut(strings.TrimPrefix(token, BotTokenPrefix), ".")
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil || len(raw) == 0 {
		return nil, model.Unauthorized("invalid credential")
	}
	owner := string(raw)
	b, err := s.store.Bots().GetByID(ctx, owner)
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("invalid credential")
	}
	if err != nil {
		return nil, err
	}
	if b.SigningSecret == "" || !hmac.Equal([]byte(mac), []byte(botTokenMAC(b.SigningSecret, owner))) {
		return nil, model.Unauthorized("invalid credential")
	}
	if owner != botID {
		return nil, model.Forbidden("this bot token belongs to another bot")
	}
	return &Caller{BotID: botID, Kind: KindBot}, nil
}

// IntegrationTokenPrefix starts every integration process token.
const IntegrationTokenPrefix = "bp_int_"

// integrationKeyPrefix starts integration API keys
// (integrations.IntegrationKeyPrefix).
const integrationKeyPrefix = "bp_iak_"

// MintIntegrationToken returns the token an integration's own process
// uses (BP_TOKEN): "bp_int_" + base64url(id) + "." + hex(HMAC-SHA256(the
// integration's signing secret, id)). It acts for the bots that installed
// the integration, and stops working when its signing secret is rotated.
func (s *Credentials) MintIntegrationToken(ctx context.Context, integrationID string) (string, error) {
	d, err := s.store.Integrations().Get(ctx, integrationID)
	if err != nil {
		return "", orNotFound(err, "Integration", integrationID)
	}
	return IntegrationTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(d.ID)) + "." + integrationTokenMAC(d.SigningSecret, d.ID), nil
}

func integrationTokenMAC(secret, id string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("parley-integration-token:" + id))
	return hex.EncodeToString(m.Sum(nil))
}

// AuthenticateIntegration returns the caller an integration's credential
// stands for on bot botID (x-integration-id: integrationID): its process
// token or one of its API keys, and the bot must have installed it. 401
// for a bad credential, 403 for a credential of another integration or a
// bot that did not install it.
func (s *Credentials) AuthenticateIntegration(ctx context.Context, token, botID, integrationID string) (*Caller, error) {
	switch {
	case token == "":
		return nil, model.Unauthorized("missing credential: send Authorization: Bearer <token>")
	case botID == "":
		return nil, model.Unauthorized("missing x-bot-id header")
	}
	owner := ""
	switch {
	case strings.HasPrefix(token, IntegrationTokenPrefix):
		enc, mac, ok := strings.Cut(strings.TrimPrefix(token, IntegrationTokenPrefix), ".")
		raw, err := base64.RawURLEncoding.DecodeString(enc)
		if !ok || err != nil || len(raw) == 0 {
			return nil, model.Unauthorized("invalid credential")
		}
		d, err := s.store.Integrations().Get(ctx, string(raw))
		if model.IsNotFound(err) {
			return nil, model.Unauthorized("invalid credential")
		}
		if err != nil {
			return nil, err
		}
		if !hmac.Equal([]byte(mac), []byte(integrationTokenMAC(d.SigningSecret, d.ID))) {
			return nil, model.Unauthorized("invalid credential")
		}
		owner = d.ID
	case strings.HasPrefix(token, integrationKeyPrefix):
		t, err := s.store.Tokens().GetByHash(ctx, auth.HashToken(token))
		if model.IsNotFound(err) || err == nil && t.Kind != model.TokenIntegrationKey {
			return nil, model.Unauthorized("invalid credential")
		}
		if err != nil {
			return nil, err
		}
		owner = t.IntegrationID
	default:
		return nil, model.Unauthorized("invalid credential: an integration calls with its own token or an integration API key")
	}
	if integrationID != "" && owner != integrationID {
		return nil, model.Forbidden("this credential belongs to another integration")
	}
	ins, err := s.store.Bots().Integrations(ctx, botID)
	if err != nil {
		return nil, err
	}
	for _, in := range ins {
		if in.IntegrationID == owner {
			return &Caller{BotID: botID, Kind: KindIntegration, Integration: in.Name, IntegrationID: owner}, nil
		}
	}
	if _, err := s.store.Bots().GetByID(ctx, botID); err != nil {
		return nil, orNotFound(err, "Bot", botID)
	}
	return nil, model.Forbidden("bot %s has not installed this integration", botID)
}
