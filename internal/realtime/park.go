package realtime

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Parked streams (issue 18, goal 4). An idle SSE stream costs what its
// goroutines and buffers cost, not what it does: once an HTTP/1.1 stream
// has sent its first frames, Serve hands its hijacked connection to the
// hub and returns, so an idle stream holds a connection, its subscription
// and a few hundred bytes of state, and no goroutine or bufio buffer.
//
//   - Work (a signal in the subscription, the subscription dropped, a
//     heartbeat or keepalive due) schedules the stream on a small pool of
//     workers (Hub.enqueue; a fan-out schedules its streams in one batch),
//     at most once at a time (parked.sched).
//   - A worker writes only what the socket takes at once (rawWriter: no
//     wait, no deadline, so no timer per write; without a socket, a short
//     deadline, fastWrite): a client that does not take the bytes at once, or a stream that must read the
//     signal log (a hole, the keepalive) or render a signal with its own
//     Encoder (which may look things up), continues on a goroutine of its
//     own (work(true)), with the full write deadline, until it is idle
//     again; so a slow client never holds up the others.
//   - One ticker per hub (tick) looks at the streams whose heartbeat or
//     keepalive may be due, which wait for it in a timing wheel
//     (parkwheel.go); it stops when none is parked.
//   - A failed write ends the stream: its connection is closed and it
//     unsubscribes. A client that went away is found by the next
//     heartbeat (Options.Heartbeat) or keepalive. Hub.Close ends every
//     parked stream, closing the connections still open after 2 s.
//
// The response is chunked (net/http chose it when Hijack sent the headers,
// with Connection: close): each flush is one chunk, a clean end is the
// last chunk, then the connection is closed.

const (
	// fastWrite bounds a write by a pool worker; a write that takes longer
	// moves to the stream's own goroutine.
	fastWrite = 10 * time.Millisecond
	// maxChunk is the most a stream buffers before writing.
	maxChunk = 32 << 10
)

// connSink writes a hijacked connection's chunked body.
type connSink struct {
	conn      net.Conn
	timeout   time.Duration
	buf       *[]byte         // the chunk being built (nil: none; from chunkBufs)
	pend      *[]byte         // framed bytes, not written yet from off on (nil: none; from chunkBufs)
	off       int             // how much of pend is written
	fast      bool            // run by a pool worker: writes wait at most fastWrite
	blocked   bool            // a fast write did not finish: pend waits for the stream's goroutine
	canFast   bool            // false for TLS: a timed-out write breaks a tls.Conn
	raw       syscall.RawConn // the socket, for fast writes without a deadline (nil: none)
	try       rawWriter       // the fast write, kept so that it allocates nothing
	lastWrite atomic.Int64    // unix ns of the last bytes written (the ticker's heartbeat)
}

// chunkBufs recycles the sinks' buffers. A stream holds one only while it
// has bytes to write, so an idle stream holds none, and a fan-out to
// thousands of streams reuses a few instead of allocating two per stream
// (with the garbage collection and the fresh pages that cost).
var chunkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledBuf is the largest buffer put back in chunkBufs; a larger one
// (a big frame, a backlog) is left to the collector.
const maxPooledBuf = 64 << 10

func takeBuf() *[]byte { return chunkBufs.Get().(*[]byte) }

// giveBack returns *b to chunkBufs and clears *b.
func giveBack(b **[]byte) {
	p := *b
	if p == nil {
		return
	}
	*b = nil
	if cap(*p) <= maxPooledBuf {
		*p = (*p)[:0]
		chunkBufs.Put(p)
	}
}

func newConnSink(conn net.Conn, timeout time.Duration) *connSink {
	_, isTLS := conn.(*tls.Conn)
	s := &connSink{conn: conn, timeout: timeout, canFast: !isTLS}
	if !isTLS {
		s.raw = rawConnOf(conn)
	}
	s.try.init()
	s.lastWrite.Store(time.Now().UnixNano())
	return s
}

func (s *connSink) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if s.buf == nil {
		s.buf = takeBuf()
	}
	*s.buf = append(*s.buf, b...)
	if len(*s.buf) >= maxChunk {
		return s.flush()
	}
	return nil
}

func (s *connSink) flush() error {
	if s.buf != nil {
		if s.pend == nil {
			s.pend = takeBuf()
		}
		p := strconv.AppendInt(*s.pend, int64(len(*s.buf)), 16)
		p = append(p, '\r', '\n')
		p = append(p, *s.buf...)
		*s.pend = append(p, '\r', '\n')
		giveBack(&s.buf)
	}
	return s.push()
}

// unwritten is what pend still holds.
func (s *connSink) unwritten() []byte {
	if s.pend == nil {
		return nil
	}
	return (*s.pend)[s.off:]
}

// wrote records n more bytes of pend written, and gives pend back once
// all is.
func (s *connSink) wrote(n int, at time.Time) {
	if n > 0 {
		s.lastWrite.Store(at.UnixNano())
	}
	if s.off += n; s.pend != nil && s.off >= len(*s.pend) {
		giveBack(&s.pend)
		s.off = 0
	}
}

