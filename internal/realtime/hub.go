// Package realtime fans committed conversation signals out to open SSE
// streams.
//
// The store's signal log is the source of truth: every signal has a
// per-conversation sequence number, and a stream delivers seq after seq
// with no gap and no duplicate. The hub's in-memory fan-out is only the fast
// path: when a stream sees a hole (publishes of concurrent commits arrive
// out of order, a wake-up from another node, a reconnect with
// Last-Event-ID) it reads the missing signals from the log itself, in its
// own goroutine, so a publisher never waits for a reader.
package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// SignalLog reads a conversation's durable signal log (store.Chat has this
// method; the hub does not depend on the store package).
type SignalLog interface {
	SignalsAfter(ctx context.Context, botID, conversationID string, after int64, limit int) ([]*model.Signal, error)
}

// Broker carries wake-ups between nodes sharing a database.
type Broker interface {
	// Announce tells the other nodes a signal was committed. It must not
	// block.
	Announce(sig *model.Signal)
	// Run delivers wake-ups from other nodes to wake until ctx ends.
	// resync is called after a (re)connection, when wake-ups may have been
	// missed.
	Run(ctx context.Context, wake func(botID, conversationID string, seq int64), resync func()) error
}

// Options tune a Hub; zero values take the defaults.
type Options struct {
	// Buffer is how many signals a subscriber may lag behind before it is
	// dropped (default 256).
	Buffer int
	// Keepalive is the idle interval after which a "ping" data frame is
	// sent (default 25 s; the client's watchdog fires after 60 s without a
	// data frame, the browser polyfill after 45 s without bytes).
	Keepalive time.Duration
	// Heartbeat is the idle interval after which a comment line (": \n\n",
	// dispatched to no listener) is written, so that the connection never
	// looks idle to the client: the official Node.js clients reuse
	// keep-alive sockets of Node's global agent, which drops a socket idle
	// for 5 s, listen streams included (default 4 s; negative: none).
	Heartbeat time.Duration
	// FirstFrameDelay holds the first frame after the headers: the Node
	// client drops frames that arrive with the headers (default 50 ms).
	FirstFrameDelay time.Duration
	// ReplayWindow is how far back a stream opened without Last-Event-ID
	// replays, so a signal published just before the stream registered is
	// not lost (default 5 s).
	ReplayWindow time.Duration
	// WriteTimeout bounds each write to a stream (default 10 s).
	WriteTimeout time.Duration
	// MaxStreamsPerUser bounds the open streams of one user of a bot
	// (default 20); MaxStreamsPerConversation those of one conversation
	// (default 200). A stream above either is refused with RateLimited
	// (429, Retry-After) before anything is written.
	MaxStreamsPerUser         int
	MaxStreamsPerConversation int
	// NoHijack keeps every stream on its request's goroutine instead of
	// parking idle HTTP/1.1 streams in the hub (park.go).
	NoHijack bool
	Log      *slog.Logger
}

// Default stream caps (Options).
const (
	DefaultMaxStreamsPerUser         = 20
	DefaultMaxStreamsPerConversation = 200
)

