package admin

import (
	"encoding/json"
	"net/http"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
)

// publishFromBotJSON validates a bot JSON document ({ botJson }), creates a
// bot version from it and deploys it. The answer is the deployed bot and
// the new version; an invalid document is a 400 naming every JSON pointer.
func (h botOps) publishFromBotJSON(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in struct {
		BotJSON json.RawMessage `json:"botJson"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	v, version, err := h.bots.PublishBotJSON(r.Context(), c, r.PathValue("id"), in.BotJSON)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"bot": renderBot(v, h.publicURL, false), "version": renderVersion(version, false)})
}

// getBotJSON answers { botJson }: the document of the deployed version,
// as published (the same shape publishFromBotJson takes).
func (h botOps) getBotJSON(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	doc, err := h.bots.GetBotJSON(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"botJson": doc})
}
