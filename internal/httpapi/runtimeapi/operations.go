package runtimeapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/parley-bots/parley/internal/model"
	rt "github.com/parley-bots/parley/internal/runtimeapi"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// ---- users

func users(us []*model.ChatUser) []wire.RuntimeUser {
	out := make([]wire.RuntimeUser, len(us))
	for i, u := range us {
		out[i] = wire.NewRuntimeUser(u)
	}
	return out
}

func (h usersOps) createUser(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.UserInput
	if err := decode(r, &in); err != nil {
		return err
	}
	u, err := h.api.Users.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"user": wire.NewRuntimeUser(u)})
}

func (h usersOps) getOrCreateUser(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.UserInput
	if err := decode(r, &in); err != nil {
		return err
	}
	u, created, err := h.api.Users.GetOrCreate(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"user": wire.NewRuntimeUser(u), "meta": map[string]bool{"created": created}})
}

func (h usersOps) getUser(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	u, err := h.api.Users.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"user": wire.NewRuntimeUser(u)})
}

func (h usersOps) updateUser(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.UserUpdate
	if err := decode(r, &in); err != nil {
		return err
	}
	u, err := h.api.Users.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"user": wire.NewRuntimeUser(u)})
}

func (h usersOps) deleteUser(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Users.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h usersOps) listUsers(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	us, next, err := h.api.Users.List(r.Context(), c, rt.ListUsersQuery{NextToken: token, PageSize: size,
		ConversationID: q.Get("conversationId"), Tags: mapOf(q, "tags"), SortField: q.Get("sortField"), SortDirection: q.Get("sortDirection")})
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"users": users(us), "meta": meta(next)})
}

// ---- conversations and participants

func (h base) conversation(ctx context.Context, c *rt.Caller, conv *model.Conversation) (wire.RuntimeConversation, error) {
	n, err := h.api.Conversations.MessageCount(ctx, c, conv.ID)
	return wire.NewRuntimeConversation(conv, n), err
}

func (h base) writeConversation(w http.ResponseWriter, r *http.Request, c *rt.Caller, conv *model.Conversation, created *bool) error {
	v, err := h.conversation(r.Context(), c, conv)
	if err != nil {
		return err
	}
	out := map[string]any{"conversation": v}
	if created != nil {
		out["meta"] = map[string]bool{"created": *created}
	}
	return ok(w, out)
}

func (h conversationsOps) createConversation(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.ConversationInput
	if err := decode(r, &in); err != nil {
		return err
	}
	conv, err := h.api.Conversations.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return h.writeConversation(w, r, c, conv, nil)
}

func (h conversationsOps) getOrCreateConversation(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.ConversationInput
	if err := decode(r, &in); err != nil {
		return err
	}
	conv, created, err := h.api.Conversations.GetOrCreate(r.Context(), c, in)
	if err != nil {
		return err
	}
	return h.writeConversation(w, r, c, conv, &created)
}

func (h conversationsOps) getConversation(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	conv, err := h.api.Conversations.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return h.writeConversation(w, r, c, conv, nil)
}

func (h conversationsOps) updateConversation(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.ConversationUpdate
	if err := decode(r, &in); err != nil {
		return err
	}
	conv, err := h.api.Conversations.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return h.writeConversation(w, r, c, conv, nil)
}

func (h conversationsOps) deleteConversation(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Conversations.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h conversationsOps) listConversations(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	convs, next, err := h.api.Conversations.List(r.Context(), c, rt.ListConversationsQuery{NextToken: token, PageSize: size,
		Tags: mapOf(q, "tags"), ParticipantIDs: listOf(q, "participantIds"), IntegrationName: q.Get("integrationName"),
		Channel: q.Get("channel"), SortField: q.Get("sortField"), SortDirection: q.Get("sortDirection")})
	if err != nil {
		return err
	}
	out := make([]wire.RuntimeConversation, len(convs))
	for i, conv := range convs {
		if out[i], err = h.conversation(r.Context(), c, conv); err != nil {
			return err
		}
	}
	return ok(w, map[string]any{"conversations": out, "meta": meta(next)})
}

func (h conversationsOps) addParticipant(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in struct {
		UserID string `json:"userId"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	u, err := h.api.Conversations.AddParticipant(r.Context(), c, r.PathValue("id"), in.UserID)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"participant": wire.NewRuntimeUser(u)})
}

// requestHandoff is Parley's POST /v1/chat/conversations/{id}/handoff
// (docs/runtime-api.md): a bot over HTTP asks for a human.
func (h conversationsOps) requestHandoff(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in struct {
		Reason string `json:"reason"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	x, err := h.api.Conversations.RequestHandoff(r.Context(), c, r.PathValue("id"), in.Reason)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"handoff": map[string]any{"conversationId": x.ConversationID, "status": x.Status,
		"reason": x.Reason, "requestedBy": x.RequestedBy, "requestedAt": model.FormatTime(x.RequestedAt)}})
}

func (h conversationsOps) getParticipant(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	u, err := h.api.Conversations.GetParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"participant": wire.NewRuntimeUser(u)})
}

func (h conversationsOps) removeParticipant(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Conversations.RemoveParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h conversationsOps) listParticipants(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	token, size, err := pageOf(r.URL.Query())
	if err != nil {
		return err
	}
	us, next, err := h.api.Conversations.ListParticipants(r.Context(), c, r.PathValue("id"), token, size)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"participants": users(us), "meta": meta(next)})
}