func (o *Options) defaults() {
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	if o.Keepalive <= 0 {
		o.Keepalive = 25 * time.Second
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = 4 * time.Second
	}
	if o.FirstFrameDelay < 0 {
		o.FirstFrameDelay = 0
	} else if o.FirstFrameDelay == 0 {
		o.FirstFrameDelay = 50 * time.Millisecond
	}
	if o.ReplayWindow <= 0 {
		o.ReplayWindow = 5 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxStreamsPerUser <= 0 {
		o.MaxStreamsPerUser = DefaultMaxStreamsPerUser
	}
	if o.MaxStreamsPerConversation <= 0 {
		o.MaxStreamsPerConversation = DefaultMaxStreamsPerConversation
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

type topicKey struct{ bot, conv string }

type topic struct {
	subs map[*Subscription]struct{}
	// high is the highest seq fanned out here; remote wake-ups at or below
	// it need no read.
	high     int64
	fetching bool  // a remote read is queued or running
	want     int64 // highest seq announced by a remote wake-up
	// logHigh is the last seq a stream found in the log when it read it
	// to its end at logReadAt (unix ns): the keepalives' shared read.
	logHigh   int64
	logReadAt int64
}

// Hub is the signal fan-out of one node.
type Hub struct {
	opts   Options
	log    SignalLog
	broker Broker

	mu     sync.Mutex
	topics map[topicKey]*topic
	users  map[topicKey]int // open streams per (bot, user)
	closed bool

	fetchQ chan topicKey
	stop   context.CancelFunc
	wg     sync.WaitGroup

	parking parking   // streams held without a goroutine (park.go)
	wake    []*parked // fanout's batch (guarded by mu)
}

// NewHub returns a hub reading replays from log. Call Start to run the
// broker (if any) and Close on shutdown.
func NewHub(log SignalLog, broker Broker, opts Options) *Hub {
	opts.defaults()
	h := &Hub{opts: opts, log: log, broker: broker, topics: map[topicKey]*topic{}, users: map[topicKey]int{},
		fetchQ: make(chan topicKey, 1024)}
	h.parking.init(h.opts)
	return h
}

// Options returns the effective options.
func (h *Hub) Options() Options { return h.opts }

// Start runs the broker's receiving side and the readers of remote signals.
func (h *Hub) Start(ctx context.Context) {
	ctx, h.stop = context.WithCancel(ctx)
	if h.broker == nil {
		return
	}
	for range 4 {
		h.wg.Add(1)
		go func() { defer h.wg.Done(); h.fetchLoop(ctx) }()
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for ctx.Err() == nil {
			err := h.broker.Run(ctx, h.remote, h.resync)
			if ctx.Err() != nil {
				return
			}
			h.opts.Log.Warn("realtime broker stopped; restarting", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// Close ends every stream (they finish cleanly) and stops the broker. Every
// call returns once the parked streams ended.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.closeParked()
		return
	}
	h.closed = true
	for _, t := range h.topics {
		for s := range t.subs {
			s.drop(reasonShutdown)
		}
	}
	h.topics = map[topicKey]*topic{}
	h.mu.Unlock()
	h.closeParked()
	if h.stop != nil {
		h.stop()
	}
	h.wg.Wait()
}

// item is one signal as queued to subscribers, with its frame rendered once.
type item struct {
	sig     *model.Signal
	seq     int64
	frame   []byte // the Chat API's SSE frame
	removed string // participant removed by this signal, if any
}

func newItem(sig *model.Signal) *item {
	it := &item{sig: sig, seq: sig.Seq, frame: renderFrame(sig)}
	if sig.Type == model.SignalParticipantRemoved {
		var d struct {
			ParticipantID string `json:"participantId"`
		}
		_ = json.Unmarshal(sig.Data, &d)
		it.removed = d.ParticipantID
	}
	return it
}

// renderFrame writes one SSE event: id (the conversation's seq), the
// default event name, and the {type, data} envelope on one data line.
func renderFrame(sig *model.Signal) []byte {
	b := make([]byte, 0, len(sig.Data)+len(sig.Type)+64)
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, sig.Seq, 10)
	b = append(b, "\nevent: message\ndata: {\"type\":"...)
	b = strconv.AppendQuote(b, sig.Type)
	b = append(b, ",\"data\":"...)
	b = append(b, sig.Data...)
	b = append(b, "}\n\n"...)
	return b
}

// Publish fans committed signals (one write's, in commit order) out to
// this node's streams of their conversations and announces them to the
// other nodes. It never blocks: a subscriber whose buffer is full is
// dropped. A run of signals of one conversation is offered to each stream
// before the stream is scheduled, so that a stream writes a user's message
// and the bot's answer committed with it in one write, not two.
func (h *Hub) Publish(sigs ...*model.Signal) {
	for i := 0; i < len(sigs); {
		k := topicKey{sigs[i].BotID, sigs[i].ConversationID}
		j := i + 1
		for j < len(sigs) && sigs[j].BotID == k.bot && sigs[j].ConversationID == k.conv {
			j++
		}
		h.fanout(k, sigs[i:j])
		i = j
	}
	if h.broker != nil {
		for _, sig := range sigs {
			h.broker.Announce(sig)
		}
	}
}

func (h *Hub) fanout(k topicKey, sigs []*model.Signal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[k]
	if t == nil {
		return
	}
	items := make([]*item, len(sigs))
	for i, sig := range sigs {
		items[i] = newItem(sig)
		t.high = max(t.high, sig.Seq)
	}
	// Parked streams with new work are scheduled in batches.
	wake := h.wake[:0]
	for s := range t.subs {
		if !h.offerAll(t, s, items) {
			continue
		}
		if p := s.park.Load(); p != nil && p.sched.CompareAndSwap(false, true) {
			if wake = append(wake, p); len(wake) == wakeBatch {
				// The workers start while the loop goes on.
				h.enqueue(wake...)
				clear(wake)
				wake = wake[:0]
			}
		}
	}
	if len(wake) > 0 {
		h.enqueue(wake...)
		clear(wake)
	}
	h.wake = wake
	if len(t.subs) == 0 {
		delete(h.topics, k)
	}
}

// offerAll queues items to s, which leaves t when its buffer is full
// (dropped: false) or when it gets the notice of its own removal (then
// nothing more). Called with h.mu held.
func (h *Hub) offerAll(t *topic, s *Subscription, items []*item) bool {
	for _, it := range items {
		if !s.offer(it) {
			delete(t.subs, s)
			s.drop(reasonSlow)
			return false
		}
		if it.removed != "" && it.removed == s.userID {
			delete(t.subs, s)
			return true
		}
	}
	return true
}

// wakeBatch is how many parked streams a fan-out schedules at once.
const wakeBatch = 128

// CloseConversation ends every stream of a conversation (it was deleted).
func (h *Hub) CloseConversation(botID, conversationID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := topicKey{botID, conversationID}
	if t := h.topics[k]; t != nil {
		for s := range t.subs {
			s.drop(reasonGone)
		}
		delete(h.topics, k)
	}
}

// EndBotStreams ends the streams of a bot whose credential keep refuses
// (the credential they were authenticated with was rotated out, or the
// bot's chat was disabled or deleted).
func (h *Hub) EndBotStreams(botID string, keep func(credential string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, t := range h.topics {
		if k.bot != botID {
			continue
		}
		for s := range t.subs {
			if !keep(s.credential) {
				delete(t.subs, s)
				s.drop(reasonGone)
			}
		}
		if len(t.subs) == 0 {
			delete(h.topics, k)
		}
	}
}

// remote handles a wake-up from another node: if this node has streams of
// that conversation, read the new signals from the log once and fan them
// out.
func (h *Hub) remote(botID, conversationID string, seq int64) {
	k := topicKey{botID, conversationID}
	h.mu.Lock()
	t := h.topics[k]
	if t == nil || seq <= t.high {
		h.mu.Unlock()
		return
	}
	if seq > t.want {
		t.want = seq
	}
	queue := !t.fetching
	t.fetching = true
	h.mu.Unlock()
	if queue {
		select {
		case h.fetchQ <- k:
		default:
			// The readers are saturated; the streams' own gap checks
			// (at the next signal or keepalive) catch up instead.
			h.mu.Lock()
			if t := h.topics[k]; t != nil {
				t.fetching = false
			}
			h.mu.Unlock()
		}
	}
}

// resync wakes every topic after the broker reconnected.
func (h *Hub) resync() {
	h.mu.Lock()
	keys := make([]topicKey, 0, len(h.topics))
	for k := range h.topics {
		keys = append(keys, k)
	}
	h.mu.Unlock()
	for _, k := range keys {
		h.mu.Lock()
		t := h.topics[k]
		var next int64
		if t != nil {
			next = t.high + 1
		}
		h.mu.Unlock()
		if t != nil {
			h.remote(k.bot, k.conv, next)
		}
	}
}

func (h *Hub) fetchLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-h.fetchQ:
			h.fetch(ctx, k)
		}
	}
}

func (h *Hub) fetch(ctx context.Context, k topicKey) {
	for {
		h.mu.Lock()
		t := h.topics[k]
		if t == nil {
			h.mu.Unlock()
			return
		}
		after := t.high
		if after == 0 {
			// Nothing seen here yet: start just before the announced seq;
			// each stream fills older holes itself.
			after = t.want - 1
		}
		if after >= t.want {
			t.fetching = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		sigs, err := h.log.SignalsAfter(rctx, k.bot, k.conv, after, 256)
		cancel()
		if err != nil || len(sigs) == 0 {
			if err != nil && ctx.Err() == nil {
				h.opts.Log.Warn("realtime: reading remote signals failed", "err", err)
			}
			h.mu.Lock()
			if t := h.topics[k]; t != nil {
				t.fetching = false
			}
			h.mu.Unlock()
			return
		}
		h.fanout(k, sigs)
	}
}

// logReadTo records that a stream read the conversation's log to its end,
// last seq, in a read started at at.
func (h *Hub) logReadTo(k topicKey, last int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[k]; t != nil && at.UnixNano() > t.logReadAt {
		t.logHigh, t.logReadAt = last, at.UnixNano()
	}
}

// logReadRecently reports whether a stream of the conversation read its
// log within half a Keepalive and found nothing after cursor.
func (h *Hub) logReadRecently(k topicKey, cursor int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[k]
	return t != nil && t.logHigh <= cursor && time.Now().UnixNano()-t.logReadAt < int64(h.opts.Keepalive/2)
}

// subscribe registers a stream of a conversation for userID, within the
// caps on streams per user and per conversation.
func (h *Hub) subscribe(req StreamRequest) (*Subscription, error) {
	s := &Subscription{hub: h, key: topicKey{req.BotID, req.ConversationID}, userID: req.UserID,
		credential: req.Credential, limit: h.opts.Buffer, ready: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.drop(reasonShutdown)
		return s, nil
	}
	t := h.topics[s.key]
	uk := topicKey{req.BotID, req.UserID}
	if h.users[uk] >= h.opts.MaxStreamsPerUser {
		return nil, tooManyStreams("this user has %d open streams, the most allowed", h.opts.MaxStreamsPerUser)
	}
	if t != nil && len(t.subs) >= h.opts.MaxStreamsPerConversation {
		return nil, tooManyStreams("this conversation has %d open streams, the most allowed", h.opts.MaxStreamsPerConversation)
	}
	if t == nil {
		t = &topic{subs: map[*Subscription]struct{}{}}
		h.topics[s.key] = t
	}
	t.subs[s] = struct{}{}
	h.users[uk]++
	s.counted = true
	return s, nil
}

func tooManyStreams(format string, n int) error {
	return model.Errorf(model.ErrRateLimited, format+"; close one or retry later", n)
}

func (h *Hub) unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[s.key]; t != nil {
		delete(t.subs, s)
		if len(t.subs) == 0 {
			delete(h.topics, s.key)
		}
	}
	if s.counted {
		s.counted = false
		uk := topicKey{s.key.bot, s.userID}
		if h.users[uk]--; h.users[uk] <= 0 {
			delete(h.users, uk)
		}
	}
}

// Subscribers counts the open streams of a conversation (for tests and
// metrics).
func (h *Hub) Subscribers(botID, conversationID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[topicKey{botID, conversationID}]; t != nil {
		return len(t.subs)
	}
	return 0
}
