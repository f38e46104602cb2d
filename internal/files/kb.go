package files

import (
	"context"
	"sort"
)

// kbResults bounds event.kb.results.
const kbResults = 10

// QueryKnowledgeBases searches each of the bot's knowledge bases (the
// files carrying its tags) for query, for a turn's event.kb
// (turns.KnowledgeBases): included lists the bases, results the best
// passages of all, best first. Both are nil for a bot without knowledge
// bases.
func (a *API) QueryKnowledgeBases(ctx context.Context, botID, query string) (included, results []any, err error) {
	kbs, err := a.KnowledgeBases.store.Files().ListKnowledgeBases(ctx, botID)
	if err != nil || len(kbs) == 0 {
		return nil, nil, err
	}
	type hit struct {
		score float64
		v     map[string]any
	}
	var hits []hit
	bot := Caller{BotID: botID, Bot: true}
	for _, kb := range kbs {
		view := kbView(kb, false)
		included = append(included, map[string]any{"id": view.ID, "name": view.Name, "tags": view.Tags})
		rs, err := a.Passages.Search(ctx, bot, SearchInput{Query: query, Tags: kb.Tags, Limit: kbResults, IncludeBreadcrumb: true})
		if err != nil {
			return nil, nil, err
		}
		for _, r := range rs {
			crumb := ""
			if len(r.Context) > 0 {
				crumb = r.Context[0].Text
			}
			hits = append(hits, hit{r.Score, map[string]any{"knowledgeBaseId": kb.ID, "score": r.Score, "content": r.Content,
				"breadcrumb": crumb, "file": map[string]any{"id": r.File.ID, "key": r.File.Key, "tags": r.File.Tags}}})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	results = []any{}
	for i, h := range hits {
		if i == kbResults {
			break
		}
		results = append(results, h.v)
	}
	return included, results, nil
}
