package store

// SpillAt is how many writes may wait for a shard before a write of
// another conversation goes to the next (spillAt).
const SpillAt = spillAt

// Held is how many conversations g holds writes of, not committed yet.
func Held(g *GroupCommitter) int {
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	return len(g.held)
}
