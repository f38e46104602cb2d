package runtimeapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	rt "github.com/parley-bots/parley/internal/runtimeapi"
)

// An integration calls the Runtime API with x-integration-id: its tags are
// its own, so Parley prefixes the tag keys it sends with its alias on the
// bot ("telegram:chatId"), as Botpress does, and shows it its own tags
// without the prefix. Its events are named after it too
// ("telegram:reaction"). Requests and responses of integration callers are
// rewritten here, once for every operation.

// asIntegration rewrites r for an integration caller and returns the
// writer that rewrites its response.
func asIntegration(w http.ResponseWriter, r *http.Request, c *rt.Caller) (*integrationWriter, error) {
	alias := c.Integration
	q := r.URL.Query()
	changed := false
	for k, vs := range q {
		for _, prefix := range []string{"tags.", "tags["} {
			if key, ok := strings.CutPrefix(k, prefix); ok {
				end := ""
				if prefix == "tags[" {
					key, end = strings.TrimSuffix(key, "]"), "]"
				}
				delete(q, k)
				q[prefix+model.IntegrationTag(alias, key)+end] = vs
				changed = true
			}
		}
	}
	if changed {
		r.URL.RawQuery = q.Encode()
	}
	if r.Body != nil && r.ContentLength != 0 && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err // the body limit's 413
		}
		var v any
		if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &v) == nil {
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/chat/events" {
				if t, ok := m["type"].(string); ok && t != "" {
					m["type"] = model.IntegrationTag(alias, t)
				}
			}
			v = prefixTags(alias, v)
			if out, err := json.Marshal(v); err == nil {
				raw = out
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
	}
	return &integrationWriter{ResponseWriter: w, alias: alias}, nil
}

// prefixTags prefixes the keys of every "tags" object and the entries of
// every "discriminateByTags" array.
func prefixTags(alias string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "tags":
				if tags, ok := val.(map[string]any); ok {
					out := make(map[string]any, len(tags))
					for tk, tv := range tags {
						out[model.IntegrationTag(alias, tk)] = tv
					}
					x[k] = out
					continue
				}
			case "discriminateByTags":
				if keys, ok := val.([]any); ok {
					for i, key := range keys {
						if s, ok := key.(string); ok {
							keys[i] = model.IntegrationTag(alias, s)
						}
					}
					continue
				}
			}
			x[k] = prefixTags(alias, val)
		}
	case []any:
		for i := range x {
			x[i] = prefixTags(alias, x[i])
		}
	}
	return v
}

// unprefixTags shows the integration every "tags" object as its own.
func unprefixTags(alias string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if tags, ok := val.(map[string]any); ok && k == "tags" {
				strs := make(map[string]string, len(tags))
				for tk, tv := range tags {
					if s, ok := tv.(string); ok {
						strs[tk] = s
					}
				}
				out := map[string]any{}
				for tk, tv := range model.IntegrationTagsOut(alias, strs) {
					out[tk] = tv
				}
				x[k] = out
				continue
			}
			x[k] = unprefixTags(alias, val)
		}
	case []any:
		for i := range x {
			x[i] = unprefixTags(alias, x[i])
		}
	}
	return v
}

// integrationWriter holds a JSON response back and writes it with the
// integration's view of its tags.
type integrationWriter struct {
	http.ResponseWriter
	alias  string
	status int
	buf    bytes.Buffer
}

func (w *integrationWriter) WriteHeader(status int) { w.status = status }
func (w *integrationWriter) Write(p []byte) (int, error) {
	return w.buf.Write(p)
}

// flush writes the held response.
func (w *integrationWriter) flush() {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	body := w.buf.Bytes()
	if status < 300 && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		var v any
		if json.Unmarshal(body, &v) == nil {
			if out, err := json.Marshal(unprefixTags(w.alias, v)); err == nil {
				body = append(out, '\n')
			}
		}
	}
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(status)
	_, _ = w.ResponseWriter.Write(body)
}

func (h actionsOps) configureIntegration(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.ConfigureInput
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := h.api.Actions.ConfigureIntegration(r.Context(), c, in); err != nil {
		return err
	}
	return ok(w, empty)
}
