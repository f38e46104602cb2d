package turns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
	"github.com/parley-bots/parley/internal/workflow"
)

// Runtime runs the turns of bots whose deployed version is JavaScript
// (code bots) or a bot JSON document (workflow bots, whose version's code
// is the JavaScript the workflow package generates, starting with
// workflow.Marker), in the goja sandbox of package runtime.
type Runtime struct {
	store     store.Store
	engine    *runtime.Engine
	sdk       *SDKBots
	out       outbox
	api       RuntimeAPI
	log       *slog.Logger
	workflows *workflowCache
	noCode    noCodeLog
	kb        KnowledgeBases
	cache     *botCache // bots and versions (botcache.go)
}

// KnowledgeBases queries a bot's knowledge bases (files.API, passed by
// app.start). QueryKnowledgeBases is for a turn's event.kb: included lists
// the bases queried, results the passages found; both nil when the bot
// has none; only (when not empty) restricts the bases to those whose id
// or name it lists. Answer answers a workflow's queryKnowledgeBase card from the
// bases whose id or name is in only (all when empty): the answer, empty
// only when no passage scored, and its sources (file keys).
type KnowledgeBases interface {
	QueryKnowledgeBases(ctx context.Context, botID, query string, only []string) (included, results []any, err error)
	Answer(ctx context.Context, botID, question string, only []string) (answer string, sources []string, err error)
}

// knowledge is the workflow engine's access to a bot's knowledge bases
// for one turn (nil without KnowledgeBases): a card that names none uses
// the bot's (bases, from its document's knowledgeBases; empty: all).
func (rt *Runtime) knowledge(ctx context.Context, botID string, bases []string) workflow.Knowledge {
	if rt.kb == nil {
		return nil
	}
	return func(question string, only []string) (string, []string, error) {
		if len(only) == 0 {
			only = bases
		}
		return rt.kb.Answer(ctx, botID, question, only)
	}
}

// RuntimeAPI runs the Runtime API operations bot code's `client` offers
// beyond the turn's own output (runtime.ClientOperations), with the same
// use cases as the HTTP Runtime API: input and output are the operation's
// JSON as @botpress/client takes and returns it. The app passes
// runtimeapi's.
type RuntimeAPI interface {
	Invoke(ctx context.Context, botID, op string, input json.RawMessage) (json.RawMessage, error)
}

// TablesAPI runs the Tables API's row operations for bot code (the app
// wires tables.Invoker; turns never imports tables).
type TablesAPI interface {
	Invoke(ctx context.Context, botID, op string, input json.RawMessage) (json.RawMessage, error)
}

// WithTables returns a RuntimeAPI that sends the operations ops to
// tables and every other one to api.
func WithTables(api RuntimeAPI, tables TablesAPI, ops []string) RuntimeAPI {
	set := map[string]bool{}
	for _, op := range ops {
		set[op] = true
	}
	return tablesRouter{api, tables, set}
}

type tablesRouter struct {
	api    RuntimeAPI
	tables TablesAPI
	ops    map[string]bool
}

func (r tablesRouter) Invoke(ctx context.Context, botID, op string, input json.RawMessage) (json.RawMessage, error) {
	if r.ops[op] {
		return r.tables.Invoke(ctx, botID, op, input)
	}
	return r.api.Invoke(ctx, botID, op, input)
}

// NewRuntime returns the runtime of code, workflow and SDK bots. What bots
// send is stored through commit; sandbox code's other client calls go to
// api; SDK bots are called through sdk.
// kb (nil: none) fills event.kb for bots with knowledge bases.
func NewRuntime(st store.Store, commit store.Committer, engine *runtime.Engine, sdk *SDKBots, api RuntimeAPI, kb KnowledgeBases, log *slog.Logger) *Runtime {
	return &Runtime{store: st, engine: engine, sdk: sdk, out: outbox{st, commit}, api: api, log: log,
		workflows: newWorkflowCache(), kb: kb, cache: newBotCache()}
}

