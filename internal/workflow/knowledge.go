package workflow

import "strings"

// Knowledge answers a question from the bot's knowledge bases (only
// those whose id or name is listed, when any): the answer, empty when no
// passage scored, and its sources (file keys). Package turns passes it.
type Knowledge func(question string, knowledgeBases []string) (answer string, sources []string, err error)

// queryKB runs a queryKnowledgeBase card.
func (r *run) queryKB(c *Card) error {
	q := r.in.Text
	if c.Question != "" {
		var err error
		if q, err = r.renderString(c.Question); err != nil {
			return err
		}
	}
	var text string
	var sources []string
	if r.in.Knowledge != nil && strings.TrimSpace(q) != "" {
		var err error
		if text, sources, err = r.in.Knowledge(q, c.KBs); err != nil {
			return &fatal{err}
		}
	}
	if c.outputVar != "" {
		var v any
		if text != "" {
			v = text
		}
		if err := r.set(c.outputVar, v); err != nil {
			return err
		}
	}
	if !c.Say || text == "" {
		return nil
	}
	switch len(sources) {
	case 0:
	case 1:
		text += "\n\nSource: " + sources[0]
	default:
		text += "\n\nSources: " + strings.Join(sources, ", ")
	}
	return r.send(map[string]any{"type": "text", "text": text})
}
