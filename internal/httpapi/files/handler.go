// Package files serves the Files API (/v1/files/...) of @botpress/client
// 1.45.0 over the use cases of internal/files, with the Runtime API's
// credentials (bot API keys, bot tokens, members' PATs with x-bot-id).
package files

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	fl "github.com/parley-bots/parley/internal/files"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	rt "github.com/parley-bots/parley/internal/runtimeapi"
)

// BodyLimit bounds JSON request bodies (the Files interface, 1 MB); an
// upload URL takes up to the file's declared size (model.MaxUploadSize).
const BodyLimit = model.MaxFileSize

// Authenticator checks a bearer token for a bot, or an integration's
// credential acting for a bot that installed it (runtimeapi.Credentials).
type Authenticator interface {
	Authenticate(ctx context.Context, token, botID string) (*rt.Caller, error)
	AuthenticateIntegration(ctx context.Context, token, botID, integrationID string) (*rt.Caller, error)
}

// Handler serves the Files API.
type Handler struct {
	api    *fl.API
	creds  Authenticator
	limits *httpx.Limits
	mux    *httpx.Mux
	kbs    *httpx.Mux // /v1/files/knowledge-bases...: apart, as PUT knowledge-bases/{id} and PUT {id}/passages overlap
}

// NewHandler returns the Files API handler; it expects full paths
// (/v1/files/...). limits (nil: none) bound each bot's request rate.
func NewHandler(api *fl.API, creds Authenticator, limits *httpx.Limits) http.Handler {
	h := &Handler{api: api, creds: creds, limits: limits, mux: httpx.NewMux(), kbs: httpx.NewMux()}
	h.routes()
	return httpx.CORS(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/files/knowledge-bases" || strings.HasPrefix(r.URL.Path, "/v1/files/knowledge-bases/") {
			h.kbs.ServeHTTP(w, r)
			return
		}
		h.mux.ServeHTTP(w, r)
	}))
}

type botHandler func(w http.ResponseWriter, r *http.Request, c fl.Caller) error

func (h *Handler) routes() {
	m := h.mux
	const p = "/v1/files"
	route := func(pattern string, fn botHandler) { m.Handle(pattern, h.limited(fn)) }
	route("PUT "+p, h.upsertFile)
	route("GET "+p, h.listFiles)
	route("GET "+p+"/search", h.searchFiles)
	route("GET "+p+"/tags", h.listFileTags)
	route("GET "+p+"/tags/{tag}/values", h.listFileTagValues)
	route("GET "+p+"/{id}", h.getFile)
	route("PUT "+p+"/{id}", h.updateFileMetadata)
	route("DELETE "+p+"/{id}", h.deleteFile)
	route("GET "+p+"/{id}/passages", h.listFilePassages)
	route("PUT "+p+"/{id}/passages", h.setFilePassages)
	route("POST "+p+"/{idOrKey}/{destinationKey}", h.copyFile)
	// The URLs a file carries: upload (PUT, single-use) and content (GET).
	m.Handle("PUT "+p+"/upload/{ref}/{token}", httpx.Handler(h.upload))
	m.Handle("GET "+p+"/content/{ref}/{token}/{name}", httpx.Handler(h.content))
	m.HandleFunc(p+"/", httpx.NoRoute)

	k := h.kbs
	k.Handle("POST "+p+"/knowledge-bases", h.limited(h.createKnowledgeBase))
	k.Handle("GET "+p+"/knowledge-bases", h.limited(h.listKnowledgeBases))
	k.Handle("PUT "+p+"/knowledge-bases/{id}", h.limited(h.updateKnowledgeBase))
	k.Handle("DELETE "+p+"/knowledge-bases/{id}", h.limited(h.deleteKnowledgeBase))
	k.HandleFunc(p+"/knowledge-bases/", httpx.NoRoute)
}

// limited authenticates the caller and bounds the body (JSON operations).
func (h *Handler) limited(fn botHandler) http.Handler { return httpx.LimitBody(BodyLimit, h.bot(fn)) }

func caller(c *rt.Caller) fl.Caller {
	return fl.Caller{BotID: c.BotID, Bot: c.Kind == rt.KindBot || c.Kind == rt.KindIntegration, Role: c.Role}
}

func (h *Handler) bot(fn botHandler) http.Handler {
	return httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		var c *rt.Caller
		var err error
		if id := r.Header.Get("x-integration-id"); id != "" {
			// An integration's getFile/upsertFile for a bot that installed it.
			c, err = h.creds.AuthenticateIntegration(r.Context(), httpx.BearerToken(r), r.Header.Get("x-bot-id"), id)
		} else {
			c, err = h.creds.Authenticate(r.Context(), httpx.BearerToken(r), r.Header.Get("x-bot-id"))
		}
		if err != nil {
			return err
		}
		if err := h.limits.AllowBot(c.BotID); err != nil {
			return err
		}
		return fn(w, r, caller(c))
	})
}

func ok(w http.ResponseWriter, v any) error { return httpx.JSON(w, http.StatusOK, v) }

var empty = struct{}{}

func decode(r *http.Request, dst any) error { return httpx.Decode(r, dst, false) }

// tagsQuery reads tags.<name>=<value> (the client's qs allowDots form)
// and tags[<name>]=<value>.
func tagsQuery(q url.Values) map[string]string {
	tags := map[string]string{}
	for k, vs := range q {
		name, ok := strings.CutPrefix(k, "tags.")
		if !ok {
			if n, ok2 := strings.CutPrefix(k, "tags["); ok2 && strings.HasSuffix(n, "]") {
				name, ok = strings.TrimSuffix(n, "]"), true
			}
		}
		if ok && len(vs) > 0 {
			tags[name] = vs[0]
		}
	}
	return tags
}

