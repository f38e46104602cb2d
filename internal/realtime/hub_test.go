package realtime

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// memLog is an in-memory signal log.
type memLog struct {
	mu   sync.Mutex
	sigs map[string][]*model.Signal
}

func (l *memLog) append(bot, conv, typ, data string, at time.Time) *model.Signal {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sigs == nil {
		l.sigs = map[string][]*model.Signal{}
	}
	k := bot + "/" + conv
	s := &model.Signal{BotID: bot, ConversationID: conv, Seq: int64(len(l.sigs[k]) + 1), Type: typ, Data: []byte(data), CreatedAt: at}
	l.sigs[k] = append(l.sigs[k], s)
	return s
}

func (l *memLog) SignalsAfter(_ context.Context, bot, conv string, after int64, limit int) ([]*model.Signal, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*model.Signal
	for _, s := range l.sigs[bot+"/"+conv] {
		if s.Seq > after && len(out) < limit {
			out = append(out, s)
		}
	}
	return out, nil
}

func TestSlowSubscriberDropped(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, nil, Options{Buffer: 4})
	slow := mustSubscribe(t, h, "b", "c", "u1")
	fast := mustSubscribe(t, h, "b", "c", "u2")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			h.Publish(log.append("b", "c", "message_created", fmt.Sprintf(`{"i":%d}`, i), time.Now()))
			// fast keeps up
			if fast.next() == nil {
				t.Error("fast subscriber got nothing")
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("publish blocked on a slow subscriber")
	}
	select {
	case <-slow.done:
	default:
		t.Fatal("slow subscriber not dropped")
	}
	if slow.reason != reasonSlow {
		t.Fatalf("reason %d", slow.reason)
	}
	select {
	case <-fast.done:
		t.Fatal("fast subscriber dropped")
	default:
	}
	if n := h.Subscribers("b", "c"); n != 1 {
		t.Fatalf("%d subscribers left", n)
	}
}

// TestRemovalLeavesTopic: a removed participant's stream gets the notice
// of its own removal, then nothing more, whether the signals after it are
// published apart or with it (one write's signals).
func TestRemovalLeavesTopic(t *testing.T) {
	for _, together := range []bool{false, true} {
		t.Run(fmt.Sprintf("together=%v", together), func(t *testing.T) {
			log := &memLog{}
			h := NewHub(log, nil, Options{})
			a := mustSubscribe(t, h, "b", "c", "alice")
			bob := mustSubscribe(t, h, "b", "c", "bob")
			removed := log.append("b", "c", model.SignalParticipantRemoved, `{"conversationId":"c","participantId":"bob"}`, time.Now())
			after := log.append("b", "c", model.SignalMessageCreated, `{}`, time.Now())
			if together {
				h.Publish(removed, after)
			} else {
				h.Publish(removed)
				h.Publish(after)
			}
			if bob.queued() != 1 || a.queued() != 2 {
				t.Fatalf("bob got %d, alice %d", bob.queued(), a.queued())
			}
			if it := bob.next(); it.removed != "bob" {
				t.Fatalf("bob's last item %+v", it)
			}
			if n := h.Subscribers("b", "c"); n != 1 {
				t.Fatalf("%d subscribers left, want alice alone", n)
			}
		})
	}
}

// sseClient reads frames of one stream.
type sseClient struct {
	res    *http.Response
	frames chan [2]string // id, data
	cancel context.CancelFunc
}

func openStream(t *testing.T, url string, lastID string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &sseClient{res: res, frames: make(chan [2]string, 1000), cancel: cancel}
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(res.Body)
		var id, data string
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				c.frames <- [2]string{id, data}
				id, data = "", ""
			case strings.HasPrefix(l, "id: "):
				id = l[4:]
			case strings.HasPrefix(l, "data: "):
				data = l[6:]
			}
		}
	}()
	t.Cleanup(func() { cancel(); res.Body.Close() })
	return c
}

func (c *sseClient) next(t *testing.T) [2]string {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			t.Fatal("stream ended")
		}
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("timeout")
	}
	return [2]string{}
}

