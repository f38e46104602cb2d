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
