// Package llm calls OpenAI-compatible model endpoints that an operator
// configures: /v1/embeddings (semantic search) and /v1/chat/completions
// (composing an answer from passages). Ollama, vLLM, llama.cpp's server
// and hosted APIs speak this protocol. Nothing is called unless a URL is
// configured. Standard library only.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultTimeout bounds one call when the Endpoint's Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxResponse bounds the body read from an endpoint.
const maxResponse = 64 << 20

// Endpoint is one configured endpoint: its full URL (…/v1/embeddings or
// …/v1/chat/completions), the model to ask for, and an optional API key
// sent as a Bearer token.
type Endpoint struct {
	URL     string
	Model   string
	APIKey  string
	Timeout time.Duration
	Client  *http.Client // nil: http.DefaultClient
}

// Embedder embeds texts with an /v1/embeddings endpoint.
type Embedder struct{ Endpoint }

// Generator completes chats with a /v1/chat/completions endpoint.
type Generator struct{ Endpoint }

// Embed returns one vector per text, in order.
func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	var res struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := e.post(ctx, map[string]any{"model": e.Model, "input": texts}, &res); err != nil {
		return nil, err
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %d vectors for %d inputs", len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, d := range res.Data {
		idx := d.Index
		if idx < 0 || idx >= len(texts) || out[idx] != nil {
			idx = i // servers that leave index out
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: empty vector for input %d", idx)
		}
		out[idx] = d.Embedding
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings: no vector for input %d", i)
		}
	}
	return out, nil
}

// Message is a chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Complete returns the first choice's content.
func (g Generator) Complete(ctx context.Context, messages []Message) (string, error) {
	var res struct {
		Choices []struct {
			Message Message `json:"message"`
		} `json:"choices"`
	}
	if err := g.post(ctx, map[string]any{"model": g.Model, "messages": messages, "temperature": 0}, &res); err != nil {
		return "", err
	}
	if len(res.Choices) == 0 || strings.TrimSpace(res.Choices[0].Message.Content) == "" {
		return "", errors.New("chat completions: empty answer")
	}
	return strings.TrimSpace(res.Choices[0].Message.Content), nil
}

func (e Endpoint) post(ctx context.Context, body any, out any) error {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return fmt.Errorf("%s: %s: %s", e.URL, res.Status, msg)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: invalid response: %w", e.URL, err)
	}
	return nil
}
