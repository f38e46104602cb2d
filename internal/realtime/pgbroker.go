package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parley-bots/parley/internal/model"
)

// PGBroker wakes the other nodes on the same PostgreSQL database. The
// signals themselves stay in the store's log: a NOTIFY only carries (bot,
// conversation, seq), sent after the commit, and a receiving node reads the
// signals from the log, so order and the absence of gaps hold across nodes
// exactly as on one node. A lost wake-up only delays delivery until the next
// signal or keepalive of the stream, which re-reads the log.
//
// A node alone on its database sends nothing: a NOTIFY per signal, which
// PostgreSQL hands back to the sender's own listening session, costs a
// node that has no one to wake a sixth of its CPU per message. Each
// node's listening session carries its name in application_name
// (listenerPrefix, channel, node), which pg_stat_activity shows to every
// role; the sender looks there every PeerPoll, and a node that starts says
// hello at once, so the others start waking it before their next look.
type PGBroker struct {
	dsn     string
	channel string
	node    string

	// PeerPoll is how often the sender looks for other nodes' listening
	// sessions (default 1 s): a node gone stops being woken after this.
	PeerPoll time.Duration
	// ListenCheck is how long the listening session may stay silent
	// before a round trip checks it, which must come back within as long
	// (default 20 s). A session can die without its socket knowing (a NAT
	// or firewall that drops a quiet connection, a host gone without a
	// reset): it would wait for notifications that never come, for as
	// long as TCP keepalive takes (most of an hour), while the caches
	// keep their copies for a minute (Hearing). The check finds it within
	// twice ListenCheck, and keeps the connection from looking idle.
	ListenCheck time.Duration

	peers  atomic.Bool  // another node listens (true until the first look)
	legacy atomic.Bool  // a node of an older version (no hello) was heard: always send
	hellos atomic.Int64 // hellos heard: a look that began before one is stale
	// sent counts the NOTIFYs sent (for tests).
	sent atomic.Int64

	mu      sync.Mutex
	pending map[topicKey]int64 // coalesced announcements: newest seq per topic
	greet   int                // helloStart or helloWelcome to send, 0: none
	kick    chan struct{}

	changes changes // told changes to what nodes cache (changes.go)
}

// listenerPrefix starts the application_name of a node's listening session.
const listenerPrefix = "parley-listen:"

// NewPGBroker returns a broker using dsn for its two dedicated connections
// (one LISTENs, one sends NOTIFYs). channel defaults to "parley_signals";
// nodes sharing a database must use the same one.
func NewPGBroker(dsn, channel string) *PGBroker {
	if channel == "" {
		channel = "parley_signals"
	}
	b := &PGBroker{dsn: dsn, channel: channel, node: model.NewNodeID(), PeerPoll: time.Second, ListenCheck: 20 * time.Second,
		pending: map[topicKey]int64{}, kick: make(chan struct{}, 1)}
	b.peers.Store(true)
	return b
}

type wakeMsg struct {
	Node string `json:"n"`
	Bot  string `json:"b,omitempty"`
	Conv string `json:"c,omitempty"`
	Seq  int64  `json:"s,omitempty"`
	// Hello is set by a node that starts listening (helloStart), and by
	// the nodes answering it (helloWelcome): a node that hears from
	// another for the first time re-reads its streams' logs, since that
	// node may have sent nothing while it did not know of this one.
	Hello int `json:"h,omitempty"`
	// V is 1 from nodes that say hello. A node of an earlier version
	// sends none and cannot be found in pg_stat_activity: once one is
	// heard, this node sends to it as earlier versions did (a rolling
	// upgrade).
	V int `json:"v,omitempty"`
	// Change is the kind of a change to what nodes cache (Tell), of Bot
	// and Conv; such a message wakes no stream. A node of an earlier
	// version takes it for a wake-up of seq 0, which wakes nothing.
	Change string `json:"x,omitempty"`
}

const (
	helloStart = 1 + iota
	helloWelcome
)

