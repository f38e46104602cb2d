package webchat

import (
	"net/http"
	"strconv"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/service"
	"github.com/parley-bots/parley/internal/store"
)

// NewAdminHandler serves the Admin API operations the dashboard needs and
// the Botpress Admin API lacks (docs/dashboard.md):
//
//	GET /v1/admin/bots/{id}/conversations
//	GET /v1/admin/bots/{id}/conversations/{conversationId}/messages
//
// with the Admin API's credentials (Authorization: Bearer, x-workspace-id),
// pagination (nextToken, pageSize) and error body. Mount both patterns.
func NewAdminHandler(svc *service.Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/admin/bots/{id}/conversations", func(w http.ResponseWriter, r *http.Request) {
		c, p, err := adminCaller(svc, r)
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		convs, next, err := svc.AdminListConversations(r.Context(), c, r.PathValue("id"), p)
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		out := make([]map[string]any, 0, len(convs))
		for _, ac := range convs {
			v := map[string]any{"id": ac.Conversation.ID, "ownerId": ac.Conversation.OwnerID,
				"createdAt": model.FormatTime(ac.Conversation.CreatedAt), "updatedAt": model.FormatTime(ac.Conversation.UpdatedAt)}
			if ac.LastMessage != nil {
				v["lastMessage"] = service.ChatMessage(ac.LastMessage)
				v["updatedAt"] = model.FormatTime(ac.LastMessage.CreatedAt)
			}
			out = append(out, v)
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"conversations": out, "meta": meta{next}})
	})
	mux.HandleFunc("GET /v1/admin/bots/{id}/conversations/{conversationId}/messages", func(w http.ResponseWriter, r *http.Request) {
		c, p, err := adminCaller(svc, r)
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		ms, us, next, err := svc.AdminListMessages(r.Context(), c, r.PathValue("id"), r.PathValue("conversationId"), p)
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		msgs := make([]service.ChatMessageView, 0, len(ms))
		for _, m := range ms {
			msgs = append(msgs, service.ChatMessage(m))
		}
		users := make([]service.ChatUserView, 0, len(us))
		for _, u := range us {
			users = append(users, service.ChatUser(u))
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"messages": msgs, "participants": users, "meta": meta{next}})
	})
	return httpx.CORS(mux)
}

func adminCaller(svc *service.Service, r *http.Request) (*service.Caller, store.Page, error) {
	var p store.Page
	pr, err := svc.Authenticate(r.Context(), httpx.BearerToken(r))
	if err != nil {
		return nil, p, err
	}
	c, err := svc.InWorkspace(r.Context(), pr, r.Header.Get("x-workspace-id"))
	if err != nil {
		return nil, p, err
	}
	q := r.URL.Query()
	p.Token = q.Get("nextToken")
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return nil, p, model.Errorf(model.ErrInvalidQuery, "pageSize: must be an integer from 1 to 100")
		}
		p.Size = n
	}
	return c, p, nil
}
