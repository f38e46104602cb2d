package webchat

import (
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/files"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/wire"
)

// ---- files

// owner is whom the scope's files belong to; their URLs are signed with
// the chat integration's key.
func owner(sc *conversations.WebchatScope, userID string) files.Owner {
	return files.Owner{BotID: sc.BotID, UserID: userID, Secret: sc.SigningKey()}
}

// renderFile renders a file with its URLs under the webchat's
// {public-url}/webchat/{clientId}.
func (h *handler) renderFile(sc *conversations.WebchatScope, f *model.File) wire.File {
	base := h.publicURL + "/webchat/" + sc.Webchat.WebhookID
	name := path.Base(f.Key)
	if i := strings.IndexByte(name, '-'); i == 6 {
		name = name[7:] // the component prefixes keys with 6 random chars and a dash
	}
	if name == "" || name == "." || name == "/" {
		name = "file"
	}
	o := owner(sc, "")
	return wire.NewFile(f,
		base+"/files/"+f.ID+"/"+o.Token(files.PurposeRead, f.ID)+"/"+url.PathEscape(name),
		base+"/files/"+f.ID+"/upload?token="+o.Token(files.PurposeUpload, f.ID))
}

func (h *handler) createFile(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope, c *conversations.Caller) error {
	var in files.Input
	if err := decode(w, r, &in); err != nil {
		return err
	}
	f, err := h.files.Create(r.Context(), owner(sc, c.UserID), in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, map[string]any{"file": h.renderFile(sc, f)})
}

// uploadFile receives a file's bytes (the component's PUT {uploadUrl},
// sent without x-user-key: the URL's token is the credential).
func (h *handler) uploadFile(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
	id, token := r.PathValue("id"), r.URL.Query().Get("token")
	if r.ContentLength > model.MaxFileSize {
		return h.files.RefuseUpload(r.Context(), owner(sc, ""), id, token, model.Errorf(model.ErrPayloadTooLarge,
			"the file is %d bytes; files may be at most 1 MB (%d bytes); the upload was refused and the file deleted",
			r.ContentLength, model.MaxFileSize))
	}
	f, err := h.files.Upload(r.Context(), owner(sc, ""), id, token, r.Body)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"file": h.renderFile(sc, f)})
}

// inlineTypes are served inline; anything else is a download. Scripts and
// markup (HTML, SVG) never render on Parley's origin, and the sandbox CSP
// keeps even a mislabelled file inert.
func inline(ct string) bool {
	ct = strings.ToLower(ct)
	if strings.HasPrefix(ct, "image/svg") {
		return false
	}
	return strings.HasPrefix(ct, "image/") || strings.HasPrefix(ct, "audio/") || strings.HasPrefix(ct, "video/") ||
		strings.HasPrefix(ct, "text/plain") || ct == "application/pdf"
}

func (h *handler) readFile(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
	f, data, err := h.files.Read(r.Context(), owner(sc, ""), r.PathValue("id"), r.PathValue("token"))
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", f.ContentType)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	hd.Set("Cache-Control", "private, max-age=86400")
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	disp := "attachment"
	if inline(f.ContentType) {
		disp = "inline"
	}
	hd.Set("Content-Disposition", disp+"; filename*=UTF-8''"+url.PathEscape(r.PathValue("name")))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
	return nil
}