func serveHub(t *testing.T, h *Hub, user string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = h.Serve(w, r, StreamRequest{BotID: "b", ConversationID: "c", UserID: user, LastEventID: r.Header.Get("Last-Event-ID")},
			func(context.Context) error { return nil })
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestStreamOrderAndReplay: frames carry ids; signals published out of
// order are delivered in seq order without gaps; a reconnect with
// Last-Event-ID gets exactly what was missed; a fresh stream replays the
// recent window.
func TestStreamOrderAndReplay(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, nil, Options{FirstFrameDelay: 10 * time.Millisecond, ReplayWindow: time.Minute})
	defer h.Close()
	old := time.Now().Add(-time.Hour)
	for range 3 {
		log.append("b", "c", "message_created", `{"old":true}`, old)
	}
	log.append("b", "c", "message_created", `{"recent":true}`, time.Now()) // seq 4
	srv := serveHub(t, h, "u")
	c := openStream(t, srv.URL, "")
	if f := c.next(t); f[0] != "4" || !strings.Contains(f[1], "recent") {
		t.Fatalf("first frame %v", f)
	}
	// Publish 6 before 5: 5 is read from the log, 6 follows.
	s5 := log.append("b", "c", "message_created", `{"n":5}`, time.Now())
	s6 := log.append("b", "c", "message_created", `{"n":6}`, time.Now())
	h.Publish(s6)
	h.Publish(s5)
	for _, want := range []string{"5", "6"} {
		if f := c.next(t); f[0] != want {
			t.Fatalf("got id %s, want %s", f[0], want)
		}
	}
	c.cancel()
	for i := 7; i <= 9; i++ {
		h.Publish(log.append("b", "c", "message_created", fmt.Sprintf(`{"n":%d}`, i), time.Now()))
	}
	c2 := openStream(t, srv.URL, "6")
	for i := 7; i <= 9; i++ {
		f := c2.next(t)
		if f[0] != strconv.Itoa(i) || f[1] != fmt.Sprintf(`{"type":"message_created","data":{"n":%d}}`, i) {
			t.Fatalf("replayed %v, want %d", f, i)
		}
	}
	// Replay from the start.
	c3 := openStream(t, srv.URL, "0")
	for i := 1; i <= 9; i++ {
		if f := c3.next(t); f[0] != strconv.Itoa(i) {
			t.Fatalf("full replay got %v at %d", f, i)
		}
	}
}

func TestKeepaliveAndShutdown(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, nil, Options{Keepalive: 50 * time.Millisecond, FirstFrameDelay: time.Millisecond})
	srv := serveHub(t, h, "u")
	c := openStream(t, srv.URL, "")
	if c.res.Header.Get("Content-Type") != "text/event-stream" || c.res.StatusCode != 200 {
		t.Fatalf("headers %v", c.res.Header)
	}
	if f := c.next(t); f[1] != "ping" || f[0] != "0" {
		t.Fatalf("keepalive %v", f)
	}
	h.Close()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("stream not closed by shutdown")
		}
	}
}

func TestWindowStartLongLog(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, nil, Options{ReplayWindow: time.Minute})
	old := time.Now().Add(-time.Hour)
	for range 1000 {
		log.append("b", "c", "x", `{}`, old)
	}
	for range 5 {
		log.append("b", "c", "x", `{}`, time.Now())
	}
	got, err := h.windowStart(context.Background(), "b", "c")
	if err != nil || got != 1000 {
		t.Fatalf("windowStart %d %v, want 1000", got, err)
	}
	got, _ = h.windowStart(context.Background(), "b", "empty")
	if got != 0 {
		t.Fatalf("empty windowStart %d", got)
	}
}

func mustSubscribe(t *testing.T, h *Hub, bot, conv, user string) *Subscription {
	t.Helper()
	s, err := h.subscribe(StreamRequest{BotID: bot, ConversationID: conv, UserID: user})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIdleSubscriptionHoldsNoBuffer: an idle subscription holds no queue
// buffer (one of Options.Buffer signals, 2 KB, was most of an idle
// listener's heap), and one emptied after a fan-out's few signals keeps at
// most a small one.
func TestIdleSubscriptionHoldsNoBuffer(t *testing.T) {
	const n = 10000
	h := NewHub(&memLog{}, nil, Options{MaxStreamsPerUser: n, MaxStreamsPerConversation: n})
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	subs := make([]*Subscription, n)
	for i := range subs {
		var err error
		if subs[i], err = h.subscribe(StreamRequest{BotID: "b", ConversationID: "c", UserID: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	idle := heap()
	log := &memLog{}
	h.Publish(log.append("b", "c", "message_created", `{}`, time.Now()), log.append("b", "c", "message_created", `{}`, time.Now()))
	for _, s := range subs {
		for s.next() != nil {
		}
	}
	drained := heap()
	runtime.KeepAlive(subs)
	if per := (idle - before) / n; per > 1024 {
		t.Errorf("an idle subscription holds %d bytes", per)
	}
	if per := (drained - before) / n; per > 1024 {
		t.Errorf("a drained subscription holds %d bytes", per)
	}
}
