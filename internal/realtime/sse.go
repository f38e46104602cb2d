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
//
// On HTTP/1.1 the connection is hijacked once the headers are written
// (park.go): after the first frames (preamble, gate, catch-up) the stream
// is parked in the hub, which holds its connection with no goroutine and
// no buffer, and Serve returns while the stream goes on. Elsewhere
// (HTTP/2, a ResponseWriter that cannot hijack, Options.NoHijack) Serve's
// goroutine runs the stream until it ends.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, req StreamRequest, authorize func(context.Context) error) error {
	ctx := r.Context()
	sub, err := h.subscribe(req)
	if err != nil {
		return err
	}
	parked := false
	defer func() {
		if !parked {
			sub.Close()
		}
	}()
	if err := authorize(ctx); err != nil {
		return err
	}

	rc := http.NewResponseController(w)
	st := &stream{hub: h, req: req, enc: req.Encoder, sub: sub, cursor: -1,
		out: &httpSink{w: w, rc: rc, timeout: h.opts.WriteTimeout}}
	// A stream is long-lived: the server's read timeout (which bounds
	// reading a request, issue 12) does not apply to it. Its own rules are
	// the write deadline of every frame, the keepalive and the caps.
	if err := rc.SetReadDeadline(time.Time{}); err != nil && err != http.ErrNotSupported {
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
	hijack := !h.opts.NoHijack && r.ProtoMajor == 1 && r.ProtoMinor >= 1 && r.Method != http.MethodHead
	if hijack {
		// The hub closes a parked stream's connection when it ends.
		hd.Set("Connection", "close")
	}
	w.WriteHeader(http.StatusOK)
	if hijack {
		// Hijack sends the headers (chunked transfer encoding, as
		// net/http chose for an HTTP/1.1 response of unknown length);
		// the body's chunks are framed by connSink from here on.
		switch conn, _, err := rc.Hijack(); {
		case err == nil:
			st.out = newConnSink(conn, h.opts.WriteTimeout)
		case err != http.ErrNotSupported:
			return nil
		}
	}
	// Headers alone, no body bytes: the Node client loses frames that
	// arrive in the same read as the headers.
	if err := st.flush(); err != nil {
		st.out.close(false)
		return nil
	}
	if req.Preamble != nil {
		if err := st.writeRaw(req.Preamble); err != nil || st.flush() != nil {
			st.out.close(false)
			return nil
		}
	}
	if st.start(ctx) {
		if cs, ok := st.out.(*connSink); ok {
			// From here the hub owns the stream and its connection.
			parked = true
			h.park(st, cs, context.WithoutCancel(ctx))
			return nil
		}
		st.loop(ctx)
	}
	st.out.close(st.werr == nil)
	st.logEnd(ctx.Err())
	return nil
}

func (st *stream) logEnd(ctxErr error) {
	reason := -1
	select {
	case <-st.sub.done:
		reason = st.sub.reason
	default:
	}
	st.hub.opts.Log.Debug("realtime: stream ended", "bot", st.req.BotID, "conversation", st.req.ConversationID,
		"ctx", ctxErr, "dropped", reason, "cursor", st.cursor, "write_err", st.werr)
}

type stream struct {
	hub       *Hub
	out       sink
	req       StreamRequest
	enc       Encoder // nil: the Chat API's frames, rendered once per signal
	sub       *Subscription
	cursor    int64     // last seq written (or the replay start); -1 = unknown
	ended     bool      // the stream announced its own participant's removal
	werr      error     // the write that ended the stream
	lastWrite time.Time // for the heartbeat (loop)
}

// sink is where a stream's bytes go: the ResponseWriter, or the hijacked
// connection (connSink).
type sink interface {
	// write queues b (it may write it, with the write deadline).
	write(b []byte) error
	// flush sends what was queued.
	flush() error
	// close ends the response; clean when nothing failed.
	close(clean bool)
}

