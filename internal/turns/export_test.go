package turns

import "context"

// FoldableBot makes b a bot whose turns Fold may run before their message
// is committed, holding its effects as a code bot does.
func FoldableBot(b Bot) Bot { return foldableBot{b} }

type foldableBot struct{ Bot }

func (foldableBot) foldable()          {}
func (foldableBot) HoldsEffects() bool { return true }

// StepOutside is what a code bot's host does before a Runtime API call or
// a read of the store.
func StepOutside(ctx context.Context, out BotOutput) error {
	if g, ok := out.(effectGate); ok {
		return g.beforeOutside(ctx)
	}
	return nil
}