// push writes pend: with the write deadline, or in a worker at most for
// fastWrite, after which the rest waits (blocked) for the stream's own
// goroutine.
func (s *connSink) push() error {
	rest := s.unwritten()
	if len(rest) == 0 || s.blocked {
		return nil
	}
	d := s.timeout
	if s.fast {
		if !s.canFast {
			s.blocked = true
			return nil
		}
		if s.raw != nil {
			// What the socket takes now; the rest waits for the
			// stream's goroutine.
			n, err := s.try.write(s.raw, rest)
			s.wrote(n, time.Now())
			if err != nil {
				return err
			}
			if n < len(rest) {
				s.blocked = true
			}
			return nil
		}
		d = fastWrite
	}
	now := time.Now()
	if err := s.conn.SetWriteDeadline(now.Add(d)); err != nil {
		return err
	}
	n, err := s.conn.Write(rest)
	s.wrote(n, now)
	if err != nil {
		if s.fast && errors.Is(err, os.ErrDeadlineExceeded) {
			s.blocked = true
			return nil
		}
		return err
	}
	if !s.fast && s.raw != nil {
		// A deadline left behind would fail the next fast write once
		// it passed.
		return s.conn.SetWriteDeadline(time.Time{})
	}
	return nil
}

// close ends the response (on a clean end, with the last chunk, briefly
// waited for) and closes the connection.
func (s *connSink) close(clean bool) {
	if clean && !s.blocked {
		if s.buf != nil {
			_ = s.flush()
		}
		if s.pend == nil {
			s.pend = takeBuf()
		}
		*s.pend = append(*s.pend, "0\r\n\r\n"...)
		d := min(s.timeout, time.Second)
		if s.fast {
			d = fastWrite
		}
		if s.conn.SetWriteDeadline(time.Now().Add(d)) == nil {
			_, _ = s.conn.Write(s.unwritten())
		}
	}
	_ = s.conn.Close()
	giveBack(&s.buf)
	giveBack(&s.pend)
	s.off = 0
}

// parking is the hub's set of parked streams, its ticker and its workers.
type parking struct {
	mu      sync.Mutex
	streams map[*parked]struct{}
	due     wheel // every parked stream, by when to look at it
	ticking bool
	closed  bool
	wg      sync.WaitGroup // parked streams not ended yet
	life    context.Context
	end     context.CancelFunc // Hub.Close

	qmu     sync.Mutex
	q       []*parked // streams with work, each at most once
	workers int
}

func (pk *parking) init(o Options) {
	pk.streams = map[*parked]struct{}{}
	pk.due = newWheel(o.tickPeriod())
	pk.life, pk.end = context.WithCancel(context.Background())
}

// parked is a stream the hub holds between bursts of work.
type parked struct {
	st     *stream
	sink   *connSink
	ctx    context.Context // the request's values, never cancelled
	sched  atomic.Bool     // queued or running; only its holder touches st
	beat   atomic.Bool     // the ticker found no write for Heartbeat/2
	keep   atomic.Bool     // the keepalive is due
	keepAt atomic.Int64    // unix ns when it is
	held   *item           // a signal behind a hole, for the stream's goroutine
}

// park makes the hub the owner of a started stream on a hijacked
// connection.
func (h *Hub) park(st *stream, cs *connSink, ctx context.Context) {
	p := &parked{st: st, sink: cs, ctx: ctx}
	p.keepAt.Store(time.Now().Add(h.opts.Keepalive).UnixNano())
	pk := &h.parking
	pk.mu.Lock()
	if pk.closed {
		pk.mu.Unlock()
		cs.close(true)
		st.sub.Close()
		return
	}
	pk.streams[p] = struct{}{}
	pk.due.add(p, p.due(h.opts))
	pk.wg.Add(1)
	if !pk.ticking {
		pk.ticking = true
		go h.tick()
	}
	pk.mu.Unlock()
	st.sub.park.Store(p)
	// A signal or a drop that came before the store above is seen here;
	// one after it kicks the stream itself.
	if p.hasWork() {
		p.kick()
	}
}

// Parked counts the streams parked in the hub (for tests).
func (h *Hub) Parked() int {
	h.parking.mu.Lock()
	defer h.parking.mu.Unlock()
	return len(h.parking.streams)
}

// kick schedules the stream unless it is already.
func (p *parked) kick() {
	if p.sched.CompareAndSwap(false, true) {
		p.st.hub.enqueue(p)
	}
}

// hasWork reports work for the stream (held is always nil once a step
// ends without a handoff).
func (p *parked) hasWork() bool {
	return p.st.sub.dropped.Load() || p.st.sub.queued() > 0 || p.beat.Load() || p.keep.Load()
}

func (h *Hub) enqueue(ps ...*parked) {
	pk := &h.parking
	pk.qmu.Lock()
	pk.q = append(pk.q, ps...)
	start := min(max(4, 2*runtime.GOMAXPROCS(0))-pk.workers, len(pk.q))
	pk.workers += max(start, 0)
	pk.qmu.Unlock()
	for range start {
		go h.worker()
	}
}

