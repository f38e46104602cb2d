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
	// Credential names what authenticated the stream (a fingerprint of
	// the signing key of the user's key): Hub.EndBotStreams ends the
	// streams whose credential was rotated out.
	Credential string
	// LastEventID is the raw Last-Event-ID header: the last seq the client
	// saw. Empty (or not a number) means a fresh stream.
	LastEventID string
	// Encoder renders the frames; nil means the Chat API's SSE events.
	Encoder Encoder
	// Preamble, when set, is written and flushed on its own right after
	// the headers (the webchat's init signal).
	Preamble []byte
	// Gate, when set, holds every frame after the preamble until it is
	// closed (the webchat waits for its client to attach its listeners);
	// signals wait in the subscription meanwhile.
	Gate <-chan struct{}
}

// heartbeat is an SSE comment: it keeps the connection busy and reaches no
// listener (Options.Heartbeat).
var heartbeat = []byte(": \n\n")

// Encoder renders a stream's frames.
type Encoder interface {
	// Signal renders one signal as the bytes of its frame(s); nil skips
	// it. It runs before the write, never inside it: ctx bounds any
	// lookup it needs.
	Signal(ctx context.Context, sig *model.Signal) []byte
	// Ping renders the frame sent when the stream is idle; cursor is the
	// last seq written (-1 when unknown).
	Ping(cursor int64) []byte
}

// chatEncoder renders the Chat API's SSE events: every frame carries the
// conversation's seq as its id, so a client that reconnects with
// Last-Event-ID resumes where it left off.
type chatEncoder struct{}

func (chatEncoder) Signal(_ context.Context, sig *model.Signal) []byte { return renderFrame(sig) }

func (chatEncoder) Ping(cursor int64) []byte {
	var b []byte
	if cursor >= 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, cursor, 10)
		b = append(b, '\n')
	}
	// A data frame, not a comment: only dispatched events reset the
	// client's 60 s watchdog.
	return append(b, "event: message\ndata: ping\n\n"...)
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
	sub, err := h.subscribe(req)
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := authorize(ctx); err != nil {
		return err
	}

	st := &stream{hub: h, w: w, rc: http.NewResponseController(w), req: req, enc: req.Encoder, sub: sub, cursor: -1}
	// A stream is long-lived: the server's read timeout (which bounds
	// reading a request, issue 12) does not apply to it. Its own rules are
	// the write deadline of every frame, the keepalive and the caps.
	if err := st.rc.SetReadDeadline(time.Time{}); err != nil && err != http.ErrNotSupported {
		return err
	}
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
	if req.Preamble != nil {
		if err := st.writeRaw(req.Preamble); err != nil || st.flush() != nil {
			return nil
		}
	}
	st.run(ctx)
	reason := -1
	select {
	case <-sub.done:
		reason = sub.reason
	default:
	}
	h.opts.Log.Debug("realtime: stream ended", "bot", req.BotID, "conversation", req.ConversationID,
		"ctx", ctx.Err(), "dropped", reason, "cursor", st.cursor, "write_err", st.werr)
	return nil
}

type stream struct {
	hub       *Hub
	w         http.ResponseWriter
	rc        *http.ResponseController
	req       StreamRequest
	enc       Encoder // nil: the Chat API's frames, rendered once per signal
	sub       *Subscription
	cursor    int64     // last seq written (or the replay start); -1 = unknown
	ended     bool      // the stream announced its own participant's removal
	dirty     bool      // written since the last flush
	werr      error     // the write that ended the stream
	lastWrite time.Time // for the heartbeat
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
	if st.req.Gate != nil {
		select {
		case <-st.req.Gate:
		case <-ctx.Done():
			return
		case <-st.sub.done:
			return
		}
	}
	if st.cursor >= 0 && st.catchUp(ctx) != nil {
		return
	}
	if st.ended || st.flush() != nil {
		return
	}
	keep := time.NewTimer(o.Keepalive)
	defer keep.Stop()
	// The heartbeat ticks twice per interval and writes when nothing was
	// written for half of it: the stream is never idle for a whole one.
	var beat <-chan time.Time
	if o.Heartbeat > 0 {
		t := time.NewTicker(o.Heartbeat / 2)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.sub.done:
			return
		case now := <-beat:
			if now.Sub(st.lastWrite) >= o.Heartbeat/2 {
				if st.writeRaw(heartbeat) != nil || st.flush() != nil {
					return
				}
			}
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
	return st.write(ctx, it)
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
			if err := st.write(ctx, newItem(sig)); err != nil {
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

// write renders it with the stream's encoder, then writes it.
func (st *stream) write(ctx context.Context, it *item) error {
	frame := it.frame
	if st.enc != nil {
		frame = st.enc.Signal(ctx, it.sig)
	}
	if len(frame) > 0 {
		if err := st.writeRaw(frame); err != nil {
			return err
		}
	}
	st.cursor = it.seq
	if it.removed != "" && it.removed == st.req.UserID {
		// This stream's user left the conversation: the notice is the
		// last thing it receives.
		st.ended = true
		_ = st.flush()
	}
	return nil
}

func (st *stream) writePing() error {
	var enc Encoder = chatEncoder{}
	if st.enc != nil {
		enc = st.enc
	}
	return st.writeRaw(enc.Ping(st.cursor))
}

// writeRaw writes bytes with the write deadline.
func (st *stream) writeRaw(b []byte) error {
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.hub.opts.WriteTimeout)); err != nil && err != http.ErrNotSupported {
		return err
	}
	_, err := st.w.Write(b)
	st.dirty, st.lastWrite = true, time.Now()
	if err != nil {
		st.werr = err
	}
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