// start holds the first frame (Options.FirstFrameDelay), waits for the
// gate, catches up from the cursor and flushes; false means the stream
// ended.
func (st *stream) start(ctx context.Context) bool {
	o := st.hub.opts
	hold := time.NewTimer(o.FirstFrameDelay)
	select {
	case <-hold.C:
	case <-ctx.Done():
		hold.Stop()
		return false
	case <-st.sub.done:
		hold.Stop()
		return false
	}
	if st.req.Gate != nil {
		select {
		case <-st.req.Gate:
		case <-ctx.Done():
			return false
		case <-st.sub.done:
			return false
		}
	}
	if st.cursor >= 0 && st.catchUp(ctx) != nil {
		return false
	}
	return !st.ended && st.flush() == nil
}

// loop runs an unparked stream in the goroutine of its request.
func (st *stream) loop(ctx context.Context) {
	o := st.hub.opts
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
		case <-st.sub.ready:
			// Whatever is queued goes out in one flush.
			delivered := false
			for !st.ended {
				it := st.sub.next()
				if it == nil {
					break
				}
				if st.deliver(ctx, it) != nil {
					return
				}
				delivered = true
			}
			if !delivered {
				continue // taken with the previous signal
			}
			if st.ended || st.flush() != nil {
				return
			}
			keep.Reset(o.Keepalive)
		case <-keep.C:
			if st.keepalive(ctx, st.keepaliveReads()) != nil || st.ended {
				return
			}
			keep.Reset(o.Keepalive)
		}
	}
}

// keepalive is the idle stream's safety net for a missed cross-node
// wake-up: it looks at the log (when read: keepaliveReads) before saying
// it is idle with a ping.
func (st *stream) keepalive(ctx context.Context, read bool) error {
	if read {
		if err := st.catchUp(ctx); err != nil {
			return err
		}
	}
	if !st.ended {
		if err := st.writePing(); err != nil {
			return err
		}
	}
	return st.flush()
}

// keepaliveReads reports whether the keepalive reads the log first. Only
// a signal committed on another node can miss its wake-up (a lost
// NOTIFY): a hub without a broker is the only node, whose every commit is
// published to it (the store's after-commit hook), so its streams' pings
// need no read (with 10,000 idle listeners and the default Keepalive, 400
// reads a second). With a broker, a stream of a conversation whose log
// another stream read up to its cursor within half a Keepalive needs no
// read either: 10,000 listeners of one conversation read it about twice
// per Keepalive, not 10,000 times.
func (st *stream) keepaliveReads() bool {
	return st.cursor >= 0 && st.hub.broker != nil && !st.hub.logReadRecently(st.sub.key, st.cursor)
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

// hole reports whether delivering it needs a read of the log first.
func (st *stream) hole(it *item) bool {
	return st.cursor >= 0 && it.seq > st.cursor+1
}

// catchUp writes every logged signal after the cursor.
func (st *stream) catchUp(ctx context.Context) error {
	for !st.ended {
		readAt := time.Now()
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
			st.hub.logReadTo(st.sub.key, st.cursor, readAt)
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

func (st *stream) writeRaw(b []byte) error {
	err := st.out.write(b)
	st.lastWrite = time.Now()
	if err != nil {
		st.werr = err
	}
	return err
}

func (st *stream) flush() error {
	err := st.out.flush()
	if err != nil && st.werr == nil {
		st.werr = err
	}
	return err
}

// httpSink writes to the ResponseWriter, each write and flush with the
// write deadline.
type httpSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *httpSink) write(b []byte) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && err != http.ErrNotSupported {
		return err
	}
	_, err := s.w.Write(b)
	return err
}

func (s *httpSink) flush() error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && err != http.ErrNotSupported {
		return err
	}
	err := s.rc.Flush()
	if err == http.ErrNotSupported {
		return nil
	}
	return err
}

// close does nothing: net/http ends the response when Serve returns.
func (s *httpSink) close(bool) {}
