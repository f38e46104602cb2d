// Package web serves Parley's built-in pages from the embedded front-end
// build: the dashboard at /, each bot's hosted chat page at /w/{clientId},
// the embed script at /webchat.js and the hashed assets under /assets/.
package web

import (
	"bytes"
	"encoding/json"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	webdist "github.com/parley-bots/parley/web"
)

type handler struct {
	webchat *conversations.Webchat
	dist    fs.FS
	index   []byte // dashboard page with <base>
	chat    []byte // chat page template with <base>
	base    string // path of the public URL, ending in "/"
	assets  http.Handler
}

// NewHandler returns the handler of the built-in pages; mount it on
// "GET /{$}", "GET /assets/", "GET /w/{clientId}", "GET /webchat.js" and
// "GET /favicon.svg" (Routes lists them).
func NewHandler(webchat *conversations.Webchat, publicURL string) (http.Handler, error) {
	dist, err := fs.Sub(webdist.Dist, "dist")
	if err != nil {
		return nil, err
	}
	base := "/"
	if u, err := url.Parse(publicURL); err == nil && u.Path != "" {
		base = strings.TrimRight(u.Path, "/") + "/"
	}
	h := &handler{webchat: webchat, dist: dist, base: base, assets: http.FileServerFS(dist)}
	if h.index, err = h.page("index.html"); err != nil {
		return nil, err
	}
	if h.chat, err = h.page("chat.html"); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.dashboard)
	mux.HandleFunc("GET /index.html", h.dashboard)
	mux.HandleFunc("GET /w/{clientId}", h.chatPage)
	mux.HandleFunc("GET /webchat.js", h.static("webchat.js", "public, max-age=300"))
	mux.HandleFunc("GET /favicon.svg", h.static("favicon.svg", "public, max-age=86400"))
	mux.HandleFunc("GET /assets/", func(w http.ResponseWriter, r *http.Request) {
		// Names carry a content hash: cache them for good.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		h.assets.ServeHTTP(w, r)
	})
	return mux, nil
}

// Routes are the patterns to mount NewHandler's handler on.
var Routes = []string{"GET /{$}", "GET /index.html", "GET /assets/", "GET /w/{clientId}", "GET /webchat.js", "GET /favicon.svg"}

// page reads a built page and adds <base href> so that its relative asset
// URLs resolve from any path (/w/{clientId} included).
func (h *handler) page(name string) ([]byte, error) {
	b, err := fs.ReadFile(h.dist, name)
	if err != nil {
		return nil, err
	}
	tag := `<base href="` + html.EscapeString(h.base) + `">`
	return bytes.Replace(b, []byte("<head>"), []byte("<head>\n    "+tag), 1), nil
}

// The pages load nothing from elsewhere: scripts, styles and fonts come
// from this server. The chat page may show images and media bot messages
// point at, and bot-made custom blocks (blob: modules).
const (
	dashboardCSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
		"connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
	chatCSP = "default-src 'self'; script-src 'self' blob:; style-src 'self' 'unsafe-inline'; " +
		"img-src * data: blob:; media-src * data: blob:; connect-src 'self' *; font-src 'self' data:; " +
		"frame-ancestors *; base-uri 'self'; object-src 'none'"
)

func htmlHeaders(w http.ResponseWriter, csp string) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	hd.Set("Content-Security-Policy", csp)
}

func (h *handler) dashboard(w http.ResponseWriter, r *http.Request) {
	htmlHeaders(w, dashboardCSP)
	w.Header().Set("X-Frame-Options", "DENY")
	_, _ = w.Write(h.index)
}

// chatPage serves a bot's hosted chat page with its configuration.
func (h *handler) chatPage(w http.ResponseWriter, r *http.Request) {
	cfg, err := h.webchat.PageConfig(r.Context(), r.PathValue("clientId"))
	if err != nil {
		status := httpx.Status(err)
		if status >= 500 {
			httpx.Logger(r.Context()).Error("chat page", "err", err)
		}
		htmlHeaders(w, dashboardCSP)
		w.WriteHeader(status)
		msg := "This chat does not exist, or it was turned off."
		if model.TypeOf(err) != model.ErrNotFound {
			msg = "The chat could not be loaded. Please try again later."
		}
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
			`<title>Chat unavailable</title></head><body style="font-family:system-ui,sans-serif;display:grid;place-items:center;min-height:90vh;color:#334155">` +
			`<main><h1 style="font-size:1.3rem">Chat unavailable</h1><p>` + html.EscapeString(msg) + `</p></main></body></html>`))
		return
	}
	data, _ := json.Marshal(cfg) // escapes <, > and &: safe inside <script>
	page := bytes.Replace(h.chat, []byte(`<script id="parley-config" type="application/json">{}</script>`),
		[]byte(`<script id="parley-config" type="application/json">`+string(data)+`</script>`), 1)
	page = bytes.Replace(page, []byte("<title>Chat</title>"), []byte("<title>"+html.EscapeString(cfg.BotName)+" · Chat</title>"), 1)
	htmlHeaders(w, chatCSP)
	_, _ = w.Write(page)
}

func (h *handler) static(name, cache string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(h.dist, name)
		if err != nil {
			httpx.WriteError(w, r, model.NotFound(name))
			return
		}
		hd := w.Header()
		switch {
		case strings.HasSuffix(name, ".js"):
			hd.Set("Content-Type", "text/javascript; charset=utf-8")
		case strings.HasSuffix(name, ".svg"):
			hd.Set("Content-Type", "image/svg+xml")
		}
		hd.Set("Cache-Control", cache)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(b)
	}
}
