package realtime

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// plainListener hides its connections' SyscallConn.
type plainListener struct{ net.Listener }

func (l plainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{c}, nil
}

// rawStream is a listen request on a bare TCP connection: it holds no
// goroutine on the client side until it is read.
type rawStream struct {
	conn net.Conn
	res  *http.Response
	rd   *bufio.Reader // the response body's lines
}

func dialStream(t *testing.T, addr string) *rawStream {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET /listen HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr); err != nil {
		t.Fatal(err)
	}
	return &rawStream{conn: conn}
}

// head reads the response head.
func (s *rawStream) head(t *testing.T) {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(s.conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.res, s.rd = res, bufio.NewReader(res.Body)
}

// until reads lines until one contains want.
func (s *rawStream) until(t *testing.T, want string) {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		line, err := s.rd.ReadString('\n')
		if strings.Contains(line, want) {
			return
		}
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
	}
}

// parkedStream opens a stream of h on a raw connection, and returns it
// parked, its response head read.
func parkedStream(t *testing.T, h *Hub) *rawStream {
	t.Helper()
	srv := serveHub(t, h, "u")
	s := dialStream(t, srv.Listener.Addr().String())
	waitFor(t, "the stream parked", 5*time.Second, func() bool { return h.Parked() == 1 })
	s.head(t)
	return s
}

// settledGoroutines returns how many goroutines there are beyond before,
// once ok accepts that number or timeout passed (then the last count).
func settledGoroutines(before int, timeout time.Duration, ok func(delta int) bool) int {
	deadline := time.Now().Add(timeout)
	for {
		d := runtime.NumGoroutine() - before
		if ok(d) || time.Now().After(deadline) {
			return d
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestParkedStreams: idle HTTP/1.1 streams are parked in the hub and hold
// no goroutine (the request's goroutine path holds two per stream: the
// handler's and net/http's background read); a parked stream still gets a
// later signal and heartbeats; a client that went away is cleaned up at
// the next heartbeat; Hub.Close ends the rest with the last chunk.
func TestParkedStreams(t *testing.T) {
	const n = 40
	for _, tc := range []struct {
		name          string
		noHijack      bool
		plain         bool // connections without SyscallConn: fast writes with a deadline
		maxGoroutines int  // more goroutines than before the streams, at most
		minGoroutines int  // and at least
	}{
		{name: "parked", maxGoroutines: 3},
		{name: "parked, deadline writes", plain: true, maxGoroutines: 3},
		{name: "goroutine per stream", noHijack: true, minGoroutines: 2 * n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &memLog{}
			h := NewHub(log, nil, Options{FirstFrameDelay: time.Millisecond, Heartbeat: 200 * time.Millisecond,
				Keepalive: time.Minute, NoHijack: tc.noHijack, MaxStreamsPerUser: 2 * n})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = h.Serve(w, r, StreamRequest{BotID: "b", ConversationID: "c", UserID: "u"},
					func(context.Context) error { return nil })
			}))
			if tc.plain {
				srv.Listener = plainListener{srv.Listener}
			}
			srv.Start()
			defer func() { h.Close(); srv.Close() }()
			addr := srv.Listener.Addr().String()
			time.Sleep(50 * time.Millisecond)
			before := runtime.NumGoroutine()

			streams := make([]*rawStream, n)
			for i := range streams {
				streams[i] = dialStream(t, addr)
			}
			waitFor(t, "every stream registered", 5*time.Second, func() bool { return h.Subscribers("b", "c") == n })
			if !tc.noHijack {
				waitFor(t, "every stream parked", 5*time.Second, func() bool { return h.Parked() == n })
			}
			// The hub's pool workers and the goroutines that just wrote the
			// first frames end on their own: the count must settle within
			// the bounds (a goroutine held per stream never would).
			delta := settledGoroutines(before, 2*time.Second, func(d int) bool {
				return (d <= tc.maxGoroutines || tc.maxGoroutines == 0) && d >= tc.minGoroutines
			})
			t.Logf("%d streams: %d more goroutines", n, delta)
			if delta > tc.maxGoroutines && tc.maxGoroutines > 0 || delta < tc.minGoroutines {
				t.Fatalf("%d streams hold %d goroutines, want %d to %d", n, delta, tc.minGoroutines, tc.maxGoroutines)
			}
			if tc.noHijack {
				return
			}

			// A later signal, then heartbeats, reach every stream.
			for _, s := range streams {
				s.head(t)
				if s.res.StatusCode != 200 || s.res.Header.Get("Content-Type") != "text/event-stream" ||
					len(s.res.TransferEncoding) != 1 || s.res.TransferEncoding[0] != "chunked" || !s.res.Close {
					t.Fatalf("head %d %v %v close=%v", s.res.StatusCode, s.res.Header, s.res.TransferEncoding, s.res.Close)
				}
			}
			h.Publish(log.append("b", "c", "message_created", `{"later":true}`, time.Now()))
			for _, s := range streams {
				s.until(t, `"later":true`)
				s.until(t, ": ") // a heartbeat comment
			}
			// Streams that wrote and went idle again hold no buffer: the
			// sinks' buffers go back to their pool.
			held, checked := idleBuffers(h)
			if held > 0 || checked == 0 {
				t.Fatalf("%d of %d idle parked streams hold a write buffer", held, checked)
			}

			// Clients that went away are found by a heartbeat's write.
			for _, s := range streams[:n/2] {
				s.conn.Close()
			}
			waitFor(t, "the closed streams to end", 5*time.Second, func() bool {
				return h.Parked() == n/2 && h.Subscribers("b", "c") == n/2
			})
			if d := settledGoroutines(before, 2*time.Second, func(d int) bool { return d <= tc.maxGoroutines }); d > tc.maxGoroutines {
				t.Fatalf("%d goroutines left after the cleanup", d)
			}

			// Shutdown ends the others cleanly.
			h.Close()
			for _, s := range streams[n/2:] {
				_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.Copy(io.Discard, s.rd); err != nil {
					t.Fatalf("stream not ended cleanly by shutdown: %v", err)
				}
			}
			if p := h.Parked(); p != 0 {
				t.Fatalf("%d streams parked after Close", p)
			}
		})
	}
}