// Resolve is the Resolver of bots: an SDK bot (a development bot with a
// URL, or a deployed Node.js bundle), a code or workflow Bot, or nil when
// the bot has nothing to run.
func (rt *Runtime) Resolve(ctx context.Context, botID string) (Bot, error) {
	b, err := rt.bot(ctx, botID)
	if model.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if sb := rt.sdk.bot(b); sb != nil {
		return sb, nil
	}
	if b.VersionID == "" || b.Code == "" {
		return &noCodeBot{rt: rt, bot: b}, nil
	}
	if workflow.IsWorkflowCode(b.Code) {
		return &workflowBot{rt: rt, bot: b}, nil
	}
	return &codeBot{rt: rt, bot: b}, nil
}

// BotChanged is told (by administration, after the commit) that a bot was
// deployed, changed or deleted: the scheduler reloads its workflow bots,
// processes of bundle versions no longer deployed stop, and an SDK bot is
// sent the register operation.
func (rt *Runtime) BotChanged(botID string) {
	rt.ForgetBots()
	rt.sdk.BotChanged(botID)
}

// codeBot runs one turn of a code-first bot on the version deployed when the
// turn started: a deploy in the middle of a turn does not affect it.
type codeBot struct {
	rt  *Runtime
	bot *model.Bot
}

// eventNamespace derives stable event ids for message turns, so a re-run
// after a crash sees the same event id.
var eventNamespace = uuid.MustParse("0b9f6d1e-3c57-4f0e-8d0a-7f2b8e5c4a91")

func (cb *codeBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	rt, b := cb.rt, cb.bot
	v, err := rt.version(ctx, b)
	if err != nil {
		return err
	}
	rin, err := rt.prepareTurn(ctx, b, v, in, out, nil)
	if err != nil {
		return err
	}
	rin.Code = v.Code
	res := rt.engine.RunTurn(ctx, rin)
	if res.Err != nil {
		return res.Err
	}
	var problems []turnProblem
	if p := res.Problem; p != nil {
		problems = append(problems, turnProblem{p.Code, issueCategory(p.Code), p.Title, p.Description})
	}
	tellStart(out, rin.Host, res)
	// Stored with the turn's held replies and its completion, in one
	// transaction (EffectHolder).
	complete := func(ctx context.Context, tx store.Store) error {
		if err := rt.saveStates(ctx, tx, b.ID, in, res.States); err != nil {
			return err
		}
		return recordTurn(ctx, tx, b.ID, v.ID, rin.Event, res.Logs, "", problems)
	}
	addCompletion(out, complete, sharedStates(b.ID, in, res.States), len(problems) > 0)
	return problemFailure(res.Problem) // recorded with the completion; the dispatcher sends the fallback
}

// HoldsEffects makes code bots EffectHolders: their replies, states and
// logs are committed with the turn's completion.
func (cb *codeBot) HoldsEffects() bool { return true }

// foldable: a code bot's turn steps outside what its completion holds
// only through its host, which tells the turn's effectGate first, so its
// turn may run before its message is committed (Dispatcher.Fold).
func (cb *codeBot) foldable() {}

