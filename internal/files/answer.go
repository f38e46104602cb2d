package files

import (
	"context"
	"fmt"
	"strings"

	"github.com/parley-bots/parley/internal/llm"
)

// answerPassages is how many of the best passages a generated answer is
// composed from.
const answerPassages = 5

// answerPrompt instructs the answer-generation endpoint.
const answerPrompt = "You answer a user's question using only the numbered passages you are given. " +
	"Answer briefly, in the language of the question. If the passages do not contain the answer, say that you do not know."

// Answer answers a question from the bot's knowledge bases (only those
// whose id or name is in only, when it is not empty), for the workflow's
// "query knowledge base" card (turns.KnowledgeBases). With a Completer,
// the answer is composed from the best passages, and sources are their
// files' keys; without one, or when it fails, the answer is the best
// passage itself (extractive) and the source its file's key. The answer
// is empty only when no passage scored.
func (a *API) Answer(ctx context.Context, botID, question string, only []string) (answer string, sources []string, err error) {
	if strings.TrimSpace(question) == "" {
		return "", nil, nil
	}
	kbs, err := a.selectKBs(ctx, botID, only)
	if err != nil {
		return "", nil, err
	}
	hits, err := a.searchKnowledgeBases(ctx, botID, question, kbs)
	if err != nil || len(hits) == 0 {
		return "", nil, err
	}
	if a.models.Completer != nil && !a.answerDown.open() {
		top := hits[:min(len(hits), answerPassages)]
		var sb strings.Builder
		var keys []string
		seen := map[string]bool{}
		for i, h := range top {
			fmt.Fprintf(&sb, "[%d] (%s", i+1, h.r.File.Key)
			if bc := crumbOf(h.r); bc != "" {
				sb.WriteString(", " + bc)
			}
			sb.WriteString(")\n" + h.r.Content + "\n\n")
			if !seen[h.r.File.Key] {
				seen[h.r.File.Key] = true
				keys = append(keys, h.r.File.Key)
			}
		}
		sb.WriteString("Question: " + question)
		actx, cancel := context.WithTimeout(ctx, answerTimeout)
		text, err := a.models.Completer.Complete(actx, []llm.Message{{Role: "system", Content: answerPrompt}, {Role: "user", Content: sb.String()}})
		cancel()
		if err == nil {
			return text, keys, nil
		}
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		a.answerDown.failed()
		a.log.Warn("files: answer-generation endpoint failed; answering with the best passage (for 30 s)", "bot", botID, "err", err)
	}
	best := hits[0].r
	return best.Content, []string{best.File.Key}, nil
}
