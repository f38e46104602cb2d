package files

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/llm"
	"github.com/parley-bots/parley/internal/model"
)

// Models are the optional model endpoints an operator configures (nil:
// none; nothing then leaves the machine). With an Embedder, passages are
// embedded when indexed and search fuses the nearest passages with the
// full-text ranking; with a Completer, a workflow's "query knowledge
// base" card composes its answer from the passages found.
type Models struct {
	Embedder  Embedder
	Completer Completer
}

// Embedder embeds texts (llm.Embedder: an OpenAI-compatible
// /v1/embeddings endpoint).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Completer completes a chat (llm.Generator: an OpenAI-compatible
// /v1/chat/completions endpoint).
type Completer interface {
	Complete(ctx context.Context, messages []llm.Message) (string, error)
}

// Bounds of the calls made to the model endpoints.
const (
	embedBatch        = 64               // texts per /v1/embeddings call when indexing
	queryEmbedTimeout = 5 * time.Second  // embedding a search's query
	answerTimeout     = 20 * time.Second // composing an answer
	rrfK              = 60               // reciprocal rank fusion's constant
)

// embedPassages gives the passages that hold terms (not bare headings)
// their embedding: the breadcrumb and the content. A failing endpoint
// leaves them without (search is then full-text for them) and is logged.
func embedPassages(ctx context.Context, emb Embedder, log *slog.Logger, fileID string, ps []*model.Passage) {
	if emb == nil {
		return
	}
	var todo []*model.Passage
	var texts []string
	for _, p := range ps {
		if p.Terms == "" {
			continue
		}
		text := p.Content
		if p.Breadcrumb != "" {
			text = p.Breadcrumb + "\n" + p.Content
		}
		todo = append(todo, p)
		texts = append(texts, text)
	}
	for from := 0; from < len(texts); from += embedBatch {
		to := min(from+embedBatch, len(texts))
		vs, err := emb.Embed(ctx, texts[from:to])
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("files: embeddings endpoint failed; the file's passages are searched by full text only", "file", fileID, "err", err)
			}
			for _, p := range todo {
				p.Embedding = nil
			}
			return
		}
		for i, v := range vs {
			todo[from+i].Embedding = v
		}
	}
}

// endpointPause is how long an endpoint that failed is left alone: the
// turns meanwhile use full text and extractive answers at once rather
// than each waiting for a failing or hanging endpoint.
const endpointPause = 30 * time.Second

// breaker remembers that an endpoint failed.
type breaker struct {
	mu    sync.Mutex
	until time.Time
}

var errPaused = errors.New("endpoint paused after a failure")

func (b *breaker) open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Now().Before(b.until)
}

func (b *breaker) failed() {
	b.mu.Lock()
	b.until = time.Now().Add(endpointPause)
	b.mu.Unlock()
}

// vectorCache keeps the vectors of recent queries: a turn searches each
// knowledge base with the same text, and a card may ask it again.
type vectorCache struct {
	mu    sync.Mutex
	items map[string][]float32
	order []string
}

const vectorCacheSize = 256

func (c *vectorCache) get(q string) []float32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[q]
}

func (c *vectorCache) put(q string, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string][]float32{}
	}
	if _, ok := c.items[q]; ok {
		return
	}
	c.items[q] = v
	c.order = append(c.order, q)
	if len(c.order) > vectorCacheSize {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
}

// queryVector embeds a search's query (cached; none while the endpoint is
// paused after a failure).
func (s *Passages) queryVector(ctx context.Context, query string) ([]float32, error) {
	if v := s.vectors.get(query); v != nil {
		return v, nil
	}
	if s.embedDown.open() {
		return nil, errPaused
	}
	ctx, cancel := context.WithTimeout(ctx, queryEmbedTimeout)
	defer cancel()
	vs, err := s.models.Embedder.Embed(ctx, []string{query})
	if err == nil && (len(vs) != 1 || len(vs[0]) == 0) {
		err = errors.New("no query vector")
	}
	if err != nil {
		s.embedDown.failed()
		return nil, err
	}
	s.vectors.put(query, vs[0])
	return vs[0], nil
}

// semantic returns the bot's embedded passages nearest to the query
// (cosine similarity), best first, at most limit.
func (s *Passages) semantic(ctx context.Context, botID, query string, limit int) ([]*model.Passage, error) {
	q, err := s.queryVector(ctx, query)
	if err != nil {
		return nil, err
	}
	ps, err := s.store.Files().EmbeddedPassages(ctx, botID)
	if err != nil {
		return nil, err
	}
	qn := norm(q)
	var out []*model.Passage
	for _, p := range ps {
		if len(p.Embedding) != len(q) || qn == 0 {
			continue // embedded by another model: re-index the file
		}
		pn := norm(p.Embedding)
		if pn == 0 {
			continue
		}
		var dot float64
		for i, x := range q {
			dot += float64(x) * float64(p.Embedding[i])
		}
		p.Score = dot / (qn * pn)
		if p.Score > 0 {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out[:min(len(out), limit)], nil
}

func norm(v []float32) float64 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	return math.Sqrt(n)
}

// fuse merges two rankings by reciprocal rank fusion: a passage scores
// the sum of 1/(rrfK+rank) over the rankings it is in. The result is
// best first, at most limit, with the fused score.
func fuse(a, b []*model.Passage, limit int) []*model.Passage {
	type entry struct {
		p     *model.Passage
		score float64
		order int
	}
	byID := map[string]*entry{}
	var all []*entry
	for _, list := range [][]*model.Passage{a, b} {
		for rank, p := range list {
			key := p.FileID + "\x00" + p.ID
			e := byID[key]
			if e == nil {
				e = &entry{p: p, order: len(all)}
				byID[key] = e
				all = append(all, e)
			}
			e.score += 1 / float64(rrfK+rank+1)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	out := make([]*model.Passage, 0, min(len(all), limit))
	for _, e := range all[:min(len(all), limit)] {
		p := *e.p
		p.Score = e.score
		out = append(out, &p)
	}
	return out
}