// worker runs queued streams until the queue is empty.
func (h *Hub) worker() {
	pk := &h.parking
	for {
		pk.qmu.Lock()
		if len(pk.q) == 0 {
			pk.q = nil
			pk.workers--
			pk.qmu.Unlock()
			return
		}
		p := pk.q[0]
		pk.q[0] = nil
		pk.q = pk.q[1:]
		pk.qmu.Unlock()
		p.work(false)
	}
}

// Results of a step.
const (
	stepIdle = iota
	stepEnded
	stepHandoff // continue on the stream's own goroutine
)

// work runs the stream's work until it is idle, then releases it; own
// means the stream's own goroutine, else a pool worker.
func (p *parked) work(own bool) {
	for {
		switch p.step(own) {
		case stepEnded:
			return // sched stays set: nothing schedules it again
		case stepHandoff:
			go p.work(true)
			return
		}
		own = false
		p.sched.Store(false)
		if !p.hasWork() || !p.sched.CompareAndSwap(false, true) {
			return
		}
	}
}

func (p *parked) step(own bool) int {
	st, s, o := p.st, p.sink, p.st.hub.opts
	s.fast = !own
	ctx := p.ctx
	if own {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(st.hub.parking.life, cancel)()
		s.blocked = false
		if st.flush() != nil {
			return p.end(false)
		}
	}
	if st.sub.dropped.Load() {
		return p.end(true)
	}
	if p.keep.Load() {
		read := st.keepaliveReads()
		if !own && read {
			return stepHandoff // not in a worker shared by every stream
		}
		p.keep.Store(false)
		if st.keepalive(ctx, read) != nil {
			return p.end(false)
		}
		if st.ended {
			return p.end(true)
		}
		p.keepAt.Store(time.Now().Add(o.Keepalive).UnixNano())
	}
	delivered := false
	for !st.ended && !s.blocked {
		it := p.held
		if it == nil {
			it = st.sub.next()
		}
		if it == nil {
			break
		}
		if !own && (st.hole(it) || st.enc != nil) {
			// A hole is filled from the log, and an Encoder may look
			// things up (the webchat's participant_added): not in a
			// worker shared by every stream.
			p.held = it
			return stepHandoff
		}
		p.held = nil
		if st.deliver(ctx, it) != nil {
			return p.end(false)
		}
		delivered = true
	}
	if st.ended {
		return p.end(true)
	}
	if delivered {
		if st.flush() != nil {
			return p.end(false)
		}
		p.keepAt.Store(time.Now().Add(o.Keepalive).UnixNano())
	}
	if p.beat.Swap(false) && time.Now().UnixNano() >= p.beatAt(o) {
		if st.writeRaw(heartbeat) != nil || st.flush() != nil {
			return p.end(false)
		}
	}
	if s.blocked {
		return stepHandoff
	}
	return stepIdle
}

// end closes the stream's connection and unregisters it.
func (p *parked) end(clean bool) int {
	st := p.st
	p.sink.close(clean && st.werr == nil)
	st.sub.Close()
	pk := &st.hub.parking
	pk.mu.Lock()
	delete(pk.streams, p)
	pk.mu.Unlock()
	pk.wg.Done()
	st.logEnd(nil)
	return stepEnded
}

// tick looks at the parked streams whose slot of the wheel came, until
// none is parked: it schedules those whose heartbeat or keepalive is due,
// and puts the others back for when it will be.
func (h *Hub) tick() {
	o := h.opts
	period := o.tickPeriod()
	t := time.NewTicker(period)
	defer t.Stop()
	pk := &h.parking
	var look, wake []*parked
	for {
		select {
		case <-pk.life.Done():
			pk.mu.Lock()
			pk.ticking = false
			pk.mu.Unlock()
			return
		case now := <-t.C:
			n := now.UnixNano()
			pk.mu.Lock()
			if len(pk.streams) == 0 {
				pk.ticking = false
				pk.mu.Unlock()
				return
			}
			look = pk.due.take(n, look[:0])
			for _, p := range look {
				if _, parked := pk.streams[p]; !parked {
					continue // ended: it leaves the wheel
				}
				at := p.due(o)
				if n < at {
					pk.due.add(p, at)
					continue
				}
				if n >= p.beatAt(o) {
					p.beat.Store(true)
				}
				if n >= p.keepAt.Load() {
					p.keep.Store(true)
				}
				if p.sched.CompareAndSwap(false, true) {
					wake = append(wake, p)
				}
				// Looked at again once its work has had a tick to run.
				pk.due.add(p, n+int64(period))
			}
			pk.mu.Unlock()
			clear(look)
			if len(wake) > 0 {
				h.enqueue(wake...)
				clear(wake)
				wake = wake[:0]
			}
		}
	}
}

// closeParked ends the parked streams after Hub.Close dropped their
// subscriptions, and closes the connections of those still open after
// 2 s.
func (h *Hub) closeParked() {
	pk := &h.parking
	pk.mu.Lock()
	pk.closed = true
	pk.mu.Unlock()
	pk.end()
	done := make(chan struct{})
	go func() { pk.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		pk.mu.Lock()
		for p := range pk.streams {
			_ = p.sink.conn.Close()
		}
		pk.mu.Unlock()
		<-done
	}
}
