package files

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Passages implements searchFiles, listFilePassages and setFilePassages.
type Passages struct {
	store     store.Store
	lib       *Library
	models    Models
	log       *slog.Logger
	vectors   vectorCache // recent queries' vectors
	embedDown breaker     // the embeddings endpoint failed recently
}

// PassageMeta is a passage's meta object.
type PassageMeta struct {
	Type       string `json:"type,omitempty"`
	Subtype    string `json:"subtype,omitempty"`
	PageNumber int    `json:"pageNumber,omitempty"`
	Position   int    `json:"position"`
}

// PassageView is listFilePassages' passage.
type PassageView struct {
	ID      string      `json:"id"`
	Content string      `json:"content"`
	Meta    PassageMeta `json:"meta"`
}

func meta(p *model.Passage) PassageMeta {
	return PassageMeta{Type: "chunk", Subtype: p.Subtype, PageNumber: p.PageNumber, Position: p.Position}
}

// List returns a page of a file's passages, in order.
func (s *Passages) List(ctx context.Context, c Caller, fileID, token string, size int) ([]PassageView, Page, error) {
	if err := c.require("listFilePassages"); err != nil {
		return nil, Page{}, err
	}
	if _, err := s.lib.get(ctx, c.BotID, fileID); err != nil {
		return nil, Page{}, err
	}
	if size <= 0 || size > 100 {
		size = 100
	}
	after := -1
	if token != "" {
		n, err := strconv.Atoi(token)
		if err != nil {
			return nil, Page{}, model.Errorf(model.ErrInvalidQuery, "nextToken: invalid")
		}
		after = n
	}
	ps, err := s.store.Files().ListPassages(ctx, c.BotID, fileID, after, size+1)
	if err != nil {
		return nil, Page{}, err
	}
	var pg Page
	if len(ps) > size {
		ps = ps[:size]
		pg.NextToken = strconv.Itoa(ps[size-1].Position)
	}
	out := []PassageView{}
	for _, p := range ps {
		out = append(out, PassageView{ID: p.ID, Content: p.Content, Meta: meta(p)})
	}
	return out, pg, nil
}

// SetInput is a passage of setFilePassages.
type SetInput struct {
	Content    string `json:"content"`
	Type       string `json:"type"`
	PageNumber int    `json:"pageNumber"`
}

// Set replaces a file's passages (an indexed file is then
// indexing_completed).
func (s *Passages) Set(ctx context.Context, c Caller, fileID string, in []SetInput) error {
	if err := c.require("setFilePassages"); err != nil {
		return err
	}
	f, err := s.lib.get(ctx, c.BotID, fileID)
	if err != nil {
		return err
	}
	ps := make([]*model.Passage, 0, len(in))
	bc := ""
	for i, p := range in {
		if p.Content == "" {
			return model.Invalid("passages[%d].content: required", i)
		}
		if p.Type == "title" || p.Type == "subtitle" {
			bc = p.Content
		}
		ps = append(ps, &model.Passage{Content: p.Content, Subtype: p.Type, PageNumber: p.PageNumber, Breadcrumb: bc,
			Terms: passageTerms(p.Type, p.Content, bc)})
	}
	embedPassages(ctx, s.models.Embedder, s.log, fileID, ps)
	if err := s.store.Files().SetPassages(ctx, c.BotID, fileID, ps); err != nil {
		return err
	}
	if f.Status == model.FileIndexingPending || f.Status == model.FileIndexingFailed {
		f.Status, f.FailedReason = model.FileIndexingCompleted, ""
		return s.store.Files().UpdateFile(ctx, f)
	}
	return nil
}

// SearchInput is searchFiles' query.
type SearchInput struct {
	Query             string
	Tags              map[string]string
	Limit             int
	IncludeBreadcrumb bool
}

// SearchResult is a passage found by searchFiles.
type SearchResult struct {
	Content string          `json:"content"`
	Score   float64         `json:"score"`
	Meta    PassageMeta     `json:"meta"`
	File    SearchFile      `json:"file"`
	Context []SearchContext `json:"context,omitempty"`
}

// SearchFile is the file of a SearchResult.
type SearchFile struct {
	ID          string            `json:"id"`
	Key         string            `json:"key"`
	ContentType string            `json:"contentType"`
	Metadata    map[string]any    `json:"metadata"`
	Tags        map[string]string `json:"tags"`
	CreatedAt   string            `json:"createdAt"`
	UpdatedAt   string            `json:"updatedAt"`
}