func intQuery(q url.Values, name string) (int, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, model.Errorf(model.ErrInvalidQuery, "%s: must be an integer", name)
	}
	return n, nil
}

func (h *Handler) upsertFile(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	var in fl.UpsertInput
	if err := decode(r, &in); err != nil {
		return err
	}
	f, err := h.api.Files.Upsert(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"file": f})
}

func (h *Handler) getFile(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	f, err := h.api.Files.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"file": f})
}

func (h *Handler) listFiles(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	q := r.URL.Query()
	size, err := intQuery(q, "pageSize")
	if err != nil {
		return err
	}
	in := fl.ListInput{NextToken: q.Get("nextToken"), PageSize: size, SortField: q.Get("sortField"),
		SortDirection: q.Get("sortDirection"), Tags: tagsQuery(q), IDs: q["ids"]}
	if s := q.Get("indexed"); s != "" {
		b := s == "true"
		in.Indexed = &b
	}
	files, pg, err := h.api.Files.List(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"files": files, "meta": pg})
}

func (h *Handler) updateFileMetadata(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return httpx.TooLarge(BodyLimit)
	}
	var in fl.MetadataInput
	if err := httpx.DecodeBytes(body, &in, false); err != nil {
		return err
	}
	var probe map[string]json.RawMessage
	_ = json.Unmarshal(body, &probe)
	_, in.ExpiresAtSet = probe["expiresAt"]
	f, err := h.api.Files.UpdateMetadata(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"file": f})
}

func (h *Handler) deleteFile(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	if err := h.api.Files.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h *Handler) copyFile(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	var in struct {
		Overwrite bool `json:"overwrite"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	dst := c
	if other := r.Header.Get("x-destination-bot-id"); other != "" && other != c.BotID {
		dc, err := h.creds.Authenticate(r.Context(), httpx.BearerToken(r), other)
		if err != nil {
			return err
		}
		dst = caller(dc)
	}
	f, err := h.api.Files.Copy(r.Context(), c, dst, r.PathValue("idOrKey"), r.PathValue("destinationKey"), in.Overwrite)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"file": f})
}

func (h *Handler) searchFiles(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	q := r.URL.Query()
	limit, err := intQuery(q, "limit")
	if err != nil {
		return err
	}
	res, err := h.api.Passages.Search(r.Context(), c, fl.SearchInput{Query: q.Get("query"), Tags: tagsQuery(q), Limit: limit,
		IncludeBreadcrumb: q.Get("includeBreadcrumb") == "true"})
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"passages": res})
}

func (h *Handler) listFilePassages(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	q := r.URL.Query()
	size, err := intQuery(q, "pageSize")
	if err != nil {
		return err
	}
	if size == 0 {
		if size, err = intQuery(q, "limit"); err != nil {
			return err
		}
	}
	ps, pg, err := h.api.Passages.List(r.Context(), c, r.PathValue("id"), q.Get("nextToken"), size)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"passages": ps, "meta": pg})
}

func (h *Handler) setFilePassages(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	var in struct {
		Passages []fl.SetInput `json:"passages"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := h.api.Passages.Set(r.Context(), c, r.PathValue("id"), in.Passages); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h *Handler) listFileTags(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	q := r.URL.Query()
	size, err := intQuery(q, "pageSize")
	if err != nil {
		return err
	}
	tags, pg, err := h.api.Files.Tags(r.Context(), c, q.Get("nextToken"), size)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"tags": tags, "meta": pg})
}

func (h *Handler) listFileTagValues(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	q := r.URL.Query()
	size, err := intQuery(q, "pageSize")
	if err != nil {
		return err
	}
	vals, pg, err := h.api.Files.TagValues(r.Context(), c, r.PathValue("tag"), q.Get("nextToken"), size)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"values": vals, "meta": pg})
}

func (h *Handler) createKnowledgeBase(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	var in fl.KBInput
	if err := decode(r, &in); err != nil {
		return err
	}
	kb, err := h.api.KnowledgeBases.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"knowledgeBase": kb})
}

func (h *Handler) updateKnowledgeBase(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	var in fl.KBInput
	if err := decode(r, &in); err != nil {
		return err
	}
	kb, err := h.api.KnowledgeBases.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"knowledgeBase": kb})
}

func (h *Handler) deleteKnowledgeBase(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	if err := h.api.KnowledgeBases.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h *Handler) listKnowledgeBases(w http.ResponseWriter, r *http.Request, c fl.Caller) error {
	q := r.URL.Query()
	size, err := intQuery(q, "pageSize")
	if err != nil {
		return err
	}
	kbs, pg, err := h.api.KnowledgeBases.List(r.Context(), c, tagsQuery(q), q.Get("nextToken"), size)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"knowledgeBases": kbs, "meta": pg})
}

// upload takes a file's content at its upload URL (no other credential).
func (h *Handler) upload(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > model.MaxUploadSize {
		return model.Errorf(model.ErrPayloadTooLarge, "uploads may be at most 100 MB (%d bytes)", model.MaxUploadSize)
	}
	body := http.MaxBytesReader(w, r.Body, model.MaxUploadSize+1)
	f, err := h.api.Files.Upload(r.Context(), r.PathValue("ref"), r.PathValue("token"), r.ContentLength, body)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"file": f})
}

// content serves a file's bytes at its URL.
func (h *Handler) content(w http.ResponseWriter, r *http.Request) error {
	f, data, err := h.api.Files.Content(r.Context(), r.PathValue("ref"), r.PathValue("token"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", f.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(data)
	return err
}
