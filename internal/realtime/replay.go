package realtime

import (
	"context"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// windowStart finds where a fresh stream starts: just before the first
// signal of the last ReplayWindow, so a signal published a moment before
// the stream registered still reaches it. It only uses SignalsAfter, so
// it first finds the newest seq by doubling then bisecting.
func (h *Hub) windowStart(ctx context.Context, botID, convID string) (int64, error) {
	cutoff := time.Now().Add(-h.opts.ReplayWindow)
	const chunk = 64
	// first returns the first signal after x, or 0 when there is none.
	first := func(x int64) (int64, error) {
		sigs, err := h.log.SignalsAfter(ctx, botID, convID, x, 1)
		if err != nil || len(sigs) == 0 {
			return 0, err
		}
		return sigs[0].Seq, nil
	}
	sigs, err := h.log.SignalsAfter(ctx, botID, convID, 0, chunk)
	if err != nil {
		return 0, err
	}
	var newest int64
	if len(sigs) < chunk {
		return recentStart(sigs, cutoff, 0), nil
	}
	// Find the newest seq: double until nothing follows, then bisect.
	lo := sigs[len(sigs)-1].Seq // a seq that exists
	hi := lo * 2
	for {
		s, err := first(hi)
		if err != nil {
			return 0, err
		}
		if s == 0 {
			break
		}
		lo, hi = s, s*2
	}
	for hi-lo > 1 { // invariant: lo exists, nothing after hi
		mid := lo + (hi-lo)/2
		s, err := first(mid)
		if err != nil {
			return 0, err
		}
		if s == 0 {
			hi = mid
		} else {
			lo = s
		}
	}
	newest = lo
	// Walk back chunk by chunk while the whole chunk is recent.
	for back := int64(chunk); ; back *= 2 {
		from := max(newest-back, 0)
		sigs, err := h.log.SignalsAfter(ctx, botID, convID, from, int(newest-from))
		if err != nil {
			return 0, err
		}
		if from == 0 || back >= 4096 || len(sigs) == 0 || sigs[0].CreatedAt.Before(cutoff) {
			return recentStart(sigs, cutoff, from), nil
		}
	}
}

// recentStart returns the seq just before the first signal of sigs created
// at or after cutoff; base when sigs is empty and every one is recent.
func recentStart(sigs []*model.Signal, cutoff time.Time, base int64) int64 {
	for _, s := range sigs {
		if !s.CreatedAt.Before(cutoff) {
			return s.Seq - 1
		}
	}
	if len(sigs) > 0 {
		return sigs[len(sigs)-1].Seq
	}
	return base
}