// prepareTurn builds the runtime input of a turn (all but the code): the
// event object, the stored message, user and conversation, and the states.
// bases (ids or names; empty: all) are the knowledge bases event.kb
// queries.
func (rt *Runtime) prepareTurn(ctx context.Context, b *model.Bot, v *model.BotVersion, in *TurnInput, out BotOutput, bases []string) (runtime.TurnInput, error) {
	ev, err := runtimeEvent(b.ID, in)
	if err != nil {
		return runtime.TurnInput{}, err
	}
	var msg map[string]any
	if in.Message != nil {
		var payload map[string]any // the event's, when it is the message's (Go reads both, never writes)
		if bytes.Equal(in.Message.Payload, in.Event.Payload) {
			payload = ev.Payload
		}
		msg = messageMap(in.Message, payload)
	}
	host := &botHost{store: rt.store, botID: b.ID, out: out, api: rt.api}
	// The event's tags are the real user, conversation and message tags;
	// its integration is the one the conversation came on.
	// The user, the conversation and the three states: read with the turn
	// when it was the first of its batch, else in one read now.
	var start store.TurnStart
	if in.start != nil {
		start = *in.start
	} else if start, err = rt.store.States().GetTurn(ctx, b.ID, in.UserID, in.ConversationID); err != nil {
		return runtime.TurnInput{}, err
	}
	var user, conv map[string]any
	var userTags, convTags map[string]string
	if u := start.User; u != nil {
		user, userTags = userMap(wire.NewUser(u)), u.Tags
	}
	if c := start.Conversation; c != nil {
		conv, convTags = conversationMap(wire.NewConversation(c)), c.Tags
		if c.Integration != "" {
			ev.Integration = c.Integration
		}
	}
	if in.Event.MessageID == "" && ev.Type == model.WebhookEventType {
		ev.Integration = model.IntegrationWebhook // whichever conversation it was given to
	}
	ev.Tags = runtime.NewTags(convTags, in.MessageTags, userTags)
	// A text message of a bot with knowledge bases queries them: event.kb.
	if text, ok := ev.Payload["text"].(string); ok && rt.kb != nil && in.Event.MessageID != "" && strings.TrimSpace(text) != "" {
		included, results, err := rt.kb.QueryKnowledgeBases(ctx, b.ID, text, bases)
		if err != nil {
			return runtime.TurnInput{}, err
		}
		if included != nil {
			if results == nil {
				results = []any{}
			}
			ev.KB = &runtime.KB{Included: included, Results: results}
		}
	}
	states := runtime.States{User: start.UserState, Conversation: start.ConvState, Bot: start.BotState}
	return runtime.TurnInput{BotID: b.ID, VersionID: v.ID, Timeout: time.Duration(b.MaxExecutionTime) * time.Second,
		Event: ev, Message: msg, User: user, Conversation: conv, States: states, Host: host}, nil
}

// turnProblem is a failure of bot code to record as an issue occurrence.
type turnProblem struct{ code, category, title, description string }

// recordTurn stores a turn's log lines and reports its problems as issues.
func recordTurn(ctx context.Context, tx store.Store, botID, versionID string, ev runtime.Event, logs []model.LogEntry, workflowID string, problems []turnProblem) error {
	if len(logs) > 0 {
		entries := make([]*model.LogEntry, len(logs))
		for i := range logs {
			logs[i].ID, logs[i].BotID = model.NewID(), botID
			if workflowID != "" {
				logs[i].WorkflowID = workflowID
			}
			entries[i] = &logs[i]
		}
		if err := tx.Logs().Append(ctx, entries...); err != nil {
			return err
		}
	}
	for _, p := range problems {
		issue := &model.Issue{BotID: botID, Code: p.code, Category: p.category, Title: p.title, Description: p.description}
		occurrence := &model.IssueEvent{Data: map[string]any{"conversationId": ev.ConversationID, "userId": ev.UserID,
			"eventId": ev.ID, "eventType": ev.Type, "versionId": versionID, "description": p.description}}
		if _, err := tx.Issues().Report(ctx, issue, occurrence); err != nil {
			return err
		}
	}
	return nil
}

// runtimeEvent builds the bot-side event object of a turn.
func runtimeEvent(botID string, in *TurnInput) (runtime.Event, error) {
	e := in.Event
	var payload map[string]any
	if err := json.Unmarshal(e.Payload, &payload); err != nil || payload == nil {
		return runtime.Event{}, fmt.Errorf("turn %d: payload is not an object", in.Seq)
	}
	ev := runtime.Event{BotID: botID, ConversationID: e.ConversationID, CreatedOn: e.CreatedAt,
		Direction: model.DirectionIncoming, Integration: model.IntegrationChat, Payload: payload,
		Preview: runtime.Preview(payload), Tags: runtime.NewTags(nil, nil, nil), UserID: e.UserID}
	if e.MessageID != "" {
		ev.ID = uuid.NewSHA1(eventNamespace, []byte(botID+"/"+e.MessageID)).String()
		ev.MessageID = e.MessageID
		ev.Type = e.Type
	} else {
		ev.ID = e.ID
		ev.Type = e.Type
		if !strings.Contains(ev.Type, ":") {
			ev.Type = model.IntegrationChat + ":" + ev.Type
		}
	}
	return ev, nil
}