// Alone reports that, as far as this node can tell, no other node shares
// the database: none was seen listening at the last look (PeerPoll) and no
// hello came since. It is false until the first look, and for good once a
// node of an older version was heard.
func (b *PGBroker) Alone() bool { return !b.peers.Load() && !b.legacy.Load() }

// Announce queues a wake-up; announcements of one conversation coalesce to
// the newest seq, so this never blocks and memory stays bounded by the
// number of active conversations.
func (b *PGBroker) Announce(sig *model.Signal) {
	if b.Alone() {
		return // no other node to wake
	}
	k := topicKey{sig.BotID, sig.ConversationID}
	b.mu.Lock()
	if sig.Seq > b.pending[k] {
		b.pending[k] = sig.Seq
	}
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Run listens for wake-ups and sends queued announcements until ctx ends
// or a connection fails (the hub restarts it).
func (b *PGBroker) Run(ctx context.Context, wake func(botID, conversationID string, seq int64), resync func()) error {
	cfg, err := pgx.ParseConfig(b.dsn)
	if err != nil {
		return fmt.Errorf("pg broker: %w", err)
	}
	cfg.RuntimeParams["application_name"] = b.listenerName()
	listen, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pg broker: connect listener: %w", err)
	}
	defer listen.Close(context.Background())
	if _, err := listen.Exec(ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		return fmt.Errorf("pg broker: listen: %w", err)
	}
	send, err := pgx.Connect(ctx, b.dsn)
	if err != nil {
		return fmt.Errorf("pg broker: connect sender: %w", err)
	}
	defer send.Close(context.Background())
	// Tell the nodes already there to start waking this one (the sender's
	// first batch).
	b.mu.Lock()
	b.greetWith(helloStart)
	b.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		err := b.sendLoop(ctx, send)
		if err != nil {
			cancel() // a dead sender restarts the whole broker
		}
		errc <- err
	}()
	// Wake-ups sent while this node was not listening are lost: let every
	// stream re-read the log; and so are changes: the caches forget all.
	resync()
	b.changes.hear()
	defer b.changes.deaf()
	self := send.PgConn().PID()
	heard := map[string]bool{}
	for {
		n, err := b.wait(ctx, listen)
		if err != nil {
			cancel()
			<-errc
			return fmt.Errorf("pg broker: wait: %w", err)
		}
		if n.PID == self {
			continue // this node's own announcement, handed back
		}
		var m wakeMsg
		if json.Unmarshal([]byte(n.Payload), &m) != nil || m.Node == b.node {
			continue
		}
		b.peers.Store(true)
		if m.V == 0 {
			b.legacy.Store(true)
		}
		if !heard[m.Node] {
			// m.Node may have sent nothing to this node so far: what it
			// committed meanwhile is in the log, re-read it.
			heard[m.Node] = true
			resync()
		}
		switch {
		case m.Change != "":
			b.changes.heard(change{m.Change, m.Bot, m.Conv})
		case m.Hello == helloStart:
			b.hellos.Add(1)
			b.mu.Lock()
			b.greetWith(helloWelcome)
			b.mu.Unlock()
			b.poke()
		case m.Hello == 0:
			wake(m.Bot, m.Conv, m.Seq)
		}
	}
}

// wait returns the listening session's next notification. After
// ListenCheck of silence it checks the session (ListenCheck): a round trip
// that does not come back within as long fails the session. Notifications
// that come meanwhile are kept by pgx for the next wait.
func (b *PGBroker) wait(ctx context.Context, listen *pgx.Conn) (*pgconn.Notification, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, b.ListenCheck)
		n, err := listen.WaitForNotification(wctx)
		silent := err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		if !silent {
			return n, err // a timed-out wait leaves the connection usable
		}
		pctx, cancel := context.WithTimeout(ctx, b.ListenCheck)
		err = listen.Ping(pctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("listening session silent for %v, then no answer within as long: %w", b.ListenCheck, err)
		}
	}
}

func (b *PGBroker) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// listenerName is the application_name of this node's listening session.
// PostgreSQL cuts names at 63 bytes: this node then does not find its own
// and keeps waking (lookForPeers).
func (b *PGBroker) listenerName() string { return b.listenerGroup() + b.node }

