package files

import (
	"context"
	"sort"

	"github.com/parley-bots/parley/internal/model"
)

// kbResults bounds event.kb.results.
const kbResults = 10

// kbHit is a passage found in one of a bot's knowledge bases.
type kbHit struct {
	kb *model.KnowledgeBase
	r  SearchResult
}

// searchKnowledgeBases searches each of these knowledge bases (the files
// carrying its tags) for query and returns the best passages of all, best
// first, at most kbResults.
func (a *API) searchKnowledgeBases(ctx context.Context, botID, query string, kbs []*model.KnowledgeBase) ([]kbHit, error) {
	var hits []kbHit
	bot := Caller{BotID: botID, Bot: true}
	for _, kb := range kbs {
		rs, err := a.Passages.Search(ctx, bot, SearchInput{Query: query, Tags: kb.Tags, Limit: kbResults, IncludeBreadcrumb: true})
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			hits = append(hits, kbHit{kb, r})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].r.Score > hits[j].r.Score })
	return hits[:min(len(hits), kbResults)], nil
}

// selectKBs returns the bot's knowledge bases whose id or name is in
// only, or all of them when only is empty.
func (a *API) selectKBs(ctx context.Context, botID string, only []string) ([]*model.KnowledgeBase, error) {
	all, err := a.KnowledgeBases.forBot(ctx, botID)
	if err != nil || len(only) == 0 {
		return all, err
	}
	want := map[string]bool{}
	for _, o := range only {
		want[o] = true
	}
	var kbs []*model.KnowledgeBase
	for _, kb := range all {
		if want[kb.ID] || want[kb.Name] {
			kbs = append(kbs, kb)
		}
	}
	return kbs, nil
}

// QueryKnowledgeBases searches each of the bot's knowledge bases (the
// files carrying its tags; only those whose id or name is in only, when
// it is not empty) for query, for a turn's event.kb
// (turns.KnowledgeBases): included lists the bases, results the best
// passages of all, best first. Both are nil when there is no base to
// query.
func (a *API) QueryKnowledgeBases(ctx context.Context, botID, query string, only []string) (included, results []any, err error) {
	kbs, err := a.selectKBs(ctx, botID, only)
	if err != nil || len(kbs) == 0 {
		return nil, nil, err
	}
	for _, kb := range kbs {
		view := kbView(kb, false)
		included = append(included, map[string]any{"id": view.ID, "name": view.Name, "tags": view.Tags})
	}
	hits, err := a.searchKnowledgeBases(ctx, botID, query, kbs)
	if err != nil {
		return nil, nil, err
	}
	results = []any{}
	for _, h := range hits {
		results = append(results, map[string]any{"knowledgeBaseId": h.kb.ID, "score": h.r.Score, "content": h.r.Content,
			"breadcrumb": crumbOf(h.r), "file": map[string]any{"id": h.r.File.ID, "key": h.r.File.Key, "tags": h.r.File.Tags}})
	}
	return included, results, nil
}

func crumbOf(r SearchResult) string {
	if len(r.Context) > 0 {
		return r.Context[0].Text
	}
	return ""
}