func issueCategory(code string) string {
	switch code {
	case runtime.ProblemTimeout, runtime.ProblemMemory, runtime.ProblemOutputTooLarge, runtime.ProblemStateTooLarge:
		return "limits"
	case runtime.ProblemInternal:
		return "other"
	}
	return "user_code"
}

// stateWrite is one state a turn's completion stores.
type stateWrite struct {
	key  store.StateKey
	data json.RawMessage
}

// turnStates are the states a turn set (st: nil for one it left as it
// was), each with its key: the user's, the conversation's, the bot's.
func turnStates(botID string, in *TurnInput, st runtime.States) []stateWrite {
	var out []stateWrite
	for _, x := range []stateWrite{
		{store.StateKey{BotID: botID, Scope: store.ScopeUser, OwnerID: in.UserID}, st.User},
		{store.StateKey{BotID: botID, Scope: store.ScopeConversation, OwnerID: in.ConversationID}, st.Conversation},
		{store.StateKey{BotID: botID, Scope: store.ScopeBot, OwnerID: botID}, st.Bot},
	} {
		if x.data != nil {
			out = append(out, x)
		}
	}
	return out
}

func (rt *Runtime) saveStates(ctx context.Context, tx store.Store, botID string, in *TurnInput, st runtime.States) error {
	for _, x := range turnStates(botID, in, st) {
		if err := tx.States().Put(ctx, x.key.BotID, x.key.Scope, x.key.OwnerID, x.data); err != nil {
			return err
		}
	}
	return nil
}

// sharedStates are the states outside the conversation that saveStates
// writes: the user's, the bot's.
func sharedStates(botID string, in *TurnInput, st runtime.States) []store.StateKey {
	var keys []store.StateKey
	for _, x := range turnStates(botID, in, st) {
		if x.key.Scope != store.ScopeConversation {
			keys = append(keys, x.key)
		}
	}
	return keys
}

// addCompletion gives out a turn's completion by what it changes beyond
// its conversation's rows (its state, logs): an issue (issue) makes it
// shared, its states listed all the same; the user's or the bot's state
// (shared) alone lets PostgreSQL batch it, those states locked first;
// else it is local.
func addCompletion(out BotOutput, complete func(ctx context.Context, tx store.Store) error, shared []store.StateKey, issue bool) {
	switch {
	case issue:
		out.WithCompletion(complete, shared...)
	case len(shared) > 0:
		out.WithStatesCompletion(shared, complete)
	default:
		out.WithLocalCompletion(complete)
	}
}

// tellStart tells out what the conversation's next turn starts with
// (startKeeper): what this one started with, with the states it set, unless
// it called the Runtime API (which may have changed anything) or failed.
func tellStart(out BotOutput, host runtime.Host, res runtime.TurnResult) {
	if h, _ := host.(*botHost); h == nil || h.called.Load() || res.Problem != nil {
		return
	}
	if res.States.User == nil && res.States.Conversation == nil && res.States.Bot == nil {
		if k, ok := out.(startKeeper); ok {
			k.keepStart()
		}
	} else if k, ok := out.(*turnOutput); ok {
		k.keepStartWith(res.States.User, res.States.Conversation, res.States.Bot)
	}
}

// botHost is what bot code reaches through `client`: the bot's own data,
// in Chat API shapes, with writes going through the turn's BotOutput.
type botHost struct {
	store store.Store
	botID string
	out   BotOutput
	api   RuntimeAPI
	// called is set by the first Runtime API call: it may have changed
	// what the conversation's next turn starts with.
	called atomic.Bool
}

// outside is called before the host steps outside what the turn's
// completion holds (effectGate).
func (h *botHost) outside(ctx context.Context) error {
	if g, ok := h.out.(effectGate); ok {
		return g.beforeOutside(ctx)
	}
	return nil
}

