package admin

import (
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/wire"
)

// Conversation browsing for the dashboard: Admin API operations Parley adds
// (the Botpress Admin API has no way to read a bot's conversations),
// documented in docs/dashboard.md, with the Admin API's credentials,
// pagination and error body.

// listBotConversations is GET /v1/admin/bots/{id}/conversations.
func (h botOps) listBotConversations(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	search := strings.TrimSpace(r.URL.Query().Get("search"))
	if len(search) > 200 {
		return model.Errorf(model.ErrInvalidQuery, "search: at most 200 characters")
	}
	convs, next, err := h.bots.ListConversations(r.Context(), c, r.PathValue("id"), search, pg)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(convs))
	for _, cs := range convs {
		v := map[string]any{"id": cs.Conversation.ID, "ownerId": cs.Conversation.OwnerID,
			"createdAt": model.FormatTime(cs.Conversation.CreatedAt), "updatedAt": model.FormatTime(cs.Conversation.UpdatedAt),
			"messageCount": cs.MessageCount}
		if cs.LastMessage != nil {
			v["lastMessage"] = wire.NewMessage(cs.LastMessage)
			v["updatedAt"] = model.FormatTime(cs.LastMessage.CreatedAt)
		}
		out = append(out, v)
	}
	return ok(w, map[string]any{"conversations": out, "meta": meta(next)})
}

// listConversationMessages is GET
// /v1/admin/bots/{id}/conversations/{conversationId}/messages.
func (h botOps) listConversationMessages(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ms, us, next, err := h.bots.ListConversationMessages(r.Context(), c, r.PathValue("id"), r.PathValue("conversationId"), pg)
	if err != nil {
		return err
	}
	msgs := make([]wire.Message, 0, len(ms))
	for _, m := range ms {
		msgs = append(msgs, wire.NewMessage(m))
	}
	users := make([]wire.User, 0, len(us))
	for _, u := range us {
		users = append(users, wire.NewUser(u))
	}
	return ok(w, map[string]any{"messages": msgs, "participants": users, "meta": meta(next)})
}