// ---- messages

func messages(ms []*model.Message) []wire.RuntimeMessage {
	out := make([]wire.RuntimeMessage, len(ms))
	for i, m := range ms {
		out[i] = wire.NewRuntimeMessage(m)
	}
	return out
}

func (h messagesOps) createMessage(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.MessageInput
	if err := decode(r, &in); err != nil {
		return err
	}
	m, err := h.api.Messages.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"message": wire.NewRuntimeMessage(m)})
}

func (h messagesOps) getOrCreateMessage(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.MessageInput
	if err := decode(r, &in); err != nil {
		return err
	}
	m, created, err := h.api.Messages.GetOrCreate(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"message": wire.NewRuntimeMessage(m), "meta": map[string]bool{"created": created}})
}

func (h messagesOps) getMessage(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	m, err := h.api.Messages.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"message": wire.NewRuntimeMessage(m)})
}

func (h messagesOps) updateMessage(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.MessageUpdate
	if err := decode(r, &in); err != nil {
		return err
	}
	m, err := h.api.Messages.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"message": wire.NewRuntimeMessage(m)})
}

func (h messagesOps) deleteMessage(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Messages.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h messagesOps) listMessages(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	ms, next, err := h.api.Messages.List(r.Context(), c, rt.ListMessagesQuery{NextToken: token, PageSize: size,
		ConversationID: q.Get("conversationId"), Tags: mapOf(q, "tags")})
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"messages": messages(ms), "meta": meta(next)})
}

func (h messagesOps) importMessages(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in struct {
		Messages []rt.ImportInput `json:"messages"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Messages == nil {
		return model.Invalid("messages: required")
	}
	ms, err := h.api.Messages.Import(r.Context(), c, in.Messages)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"messages": messages(ms)})
}

func (h messagesOps) initializeIncomingMessage(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.IncomingInput
	if err := decode(r, &in); err != nil {
		return err
	}
	res, err := h.api.Messages.InitializeIncoming(r.Context(), c, in)
	if err != nil {
		return err
	}
	conv, err := h.conversation(r.Context(), c, res.Conversation)
	if err != nil {
		return err
	}
	out := map[string]any{"user": wire.NewRuntimeUser(res.User), "conversation": conv}
	if res.Message != nil {
		out["message"] = wire.NewRuntimeMessage(res.Message)
	}
	return ok(w, out)
}

// ---- events

func (h eventsOps) createEvent(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.EventInput
	if err := decode(r, &in); err != nil {
		return err
	}
	e, err := h.api.Events.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"event": wire.NewRuntimeEvent(e)})
}

func (h eventsOps) getEvent(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	e, err := h.api.Events.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"event": wire.NewRuntimeEvent(e)})
}

func (h eventsOps) listEvents(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	es, next, err := h.api.Events.List(r.Context(), c, rt.ListEventsQuery{NextToken: token, PageSize: size,
		EventFilter: store.EventFilter{Type: q.Get("type"), ConversationID: q.Get("conversationId"), UserID: q.Get("userId"),
			MessageID: q.Get("messageId"), WorkflowID: q.Get("workflowId"), Status: q.Get("status")}})
	if err != nil {
		return err
	}
	out := make([]wire.RuntimeEvent, len(es))
	for i, e := range es {
		out[i] = wire.NewRuntimeEvent(e)
	}
	return ok(w, map[string]any{"events": out, "meta": meta(next)})
}

func (h eventsOps) cancelScheduledEvent(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Events.CancelScheduled(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

// ---- states

func stateKey(r *http.Request) rt.StateKey {
	return rt.StateKey{Type: r.PathValue("type"), ID: r.PathValue("id"), Name: r.PathValue("name")}
}

func (h statesOps) getState(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	st, err := h.api.States.Get(r.Context(), c, stateKey(r))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"state": wire.NewState(st), "meta": map[string]bool{"cached": false}})
}

func (h statesOps) setState(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.StateInput
	if err := decode(r, &in); err != nil {
		return err
	}
	k := stateKey(r)
	st, err := h.api.States.Set(r.Context(), c, k, in)
	if err != nil {
		return err
	}
	if st == nil { // a null payload deleted the state
		return ok(w, map[string]any{"state": wire.State{BotID: c.BotID, Name: k.Name, Type: k.Type, Payload: json.RawMessage("{}")}})
	}
	return ok(w, map[string]any{"state": wire.NewState(st)})
}

func (h statesOps) getOrSetState(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.StateInput
	if err := decode(r, &in); err != nil {
		return err
	}
	st, err := h.api.States.GetOrSet(r.Context(), c, stateKey(r), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"state": wire.NewState(st), "meta": map[string]bool{"cached": false}})
}

func (h statesOps) patchState(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.StateInput
	if err := decode(r, &in); err != nil {
		return err
	}
	st, err := h.api.States.Patch(r.Context(), c, stateKey(r), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"state": wire.NewState(st)})
}

func (h statesOps) setStateExpiry(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in struct {
		Expiry *int64 `json:"expiry"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	st, err := h.api.States.SetExpiry(r.Context(), c, stateKey(r), in.Expiry)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"state": wire.NewState(st)})
}
