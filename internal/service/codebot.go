package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/workflow"
)

// CodeBots returns the BotResolver that runs each bot's deployed JavaScript
// with engine. Bots without deployed code have nothing to run.
func (s *Service) CodeBots(engine *runtime.Engine) BotResolver {
	return func(ctx context.Context, botID string) (Bot, error) {
		b, err := s.store.Bots().GetByID(ctx, botID)
		if model.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if b.VersionID == "" || b.Code == "" {
			return nil, nil
		}
		if workflow.IsWorkflowCode(b.Code) {
			return s.workflowBot(engine, b), nil
		}
		return &codeBot{s: s, engine: engine, bot: b}, nil
	}
}

// codeBot runs one turn of a code-first bot on the version deployed when the
// turn started: a deploy in the middle of a turn does not affect it.
type codeBot struct {
	s      *Service
	engine *runtime.Engine
	bot    *model.Bot
}

// eventNamespace derives stable event ids for message turns, so a re-run
// after a crash sees the same event id.
var eventNamespace = uuid.MustParse("0b9f6d1e-3c57-4f0e-8d0a-7f2b8e5c4a91")

func (cb *codeBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	s, b := cb.s, cb.bot
	v, err := s.store.Bots().GetVersion(ctx, b.ID, b.VersionID)
	if err != nil {
		return err
	}
	rin, err := s.prepareTurn(ctx, b, v, in, out)
	if err != nil {
		return err
	}
	rin.Code = v.Code
	res := cb.engine.RunTurn(ctx, rin)
	if res.Err != nil {
		return res.Err
	}
	var problems []turnProblem
	if p := res.Problem; p != nil {
		problems = append(problems, turnProblem{p.Code, issueCategory(p.Code), p.Title, p.Description})
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if err := s.saveStates(ctx, tx, b.ID, in, res.States); err != nil {
			return err
		}
		return s.recordTurn(ctx, tx, b.ID, v.ID, rin.Event, res.Logs, "", problems)
	})
}

// prepareTurn builds the runtime input of a turn (all but the code): the
// event object, the stored message, user and conversation, and the states.
func (s *Service) prepareTurn(ctx context.Context, b *model.Bot, v *model.BotVersion, in *TurnInput, out BotOutput) (runtime.TurnInput, error) {
	ev, err := runtimeEvent(b.ID, in)
	if err != nil {
		return runtime.TurnInput{}, err
	}
	var msg map[string]any
	if in.Message != nil {
		msg = toMap(in.Message)
	}
	host := &botHost{s: s, botID: b.ID, out: out}
	user, _ := host.GetUser(ctx, in.UserID)
	conv, _ := host.GetConversation(ctx, in.ConversationID)
	states, err := s.loadStates(ctx, b.ID, in)
	if err != nil {
		return runtime.TurnInput{}, err
	}
	return runtime.TurnInput{BotID: b.ID, VersionID: v.ID, Timeout: time.Duration(b.MaxExecutionTime) * time.Second,
		Event: ev, Message: msg, User: user, Conversation: conv, States: states, Host: host}, nil
}

// turnProblem is a failure of bot code to record as an issue occurrence.
type turnProblem struct{ code, category, title, description string }

// recordTurn stores a turn's log lines and reports its problems as issues.
func (s *Service) recordTurn(ctx context.Context, tx store.Store, botID, versionID string, ev runtime.Event, logs []model.LogEntry, workflowID string, problems []turnProblem) error {
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

func (s *Service) loadStates(ctx context.Context, botID string, in *TurnInput) (runtime.States, error) {
	st := s.store.States()
	var out runtime.States
	var err error
	if out.User, err = st.Get(ctx, botID, store.ScopeUser, in.UserID); err != nil {
		return out, err
	}
	if out.Conversation, err = st.Get(ctx, botID, store.ScopeConversation, in.ConversationID); err != nil {
		return out, err
	}
	out.Bot, err = st.Get(ctx, botID, store.ScopeBot, botID)
	return out, err
}

func (s *Service) saveStates(ctx context.Context, tx store.Store, botID string, in *TurnInput, st runtime.States) error {
	for _, x := range []struct {
		scope, owner string
		data         json.RawMessage
	}{
		{store.ScopeUser, in.UserID, st.User},
		{store.ScopeConversation, in.ConversationID, st.Conversation},
		{store.ScopeBot, botID, st.Bot},
	} {
		if x.data == nil {
			continue
		}
		if err := tx.States().Put(ctx, botID, x.scope, x.owner, x.data); err != nil {
			return err
		}
	}
	return nil
}

// botHost is what bot code reaches through `client`: the bot's own data,
// in Chat API shapes, with writes going through the turn's BotOutput.
type botHost struct {
	s     *Service
	botID string
	out   BotOutput
}

func toMap(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func rawOrNil(m map[string]any) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	return json.Marshal(m)
}

func (h *botHost) CreateMessage(ctx context.Context, conversationID string, payload, metadata map[string]any, tags map[string]string) (map[string]any, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, model.Invalid("payload: %v", err)
	}
	meta, err := rawOrNil(metadata)
	if err != nil {
		return nil, model.Invalid("metadata: %v", err)
	}
	m, err := h.out.CreateMessage(ctx, OutgoingMessage{ConversationID: conversationID, Payload: p, Metadata: meta})
	if err != nil {
		return nil, err
	}
	return toMap(m), nil
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
	m, err := h.s.store.Chat().GetMessage(ctx, h.botID, id)
	if err != nil {
		return nil, err
	}
	return toMap(ChatMessage(m)), nil
}

func (h *botHost) ListMessages(ctx context.Context, conversationID, nextToken string) ([]map[string]any, string, error) {
	ms, next, err := h.s.store.Chat().ListMessages(ctx, h.botID, conversationID, store.Page{Token: nextToken})
	if err != nil {
		return nil, "", err
	}
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		out = append(out, toMap(ChatMessage(m)))
	}
	return out, next, nil
}

func (h *botHost) GetUser(ctx context.Context, id string) (map[string]any, error) {
	u, err := h.s.store.Chat().GetUser(ctx, h.botID, id)
	if err != nil {
		return nil, err
	}
	return toMap(ChatUser(u)), nil
}

func (h *botHost) GetConversation(ctx context.Context, id string) (map[string]any, error) {
	c, err := h.s.store.Chat().GetConversation(ctx, h.botID, id)
	if err != nil {
		return nil, err
	}
	return toMap(ChatConversation(c)), nil
}
