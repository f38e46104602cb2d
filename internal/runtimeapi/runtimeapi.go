// Package runtimeapi implements the Runtime API's operations
// (`/v1/chat/...` of @botpress/client): what a bot, its integrations and
// Parley's sandbox `client` do with the bot's users, conversations,
// messages, events, states, workflows and tasks. One type per resource
// (Users, Conversations, Messages, Events, States, Workflows, Tasks,
// Actions); Credentials turns a bearer token and a bot id into a Caller;
// who may call what is in permissions.go. The three callers (the HTTP
// Runtime API, SDK bots through it, and the sandbox) share this code.
package runtimeapi

import (
	"context"
	"encoding/json"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// CallerKind tells how a Caller authenticated.
type CallerKind int

const (
	// KindBot is the bot itself: a bot API key, a bot token, or Parley's
	// own sandbox acting for the bot.
	KindBot CallerKind = iota
	// KindMember is a workspace member with a personal access token.
	KindMember
	// KindIntegration is an integration the bot installed, acting for the
	// bot (x-integration-id with its process token or an integration API
	// key): every right on the bot's data, its tags prefixed by its alias.
	KindIntegration
)

// Caller is an authenticated caller acting on one bot.
type Caller struct {
	BotID string
	Kind  CallerKind
	// Role is the member's role (KindMember only).
	Role model.Role
	// Integration is the alias of the integration on the bot, and
	// IntegrationID its id (KindIntegration only).
	Integration   string
	IntegrationID string
}

// BotCaller is the bot acting on its own data with every right (Parley's
// sandbox, and callers Parley trusts).
func BotCaller(botID string) *Caller { return &Caller{BotID: botID, Kind: KindBot} }

// FileSearcher runs searchFiles for a bot's own code (the sandbox's
// client.searchFiles): files.API.SearchForBot, passed by app.start. The
// input is searchFiles' input, the output its response body.
type FileSearcher interface {
	SearchForBot(ctx context.Context, botID string, input json.RawMessage) (any, error)
}

// ActionCaller runs a bot's action (callAction). The app wires the
// runtimes that can; without one, callAction fails with a clear error.
type ActionCaller interface {
	CallAction(ctx context.Context, botID, actionType string, input json.RawMessage) (json.RawMessage, error)
}

// IntegrationCreator creates users and conversations in the integrations
// a bot installed (their create_user and create_conversation operations):
// a bot's createUser or createConversation naming an integration whose
// definition enables creation goes there. handled is false when the
// integration is not one that creates them (then Parley creates them as
// for any other name). The tags are the bot's (prefixed).
type IntegrationCreator interface {
	CreateUser(ctx context.Context, botID, integration string, tags map[string]string) (userID string, handled bool, err error)
	CreateConversation(ctx context.Context, botID, integration, channel string, tags map[string]string) (conversationID string, handled bool, err error)
}

// ChatObserver is told of Runtime API changes that the Chat API holds
// copies of (its participant cache, its live streams, here and on the
// other nodes): the app passes the Chat API's use cases.
type ChatObserver interface {
	ParticipantsChanged(botID string)
	ConversationDeleted(botID, conversationID string)
}

// API groups the Runtime API's use cases.
type API struct {
	Users         *Users
	Conversations *Conversations
	Messages      *Messages
	Events        *Events
	States        *States
	Workflows     *Workflows
	Tasks         *Tasks
	Actions       *Actions
	Credentials   *Credentials

	files FileSearcher // client.searchFiles in bot code (nil: not offered)
}

// TurnReplies is told of each message a bot creates, so that a turn
// delivered again to a bot over HTTP waits for the replies of the
// delivery before it (package turns).
type TurnReplies interface {
	ReplyStarted(botID, conversationID string) (done func())
}

// deps are what every use case shares.
type deps struct {
	store    store.Store
	commit   store.Committer
	chat     ChatObserver
	replies  TurnReplies        // may be nil
	creation IntegrationCreator // nil: Parley creates every user and conversation
}

// New builds the Runtime API's use cases on st; writes that are announced
// or give the bot a turn go through commit; chat hears of deletions.
// actions, replies, files and creation may be nil (files:
// client.searchFiles in bot code; creation: the integrations' create_user
// and create_conversation).
func New(st store.Store, commit store.Committer, actions ActionCaller, replies TurnReplies, chat ChatObserver, files FileSearcher, creation IntegrationCreator) *API {
	d := deps{store: st, commit: commit, chat: chat, replies: replies, creation: creation}
	return &API{
		Users:         &Users{d},
		Conversations: &Conversations{d},
		Messages:      &Messages{d},
		Events:        &Events{d},
		States:        &States{d},
		Workflows:     &Workflows{d},
		Tasks:         &Tasks{d},
		Actions:       &Actions{deps: d, caller: actions},
		Credentials:   &Credentials{store: st},
		files:         files,
	}
}

func (d deps) participantsChanged(botID string) {
	if d.chat != nil {
		d.chat.ParticipantsChanged(botID)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// notFound names the missing resource as the Botpress API does.
func notFound(kind, id string) error { return model.NotFound(kind + " " + quote(id)) }

// orNotFound replaces a store NotFound with the resource's own message.
func orNotFound(err error, kind, id string) error {
	if model.IsNotFound(err) {
		return notFound(kind, id)
	}
	return err
}

// TagPatch is a tags object of an update: a null or empty value removes
// the key.
type TagPatch map[string]*string

// apply returns old with the patch applied.
func (p TagPatch) apply(old map[string]string) map[string]string {
	set := make(map[string]string, len(p))
	for k, v := range p {
		if v == nil {
			set[k] = ""
		} else {
			set[k] = *v
		}
	}
	return model.MergeTags(old, set)
}

func (p TagPatch) validate(field string) error {
	m := make(map[string]string, len(p))
	for k, v := range p {
		if v != nil {
			m[k] = *v
		} else {
			m[k] = ""
		}
	}
	return model.ValidateTags(field, m)
}

// page builds a store page from the list operations' nextToken and
// pageSize.
func page(token string, size int) store.Page { return store.Page{Token: token, Size: size} }

// requireObject checks that raw is a JSON object (or absent when
// optional) and returns it, {} when absent.
func requireObject(field string, raw json.RawMessage, required bool) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return nil, model.Invalid("%s: required", field)
		}
		return json.RawMessage("{}"), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, model.Invalid("%s: must be an object", field)
	}
	return raw, nil
}

// pick returns the subset of tags whose keys are in keys; with no keys,
// every tag.
func pick(tags map[string]string, keys []string) map[string]string {
	if len(keys) == 0 {
		return tags
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		if v, ok := tags[k]; ok {
			out[k] = v
		}
	}
	return out
}
