package files

import (
	"context"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/readcache"
	"github.com/parley-bots/parley/internal/store"
)

// KnowledgeBases implements the knowledge-base operations: a knowledge
// base is a named set of the bot's files, those carrying its tags.
type KnowledgeBases struct {
	store store.Store
	// bases caches each bot's list for the turns (every text message of
	// every bot asks it, most bots have none): forgotten on this node
	// after a create, update or delete; another node's change is seen
	// within kbCacheTTL.
	bases readcache.TTL[string, []*model.KnowledgeBase]
}

const kbCacheTTL = time.Second

// forBot lists the bot's knowledge bases, from the cache or the store; the
// list is shared, read only.
func (s *KnowledgeBases) forBot(ctx context.Context, botID string) ([]*model.KnowledgeBase, error) {
	if kbs, ok := s.bases.Get(botID); ok {
		return kbs, nil
	}
	gen := s.bases.Generation()
	kbs, err := s.store.Files().ListKnowledgeBases(ctx, botID)
	if err != nil {
		return nil, err
	}
	s.bases.Put(botID, kbs, gen, kbCacheTTL)
	return kbs, nil
}

// KnowledgeBaseView is the client's knowledge base.
type KnowledgeBaseView struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Tags      map[string]string `json:"tags"`
	CreatedAt string            `json:"createdAt,omitempty"`
}

func kbView(kb *model.KnowledgeBase, created bool) KnowledgeBaseView {
	v := KnowledgeBaseView{ID: kb.ID, Name: kb.Name, Tags: kb.Tags}
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	if created {
		v.CreatedAt = iso(kb.CreatedAt)
	}
	return v
}

// KBInput is the body of createKnowledgeBase and updateKnowledgeBase.
type KBInput struct {
	Name string             `json:"name"`
	Tags map[string]*string `json:"tags"`
}

func checkName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		return model.Invalid("name: 1 to 200 characters")
	}
	return nil
}

// Create creates a knowledge base.
func (s *KnowledgeBases) Create(ctx context.Context, c Caller, in KBInput) (KnowledgeBaseView, error) {
	if err := c.require("createKnowledgeBase"); err != nil {
		return KnowledgeBaseView{}, err
	}
	if err := checkName(in.Name); err != nil {
		return KnowledgeBaseView{}, err
	}
	// A time-ordered id: bases created in the same millisecond still list
	// (and fill event.kb.included) in creation order.
	kb := &model.KnowledgeBase{BotID: c.BotID, ID: "kb_" + model.NewID(), Name: in.Name, Tags: map[string]string{}}
	for k, v := range in.Tags {
		if v != nil {
			kb.Tags[k] = *v
		}
	}
	if err := s.store.Files().CreateKnowledgeBase(ctx, kb); err != nil {
		return KnowledgeBaseView{}, err
	}
	s.bases.Invalidate()
	return kbView(kb, false), nil
}

// Update renames a knowledge base and merges its tags (null removes one).
func (s *KnowledgeBases) Update(ctx context.Context, c Caller, id string, in KBInput) (KnowledgeBaseView, error) {
	if err := c.require("updateKnowledgeBase"); err != nil {
		return KnowledgeBaseView{}, err
	}
	if err := checkName(in.Name); err != nil {
		return KnowledgeBaseView{}, err
	}
	kb, err := s.store.Files().GetKnowledgeBase(ctx, c.BotID, id)
	if err != nil {
		return KnowledgeBaseView{}, orNotFound(err, "KnowledgeBase", id)
	}
	kb.Name = in.Name
	if kb.Tags == nil {
		kb.Tags = map[string]string{}
	}
	for k, v := range in.Tags {
		if v == nil {
			delete(kb.Tags, k)
		} else {
			kb.Tags[k] = *v
		}
	}
	if err := s.store.Files().UpdateKnowledgeBase(ctx, kb); err != nil {
		return KnowledgeBaseView{}, orNotFound(err, "KnowledgeBase", id)
	}
	s.bases.Invalidate()
	return kbView(kb, false), nil
}

// Delete deletes a knowledge base (not its files).
func (s *KnowledgeBases) Delete(ctx context.Context, c Caller, id string) error {
	if err := c.require("deleteKnowledgeBase"); err != nil {
		return err
	}
	err := s.store.Files().DeleteKnowledgeBase(ctx, c.BotID, id)
	s.bases.Invalidate()
	return orNotFound(err, "KnowledgeBase", id)
}

// List returns a page of the bot's knowledge bases with these tags.
func (s *KnowledgeBases) List(ctx context.Context, c Caller, tags map[string]string, token string, size int) ([]KnowledgeBaseView, Page, error) {
	if err := c.require("listKnowledgeBases"); err != nil {
		return nil, Page{}, err
	}
	kbs, err := s.store.Files().ListKnowledgeBases(ctx, c.BotID)
	if err != nil {
		return nil, Page{}, err
	}
	var keep []*model.KnowledgeBase
	for _, kb := range kbs {
		if matches(kb.Tags, tags) {
			keep = append(keep, kb)
		}
	}
	from, to, next, err := page(len(keep), token, size)
	if err != nil {
		return nil, Page{}, err
	}
	out := []KnowledgeBaseView{}
	for _, kb := range keep[from:to] {
		out = append(out, kbView(kb, true))
	}
	return out, Page{NextToken: next}, nil
}
