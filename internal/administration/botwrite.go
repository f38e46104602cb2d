package administration

import (
	"context"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// BotWrite is the body of createBot and updateBot. Pointer fields are
// optional; in map fields a nil value deletes the key (updateBot merges).
type BotWrite struct {
	Name             *string                      `json:"name"`
	Description      *string                      `json:"description"`
	Dev              *bool                        `json:"dev"`
	Type             *string                      `json:"type"`
	Code             *string                      `json:"code"`
	URL              *string                      `json:"url"`
	Authentication   *string                      `json:"authentication"`
	Blocked          *bool                        `json:"blocked"`
	MaxExecutionTime *int                         `json:"maxExecutionTime"`
	AlwaysAlive      *bool                        `json:"alwaysAlive"`
	Tags             map[string]*string           `json:"tags"`
	Secrets          map[string]*string           `json:"secrets"`
	Integrations     map[string]*IntegrationWrite `json:"integrations"`
	States           map[string]any               `json:"states"`
	Events           map[string]any               `json:"events"`
	RecurringEvents  map[string]any               `json:"recurringEvents"`
	Actions          map[string]any               `json:"actions"`
	Plugins          map[string]any               `json:"plugins"`
	Configuration    *BotConfiguration            `json:"configuration"`
	User             *TagDefinitions              `json:"user"`
	Conversation     *TagDefinitions              `json:"conversation"`
	Message          *TagDefinitions              `json:"message"`
	Subscriptions    *Subscriptions               `json:"subscriptions"`
	Medias           *[]Media                     `json:"medias"`
	Layers           []string                     `json:"layers"`
}

// IntegrationWrite configures one integration of a bot.
type IntegrationWrite struct {
	Enabled           *bool          `json:"enabled"`
	IntegrationID     *string        `json:"integrationId"`
	ConfigurationType *string        `json:"configurationType"`
	Configuration     map[string]any `json:"configuration"`
	DisabledChannels  []string       `json:"disabledChannels"`
}

// BotConfiguration is the bot's configuration data and its schema.
type BotConfiguration struct {
	Data   map[string]any `json:"data"`
	Schema map[string]any `json:"schema"`
}

// TagDefinitions declares the tags of users, conversations or messages.
type TagDefinitions struct {
	Tags map[string]any `json:"tags"`
}

// Subscriptions are the events a bot subscribes to; Events nil means all.
type Subscriptions struct {
	Events map[string]any `json:"events"`
}

// Media is a picture or file describing the bot.
type Media struct {
	URL  string `json:"url"`
	Name string `json:"name"`
}

// BotView is a bot with its integrations, what the Admin API renders.
type BotView struct {
	Bot          *model.Bot
	Integrations []*model.Integration
	// Definitions are the published integrations the entries install, by
	// id.
	Definitions map[string]*model.IntegrationDef
}

// Limits on bot fields (the Botpress API's).
const (
	maxBotDescription = 2000
	maxTagValue       = 500
	// MaxExecutionTimeLimit is the longest per-turn budget a bot may ask for.
	MaxExecutionTimeLimit = 60
)

// applyBotWrite validates in and merges it into b (not the integrations).
func applyBotWrite(b *model.Bot, in *BotWrite) error {
	if in.Name != nil {
		if *in.Name == "" {
			return model.Invalid("name: must not be empty")
		}
		b.Name = *in.Name
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > maxBotDescription {
			return model.Invalid("description: at most %d characters", maxBotDescription)
		}
		b.Description = *in.Description
	}
	if in.Type != nil {
		if !slices.Contains(model.BotTypes, *in.Type) {
			return model.Invalid("type: must be one of studio, adk, desk")
		}
		b.Type = *in.Type
	}
	if in.URL != nil {
		b.URL = *in.URL
	}
	if in.Authentication != nil && *in.Authentication != "iam" && *in.Authentication != "hmac-sha256" {
		return model.Invalid("authentication: must be iam or hmac-sha256")
	}
	if in.MaxExecutionTime != nil {
		if *in.MaxExecutionTime < 1 || *in.MaxExecutionTime > MaxExecutionTimeLimit {
			return model.Invalid("maxExecutionTime: must be between 1 and %d seconds", MaxExecutionTimeLimit)
		}
		b.MaxExecutionTime = *in.MaxExecutionTime
	}
	if in.AlwaysAlive != nil {
		b.AlwaysAlive = *in.AlwaysAlive
	}
	for k, v := range in.Tags {
		if v == nil || *v == "" {
			delete(b.Tags, k)
			continue
		}
		if len(*v) > maxTagValue {
			return model.Invalid("tags.%s: at most %d characters", k, maxTagValue)
		}
		b.Tags[k] = *v
	}
	for k, v := range in.Secrets {
		if v == nil {
			delete(b.Secrets, k)
		} else {
			b.Secrets[k] = *v
		}
	}
	for _, f := range []struct {
		name  string
		patch map[string]any
		check func(path string, v map[string]any) error
	}{
		{"states", in.States, checkState},
		{"events", in.Events, checkSchemaEntry},
		{"recurringEvents", in.RecurringEvents, checkRecurringEvent},
		{"actions", in.Actions, checkAction},
		{"plugins", in.Plugins, checkPlugin},
	} {
		if err := mergeSpecMap(b.Spec, f.name, f.patch, f.check); err != nil {
			return err
		}
	}
	if in.Configuration != nil {
		cfg := specObject(b.Spec, "configuration")
		if in.Configuration.Data != nil {
			cfg["data"] = in.Configuration.Data
		}
		if in.Configuration.Schema != nil {
			cfg["schema"] = in.Configuration.Schema
		}
	}
	for name, td := range map[string]*TagDefinitions{"user": in.User, "conversation": in.Conversation, "message": in.Message} {
		if td == nil {
			continue
		}
		obj := specObject(b.Spec, name)
		tags, _ := obj["tags"].(map[string]any)
		if tags == nil {
			tags = map[string]any{}
		}
		for k, v := range td.Tags {
			if v == nil {
				delete(tags, k)
				continue
			}
			if _, ok := v.(map[string]any); !ok {
				return model.Invalid("%s.tags.%s: expected an object", name, k)
			}
			tags[k] = v
		}
		obj["tags"] = tags
	}
	if in.Subscriptions != nil {
		sub := specObject(b.Spec, "subscriptions")
		if in.Subscriptions.Events == nil {
			sub["events"] = nil
		} else {
			events, _ := sub["events"].(map[string]any)
			if events == nil {
				events = map[string]any{}
			}
			for k, v := range in.Subscriptions.Events {
				if v == nil {
					delete(events, k)
				} else {
					events[k] = map[string]any{}
				}
			}
			sub["events"] = events
		}
	}
	if in.Medias != nil {
		medias := make([]any, 0, len(*in.Medias))
		for i, m := range *in.Medias {
			if m.URL == "" || m.Name == "" {
				return model.Invalid("medias[%d]: url and name are required", i)
			}
			medias = append(medias, map[string]any{"url": m.URL, "name": m.Name})
		}
		b.Spec["medias"] = medias
	}
	return nil
}

// specObject returns b.Spec[name] as an object, creating it if needed.
func specObject(spec map[string]any, name string) map[string]any {
	obj, _ := spec[name].(map[string]any)
	if obj == nil {
		obj = map[string]any{}
		spec[name] = obj
	}
	return obj
}

// mergeSpecMap merges a map-valued field: nil values delete keys.
func mergeSpecMap(spec map[string]any, name string, patch map[string]any, check func(string, map[string]any) error) error {
	if patch == nil {
		return nil
	}
	m := specObject(spec, name)
	for k, v := range patch {
		if v == nil {
			delete(m, k)
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return model.Invalid("%s.%s: expected an object or null", name, k)
		}
		if err := check(name+"."+k, obj); err != nil {
			return err
		}
		m[k] = obj
	}
	return nil
}

func requireObjectField(path string, v map[string]any, field string) error {
	if _, ok := v[field].(map[string]any); !ok {
		return model.Invalid("%s.%s: required, expected an object", path, field)
	}
	return nil
}

func checkState(path string, v map[string]any) error {
	switch v["type"] {
	case "conversation", "user", "bot":
	default:
		return model.Invalid("%s.type: must be conversation, user or bot", path)
	}
	if e, ok := v["expiry"]; ok {
		if n, ok := e.(float64); !ok || n < 1 {
			return model.Invalid("%s.expiry: must be a number of at least 1", path)
		}
	}
	return requireObjectField(path, v, "schema")
}

func checkSchemaEntry(path string, v map[string]any) error {
	return requireObjectField(path, v, "schema")
}

func checkRecurringEvent(path string, v map[string]any) error {
	sched, ok := v["schedule"].(map[string]any)
	if !ok {
		return model.Invalid("%s.schedule: required, expected an object", path)
	}
	if cron, ok := sched["cron"].(string); !ok || cron == "" {
		return model.Invalid("%s.schedule.cron: required string", path)
	}
	if t, ok := v["type"].(string); !ok || t == "" {
		return model.Invalid("%s.type: required string", path)
	}
	if err := requireObjectField(path, v, "payload"); err != nil {
		return err
	}
	v["failedAttempts"], v["lastFailureReason"] = float64(0), nil
	return nil
}

func checkAction(path string, v map[string]any) error {
	for _, io := range []string{"input", "output"} {
		obj, ok := v[io].(map[string]any)
		if !ok {
			return model.Invalid("%s.%s: required, expected an object", path, io)
		}
		if err := requireObjectField(path+"."+io, obj, "schema"); err != nil {
			return err
		}
	}
	return nil
}

func checkPlugin(path string, v map[string]any) error {
	if id, ok := v["id"].(string); !ok || id == "" {
		return model.Invalid("%s.id: required string", path)
	}
	return nil
}

// writeIntegrations applies integration changes. Built-in integrations can
// be disabled but not removed; their configuration is merged key by key so
// that toggling one does not rotate its keys. An entry that installs a
// published integration (keyed by its id, or by an alias with
// integrationId) is checked against the integration's configuration
// schema; the entries installed or changed, and those removed, are
// returned for the installer's register and unregister calls after the
// commit.
func writeIntegrations(ctx context.Context, tx store.Store, b *model.Bot, patch map[string]*IntegrationWrite, inst IntegrationInstaller) (changed, removed []*model.Integration, err error) {
	if len(patch) == 0 {
		return nil, nil, nil
	}
	existing, err := tx.Bots().Integrations(ctx, b.ID)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]*model.Integration{}
	for _, in := range existing {
		byName[in.Name] = in
		if in.IntegrationID != "" {
			if _, taken := byName[in.IntegrationID]; !taken {
				byName[in.IntegrationID] = in // an entry keyed by the integration's id finds its alias
			}
		}
	}
	now := model.Now()
	keys := make([]string, 0, len(patch))
	for k := range patch {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, name := range keys {
		w := patch[name]
		builtin := name == model.IntegrationChat || name == model.IntegrationWebchat
		cur := byName[name]
		if w == nil {
			if builtin {
				return nil, nil, model.Invalid("integrations.%s: a built-in integration cannot be removed; set enabled to false", name)
			}
			if cur != nil {
				if err := tx.Bots().DeleteIntegration(ctx, b.ID, cur.Name); err != nil {
					return nil, nil, err
				}
				if cur.IntegrationID != "" {
					removed = append(removed, cur)
				}
			}
			continue
		}
		var def *model.IntegrationDef
		if !builtin && name != model.IntegrationWebhook && inst != nil {
			id := ""
			if w.IntegrationID != nil {
				id = *w.IntegrationID
			}
			if id == "" && cur != nil && cur.IntegrationID != "" {
				id = cur.IntegrationID // a change of an installed entry: its integration checks it again
			}
			if def, err = inst.Resolve(ctx, b.WorkspaceID, name, id); err != nil {
				return nil, nil, err
			}
		}
		if cur == nil {
			alias := name
			if def != nil && (w.IntegrationID == nil || *w.IntegrationID == "") {
				alias = def.Name // keyed by the integration's id: its name is the alias
				cur = byName[alias]
			}
			if cur == nil {
				cur = &model.Integration{BotID: b.ID, Name: alias, Enabled: true, WebhookID: model.NewSecret("wh_"),
					Configuration: map[string]any{}, CreatedAt: now}
				if def != nil || name == model.IntegrationWebhook {
					cur.WebhookID = newWebhookID()
				}
			}
		}
		if w.Enabled != nil {
			cur.Enabled = *w.Enabled
		}
		if w.ConfigurationType != nil {
			cur.ConfigurationType = *w.ConfigurationType
		}
		if w.DisabledChannels != nil {
			cur.DisabledChannels = w.DisabledChannels
		}
		for k, v := range w.Configuration {
			if v == nil {
				delete(cur.Configuration, k)
			} else {
				cur.Configuration[k] = v
			}
		}
		if name == model.IntegrationChat {
			key, ok := cur.Configuration[model.ChatEncryptionKey].(string)
			if !ok || key == "" {
				if _, present := w.Configuration[model.ChatEncryptionKey]; present {
					return nil, nil, model.Invalid("integrations.chat.configuration.encryptionKey: must be a non-empty string")
				}
				cur.Configuration[model.ChatEncryptionKey] = model.NewSecret("")
			}
		}
		if name == model.IntegrationWebhook {
			if err := checkWebhookConfiguration(cur.Configuration); err != nil {
				return nil, nil, err
			}
		}
		if _, err := json.Marshal(cur.Configuration); err != nil {
			return nil, nil, model.Invalid("integrations.%s.configuration: %v", name, err)
		}
		if def != nil {
			if err := inst.CheckConfiguration(def, "integrations."+name, cur.ConfigurationType, cur.Configuration); err != nil {
				return nil, nil, err
			}
			cur.IntegrationID = def.ID
			cur.Status, cur.StatusReason = model.IntegrationRegistrationPending, ""
		}
		cur.UpdatedAt = now
		if err := tx.Bots().PutIntegration(ctx, cur); err != nil {
			return nil, nil, err
		}
		if def != nil {
			changed = append(changed, cur)
		}
	}
	return changed, removed, nil
}

// checkWebhookConfiguration checks the built-in webhook integration's
// configuration: secret, when set, is a non-empty string.
func checkWebhookConfiguration(cfg map[string]any) error {
	v, ok := cfg[model.WebhookSecret]
	if !ok {
		return nil
	}
	if s, isString := v.(string); !isString || s == "" {
		return model.Invalid("integrations.webhook.configuration.%s: must be a non-empty string (null removes it)", model.WebhookSecret)
	}
	return nil
}

// EnsureBuiltinIntegrations gives a bot the built-in integrations it lacks:
// chat (an unguessable webhook id and a generated encryption key) and
// webchat (a client id). A chat integration without an encryption key gets
// one. Call it inside the transaction that creates or updates the bot.
func EnsureBuiltinIntegrations(ctx context.Context, tx store.Store, botID string) error {
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
			Configuration: map[string]any{model.ChatEncryptionKey: newEncryptionKey(),
				model.ChatFallbackMessage: model.DefaultFallbackMessage}, CreatedAt: now, UpdatedAt: now}
		if err := tx.Bots().PutIntegration(ctx, in); err != nil {
			return err
		}
	} else if k, _ := in.Configuration[model.ChatEncryptionKey].(string); k == "" || in.WebhookID == "" {
		if in.Configuration == nil {
			in.Configuration = map[string]any{}
		}
		if k == "" {
			in.Configuration[model.ChatEncryptionKey] = newEncryptionKey()
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