// idleBuffers counts the parked streams that hold a write buffer among
// those idle (each held while it is read, as a worker holds it).
func idleBuffers(h *Hub) (held, checked int) {
	h.parking.mu.Lock()
	ps := make([]*parked, 0, len(h.parking.streams))
	for p := range h.parking.streams {
		ps = append(ps, p)
	}
	h.parking.mu.Unlock()
	for _, p := range ps {
		if !p.sched.CompareAndSwap(false, true) {
			continue // a worker has it
		}
		checked++
		if p.sink.buf != nil || p.sink.pend != nil {
			held++
		}
		p.sched.Store(false)
		if p.hasWork() {
			p.kick()
		}
	}
	return held, checked
}

// TestParkedSlowReader: a client that stops reading while megabytes are
// published gets them all, intact and in order, once it reads again. The
// socket takes part of a chunk, the rest waits in the sink (written from
// an offset) and moves to the stream's own goroutine, and the next chunks
// queue behind it.
func TestParkedSlowReader(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, nil, Options{FirstFrameDelay: time.Millisecond, Keepalive: time.Minute, Heartbeat: -1})
	defer h.Close()
	s := parkedStream(t, h)

	const n, size = 120, 50 << 10 // 6 MB: more than loopback's socket buffers take
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("%03d", i) + strings.Repeat(string(rune('a'+i%26)), size)
		h.Publish(log.append("b", "c", "message_created", `{"text":"`+want[i]+`"}`, time.Now()))
	}
	_ = s.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i := 0; i < n; {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d of %d frames: %v", i, n, err)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if !strings.Contains(data, `"text":"`+want[i]+`"`) {
			t.Fatalf("frame %d is not the %dth signal published (%d bytes, starts %.20q)", i, i, len(data), data)
		}
		i++
	}
	if held, checked := idleBuffers(h); held > 0 && checked > 0 {
		t.Fatalf("the stream holds its write buffer once idle")
	}
}

