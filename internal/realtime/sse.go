package realtime

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// StreamRequest names the conversation and user of a listen request.
type StreamRequest struct {
	BotID          string
	ConversationID string
	UserID         string
	// LastEventID is the raw Last-Event-ID header: the last seq the client
	// saw. Empty (or not a number) means a fresh stream.
	LastEventID string
}

// replayPage is how many signals one log read returns.
const replayPage = 256

// Serve streams a conversation's signals over SSE until the client leaves,
// the hub drops the stream (slow consumer, removal, shutdown) or ctx ends.
//
// authorize runs after the stream is registered, so a participant removed
// concurrently is either refused here or has its registration dropped by
// the removal signal; nothing slips between the two. An error from
// authorize (or any error returned before streaming began) is returned
// with nothing written, for the caller to answer with a 4xx; once streaming
// began Serve returns nil.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, req StreamRequest, authorize func(context.Context) error) error {
	ctx := r.Context()
	sub := h.subscribe(req.BotID, req.ConversationID, req.UserID)
	defer sub.Close()
	if err := authorize(ctx); err != nil {
		return err
	}

	st := &stream{hub: h, w: w, rc: http.NewResponseController(w), req: req, sub: sub, cursor: -1}
	if n, err := strconv.ParseInt(strings.TrimSpace(req.LastEventID), 10, 64); err == nil && n >= 0 {
		st.cursor = n
	} else if c, err := h.windowStart(ctx, req.BotID, req.ConversationID); err == nil {
		st.cursor = c
	} else {
		// No replay is possible: stream live signals only.
		h.opts.Log.Warn("realtime: replay window unavailable", "err", err)
	}

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	hd.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	// Headers alone, no body bytes: the Node client loses frames that
	// arrive in the same read as the headers.
	if err := st.flush(); err != nil {
		return nil
	}
	st.run(ctx)
	return nil
}

type stream struct {
	hub    *Hub
	w      http.ResponseWriter
	rc     *http.ResponseController
	req    StreamRequest
	sub    *Subscription
	cursor int64 // last seq written (or the replay start); -1 = unknown
	ended  bool  // the stream announced its own participant's removal
	dirty  bool  // written since the last flush
}

func (st *stream) run(ctx context.Context) {
	o := st.hub.opts
	hold := time.NewTimer(o.FirstFrameDelay)
	select {
	case <-hold.C:
	case <-ctx.Done():
		hold.Stop()
		return
	case <-st.sub.done:
		hold.Stop()
		return
	}
	if st.cursor >= 0 && st.catchUp(ctx) != nil {
		return
	}
	if st.ended || st.flush() != nil {
		return
	}
	keep := time.NewTimer(o.Keepalive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.sub.done:
			return
		case it := <-st.sub.c:
			if st.deliver(ctx, it) != nil {
				return
			}
			// Coalesce whatever else is queued into one flush.
		drain:
			for !st.ended {
				select {
				case it := <-st.sub.c:
					if st.deliver(ctx, it) != nil {
						return
					}
				default:
					break drain
				}
			}
			if st.ended || st.flush() != nil {
				return
			}
			keep.Reset(o.Keepalive)
		case <-keep.C:
			// Safety net for a missed cross-node wake-up: look at the log
			// before saying we are idle.
			if st.cursor >= 0 && st.catchUp(ctx) != nil {
				return
			}
			if !st.ended {
				if st.writePing() != nil {
					return
				}
			}
			if st.ended || st.flush() != nil {
				return
			}
			keep.Reset(o.Keepalive)
		}
	}
}

// deliver writes a live signal, first filling any hole before it from the
// log; signals at or below the cursor were already written.
func (st *stream) deliver(ctx context.Context, it *item) error {
	if st.cursor < 0 {
		st.cursor = it.seq - 1
	}
	if it.seq <= st.cursor {
		return nil
	}
	if it.seq > st.cursor+1 {
		if err := st.catchUp(ctx); err != nil {
			return err
		}
		if st.ended || it.seq <= st.cursor {
			return nil
		}
	}
	return st.write(it.seq, it.frame, it.removed)
}

// catchUp writes every logged signal after the cursor.
func (st *stream) catchUp(ctx context.Context) error {
	for !st.ended {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		sigs, err := st.hub.log.SignalsAfter(rctx, st.req.BotID, st.req.ConversationID, st.cursor, replayPage)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// A failed read leaves the hole; the next signal or keepalive
			// retries it.
			st.hub.opts.Log.Warn("realtime: reading signal log failed", "err", err)
			return nil
		}
		for _, sig := range sigs {
			if sig.Seq <= st.cursor {
				continue
			}
			it := newItem(sig)
			if err := st.write(it.seq, it.frame, it.removed); err != nil {
				return err
			}
			if st.ended {
				return nil
			}
		}
		if len(sigs) < replayPage {
			return nil
		}
	}
	return nil
}

func (st *stream) write(seq int64, frame []byte, removed string) error {
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.hub.opts.WriteTimeout)); err != nil && err != http.ErrNotSupported {
		return err
	}
	if _, err := st.w.Write(frame); err != nil {
		return err
	}
	st.cursor = seq
	st.dirty = true
	if removed != "" && removed == st.req.UserID {
		// This stream's user left the conversation: the notice is the
		// last thing it receives.
		st.ended = true
		_ = st.flush()
	}
	return nil
}

func (st *stream) writePing() error {
	var b []byte
	if st.cursor >= 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, st.cursor, 10)
		b = append(b, '\n')
	}
	// A data frame, not a comment: only dispatched events reset the
	// client's 60 s watchdog.
	b = append(b, "event: message\ndata: ping\n\n"...)
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.hub.opts.WriteTimeout)); err != nil && err != http.ErrNotSupported {
		return err
	}
	_, err := st.w.Write(b)
	st.dirty = true
	return err
}

func (st *stream) flush() error {
	st.dirty = false
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.hub.opts.WriteTimeout)); err != nil && err != http.ErrNotSupported {
		return err
	}
	err := st.rc.Flush()
	if err == http.ErrNotSupported {
		return nil
	}
	return err
}

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