// Call runs a Runtime API operation through the Runtime API's use cases.
func (h *botHost) Call(ctx context.Context, op string, input map[string]any) (map[string]any, error) {
	h.called.Store(true)
	if op == "requestHandoff" {
		return h.requestHandoff(ctx, input)
	}
	if err := h.outside(ctx); err != nil {
		return nil, err
	}
	if h.api == nil {
		return nil, model.Errorf(model.ErrMethodNotFound, "client.%s is not available", op)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, model.Invalid("input: %v", err)
	}
	out, err := h.api.Invoke(ctx, h.botID, op, raw)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (h *botHost) CreateMessage(ctx context.Context, conversationID string, payload, metadata json.RawMessage, tags map[string]string) (func() map[string]any, error) {
	m, err := h.out.CreateMessage(ctx, OutgoingMessage{ConversationID: conversationID, Payload: payload, Metadata: metadata})
	if err != nil {
		return nil, err
	}
	// The stored payload: normalised, not the bot's.
	return func() map[string]any { return messageMap(m, nil) }, nil
}

func (h *botHost) CreateEvent(ctx context.Context, conversationID string, payload map[string]any) (map[string]any, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, model.Invalid("payload: %v", err)
	}
	if err := h.out.CreateEvent(ctx, OutgoingEvent{ConversationID: conversationID, Payload: p}); err != nil {
		return nil, err
	}
	return map[string]any{"id": nil, "createdAt": model.FormatTime(model.Now()), "payload": payload,
		"conversationId": conversationID, "userId": h.botID}, nil
}

func (h *botHost) GetMessage(ctx context.Context, id string) (map[string]any, error) {
	if err := h.outside(ctx); err != nil {
		return nil, err
	}
	m, err := h.store.Chat().GetMessage(ctx, h.botID, id)
	if err != nil {
		return nil, err
	}
	w := wire.NewMessage(m)
	return messageMap(&w, nil), nil
}

func (h *botHost) ListMessages(ctx context.Context, conversationID, nextToken string) ([]map[string]any, string, error) {
	if err := h.outside(ctx); err != nil {
		return nil, "", err
	}
	ms, next, err := h.store.Chat().ListMessages(ctx, h.botID, conversationID, store.Page{Token: nextToken})
	if err != nil {
		return nil, "", err
	}
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		w := wire.NewMessage(m)
		out = append(out, messageMap(&w, nil))
	}
	return out, next, nil
}

func (h *botHost) GetUser(ctx context.Context, id string) (map[string]any, error) {
	if err := h.outside(ctx); err != nil {
		return nil, err
	}
	u, err := h.store.Chat().GetUser(ctx, h.botID, id)
	if err != nil {
		return nil, err
	}
	return userMap(wire.NewUser(u)), nil
}

func (h *botHost) GetConversation(ctx context.Context, id string) (map[string]any, error) {
	if err := h.outside(ctx); err != nil {
		return nil, err
	}
	c, err := h.store.Chat().GetConversation(ctx, h.botID, id)
	if err != nil {
		return nil, err
	}
	return conversationMap(wire.NewConversation(c)), nil
}

// requestHandoff is Parley's client.requestHandoff({ conversationId?,
// reason? }): the conversation waits for an operator, stored with the
// turn's completion (BotOutput.RequestHandoff).
func (h *botHost) requestHandoff(ctx context.Context, input map[string]any) (map[string]any, error) {
	conv, _ := input["conversationId"].(string)
	reason, _ := input["reason"].(string)
	if v, ok := input["conversationId"]; ok && v != nil {
		if _, isStr := v.(string); !isStr {
			return nil, model.Invalid("conversationId: must be a string")
		}
	}
	if v, ok := input["reason"]; ok && v != nil {
		if _, isStr := v.(string); !isStr {
			return nil, model.Invalid("reason: must be a string")
		}
	}
	if err := h.out.RequestHandoff(ctx, conv, reason); err != nil {
		return nil, err
	}
	return map[string]any{"handoff": map[string]any{"status": model.HandoffWaiting}}, nil
}