// BenchmarkFanout times one signal reaching every one of 2,000 streams of
// a conversation (clients on raw connections in this process), parked and
// on the request's goroutine: go test -run XXX -bench Fanout ./internal/realtime/
func BenchmarkFanout(b *testing.B) {
	const n = 2000
	for _, tc := range []struct {
		name     string
		noHijack bool
	}{{"parked", false}, {"goroutine per stream", true}} {
		b.Run(tc.name, func(b *testing.B) {
			log := &memLog{}
			h := NewHub(log, nil, Options{FirstFrameDelay: time.Millisecond, NoHijack: tc.noHijack,
				MaxStreamsPerUser: n, MaxStreamsPerConversation: n})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = h.Serve(w, r, StreamRequest{BotID: "b", ConversationID: "c", UserID: "u"},
					func(context.Context) error { return nil })
			}))
			defer func() { h.Close(); srv.Close() }()
			arrived := make(chan struct{}, n)
			for range n {
				conn, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				fmt.Fprintf(conn, "GET /listen HTTP/1.1\r\nHost: x\r\n\r\n")
				go func() {
					buf := make([]byte, 4096)
					for {
						m, err := conn.Read(buf)
						if err != nil {
							return
						}
						if strings.Contains(string(buf[:m]), "fan-") {
							arrived <- struct{}{}
						}
					}
				}()
			}
			for h.Subscribers("b", "c") < n {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			b.ResetTimer()
			for i := range b.N {
				h.Publish(log.append("b", "c", "message_created", fmt.Sprintf(`{"text":"fan-%d"}`, i), time.Now()))
				for range n {
					<-arrived
				}
			}
		})
	}
}

// TestPublishedTogetherWrittenTogether: signals of one write (a user's
// message and the bot's answer committed with it) reach each of many
// parked streams in one chunk, one write, though the fan-out schedules
// streams in batches while it goes on.
func TestPublishedTogetherWrittenTogether(t *testing.T) {
	const n = 4 * wakeBatch
	log := &memLog{}
	h := NewHub(log, nil, Options{FirstFrameDelay: time.Millisecond, Keepalive: time.Minute, Heartbeat: -1,
		MaxStreamsPerUser: n, MaxStreamsPerConversation: n})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = h.Serve(w, r, StreamRequest{BotID: "b", ConversationID: "c", UserID: "u"},
			func(context.Context) error { return nil })
	}))
	defer func() { h.Close(); srv.Close() }()
	bodies := make([]*bufio.Reader, n)
	for i := range bodies {
		s := dialStream(t, srv.Listener.Addr().String())
		br := bufio.NewReader(s.conn)
		_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := http.ReadResponse(br, nil); err != nil {
			t.Fatal(err)
		}
		bodies[i] = br
	}
	waitFor(t, "the streams parked", 10*time.Second, func() bool { return h.Parked() == n })
	h.Publish(log.append("b", "c", "message_created", `{"text":"pair-question"}`, time.Now()),
		log.append("b", "c", "message_created", `{"text":"pair-answer"}`, time.Now()))
	split := 0
	for _, br := range bodies {
		for {
			chunk := readChunk(t, br)
			if strings.Contains(chunk, "pair-question") {
				if !strings.Contains(chunk, "pair-answer") {
					split++
				}
				break
			}
		}
	}
	if split > 0 {
		t.Fatalf("%d of %d streams wrote the two signals of one write apart", split, n)
	}
}

// readChunk reads one chunk of a chunked HTTP body, raw.
func readChunk(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var size int
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "%x", &size); err != nil {
		t.Fatalf("chunk size line %q: %v", line, err)
	}
	b := make([]byte, size+2)
	if _, err := io.ReadFull(br, b); err != nil {
		t.Fatal(err)
	}
	return string(b[:size])
}