// SearchContext is a breadcrumb of a SearchResult.
type SearchContext struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// Search ranks the bot's passages for a query by full-text search
// (stemmed, English and French), among files with the given tags.
func (s *Passages) Search(ctx context.Context, c Caller, in SearchInput) ([]SearchResult, error) {
	if err := c.require("searchFiles"); err != nil {
		return nil, err
	}
	if in.Query == "" {
		return nil, model.Errorf(model.ErrInvalidQuery, "query: required")
	}
	if in.Limit <= 0 || in.Limit > 50 {
		in.Limit = 10
	}
	terms := unique(Terms(in.Query))
	fetch := in.Limit
	if len(in.Tags) > 0 {
		fetch = in.Limit * 10
	}
	hits, err := s.store.Files().SearchPassages(ctx, c.BotID, terms, fetch)
	if err != nil {
		return nil, err
	}
	// With an embeddings endpoint, the nearest passages join the ranking;
	// when it fails, the full-text ranking stands alone.
	if s.models.Embedder != nil {
		sem, err := s.semantic(ctx, c.BotID, in.Query, fetch)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != errPaused {
				s.log.Warn("files: embeddings endpoint failed; searching by full text only", "bot", c.BotID, "err", err)
			}
		} else {
			hits = fuse(hits, sem, fetch)
		}
	}
	files := map[string]*model.File{}
	out := []SearchResult{}
	for _, h := range hits {
		f, ok := files[h.FileID]
		if !ok {
			f, err = s.store.Files().GetFile(ctx, c.BotID, h.FileID)
			if err != nil && !model.IsNotFound(err) {
				return nil, err
			}
			files[h.FileID] = f
		}
		if f == nil || !matches(f.Tags, in.Tags) {
			continue
		}
		r := SearchResult{Content: h.Content, Score: h.Score, Meta: meta(h), File: SearchFile{ID: f.ID, Key: f.Key,
			ContentType: f.ContentType, Metadata: f.Metadata, Tags: f.Tags, CreatedAt: iso(f.CreatedAt), UpdatedAt: iso(f.UpdatedAt)}}
		if r.File.Metadata == nil {
			r.File.Metadata = map[string]any{}
		}
		if r.File.Tags == nil {
			r.File.Tags = map[string]string{}
		}
		if in.IncludeBreadcrumb && h.Breadcrumb != "" {
			r.Context = []SearchContext{{Text: h.Breadcrumb, Type: "breadcrumb"}}
		}
		out = append(out, r)
		if len(out) == in.Limit {
			break
		}
	}
	return out, nil
}

func unique(ts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// passageTerms is what the index holds for a passage. Headings (title,
// subtitle) hold nothing: their words are in the breadcrumb of every
// passage below them, which search returns instead of the bare heading.
func passageTerms(subtype, content, breadcrumb string) string {
	if subtype == "title" || subtype == "subtitle" {
		return ""
	}
	return joinTerms(content, breadcrumb)
}

// joinTerms is the indexed text of a passage: its terms and its
// breadcrumb's (so a heading's words find the passages below it).
func joinTerms(content, breadcrumb string) string {
	ts := Terms(content)
	ts = append(ts, Terms(breadcrumb)...)
	out := ""
	for i, t := range ts {
		if i > 0 {
			out += " "
		}
		out += t
	}
	return out
}

// SearchForBot runs searchFiles for a bot's own code (the sandbox's
// client.searchFiles, through runtimeapi.FileSearcher): the input is the
// client's searchFiles input, the output its response body.
func (a *API) SearchForBot(ctx context.Context, botID string, input json.RawMessage) (any, error) {
	var in struct {
		Query             string            `json:"query"`
		Tags              map[string]string `json:"tags"`
		Limit             int               `json:"limit"`
		IncludeBreadcrumb bool              `json:"includeBreadcrumb"`
	}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, model.Invalid("invalid input: %v", err)
		}
	}
	res, err := a.Passages.Search(ctx, Caller{BotID: botID, Bot: true}, SearchInput{Query: in.Query, Tags: in.Tags,
		Limit: in.Limit, IncludeBreadcrumb: in.IncludeBreadcrumb})
	if err != nil {
		return nil, err
	}
	return map[string]any{"passages": res}, nil
}