// listenerGroup starts the listener names of the nodes on b's channel.
func (b *PGBroker) listenerGroup() string { return listenerPrefix + b.channel + " " }

// lookForPeers reports whether another node's listening session is on the
// database. When pg_stat_activity does not show this node's own one (a
// server that hides application_name), it cannot tell and says yes.
func (b *PGBroker) lookForPeers(ctx context.Context, conn *pgx.Conn) (bool, error) {
	rows, err := conn.Query(ctx, `SELECT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND starts_with(application_name, $1)`, b.listenerGroup())
	if err != nil {
		return true, fmt.Errorf("pg broker: look for peers: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return true, fmt.Errorf("pg broker: look for peers: %w", err)
	}
	self, others := false, false
	for _, n := range names {
		if n == b.listenerName() {
			self = true
		} else {
			others = true
		}
	}
	return others || !self, nil
}

// greetWith sets the greeting the sender sends next (b.mu held): a hello
// asks the others for a welcome, so it stands for both.
func (b *PGBroker) greetWith(h int) {
	if b.greet == 0 || h == helloStart {
		b.greet = h
	}
}

// queue adds a NOTIFY of m, from this node, to pb.
func (b *PGBroker) queue(pb *pgx.Batch, m wakeMsg) {
	m.Node, m.V = b.node, 1
	payload, _ := json.Marshal(m)
	pb.Queue("SELECT pg_notify($1, $2)", b.channel, string(payload))
}

func (b *PGBroker) sendLoop(ctx context.Context, conn *pgx.Conn) error {
	b.poke() // send what a previous connection left behind
	poll := time.NewTicker(b.PeerPoll)
	defer poll.Stop()
	look := func() error {
		heard := b.hellos.Load()
		// Not cut short by a stop either: a query interrupted by its
		// context breaks the connection the last send needs.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		peers, err := b.lookForPeers(lctx, conn)
		cancel()
		// A hello heard during the look comes from a node it may have
		// missed.
		b.peers.Store(peers || b.hellos.Load() != heard)
		return err
	}
	if err := look(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			// Stopping (the node shuts down): what was committed and
			// announced but not sent yet still goes out, or the other
			// nodes would learn of it only at their next sweep.
			return b.send(context.WithoutCancel(ctx), conn)
		case <-poll.C:
			if err := look(); err != nil {
				return err
			}
			continue
		case <-b.kick:
		}
		// Not cut short by a stop, as the look.
		if err := b.send(context.WithoutCancel(ctx), conn); err != nil {
			return err
		}
	}
}

// send sends the queued announcements (and a hello) in one batch, within
// 10 s; on a failure they stay queued for the next connection.
func (b *PGBroker) send(ctx context.Context, conn *pgx.Conn) error {
	b.mu.Lock()
	batch, greet := b.pending, b.greet
	b.pending, b.greet = map[topicKey]int64{}, 0
	b.mu.Unlock()
	told := b.changes.out.take()
	if len(batch) == 0 && greet == 0 && len(told) == 0 {
		return nil
	}
	var pb pgx.Batch
	if greet != 0 {
		b.queue(&pb, wakeMsg{Hello: greet})
	}
	for _, c := range told {
		b.queue(&pb, wakeMsg{Change: c.kind, Bot: c.bot, Conv: c.conv})
	}
	for k, seq := range batch {
		b.queue(&pb, wakeMsg{Bot: k.bot, Conv: k.conv, Seq: seq})
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := conn.SendBatch(sctx, &pb).Close()
	cancel()
	if err != nil {
		// Put the batch back so the next connection sends it.
		b.mu.Lock()
		for k, seq := range batch {
			if seq > b.pending[k] {
				b.pending[k] = seq
			}
		}
		if greet != 0 {
			b.greetWith(greet)
		}
		b.mu.Unlock()
		b.changes.out.putBack(told)
		return err
	}
	b.sent.Add(int64(pb.Len()))
	return nil
}
