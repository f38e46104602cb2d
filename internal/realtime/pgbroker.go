package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/model"
)

// PGBroker wakes the other nodes on the same PostgreSQL database. The
// signals themselves stay in the store's log: a NOTIFY only carries (bot,
// conversation, seq), sent after the commit, and a receiving node reads the
// signals from the log, so order and the absence of gaps hold across nodes
// exactly as on one node. A lost wake-up only delays delivery until the next
// signal or keepalive of the stream, which re-reads the log.
type PGBroker struct {
	dsn     string
	channel string
	node    string

	mu      sync.Mutex
	pending map[topicKey]int64 // coalesced announcements: newest seq per topic
	kick    chan struct{}
}

// NewPGBroker returns a broker using dsn for its two dedicated connections
// (one LISTENs, one sends NOTIFYs). channel defaults to "parley_signals";
// nodes sharing a database must use the same one.
func NewPGBroker(dsn, channel string) *PGBroker {
	if channel == "" {
		channel = "parley_signals"
	}
	return &PGBroker{dsn: dsn, channel: channel, node: model.NewNodeID(),
		pending: map[topicKey]int64{}, kick: make(chan struct{}, 1)}
}

type wakeMsg struct {
	Node string `json:"n"`
	Bot  string `json:"b"`
	Conv string `json:"c"`
	Seq  int64  `json:"s"`
}

// Announce queues a wake-up; announcements of one conversation coalesce to
// the newest seq, so this never blocks and memory stays bounded by the
// number of active conversations.
func (b *PGBroker) Announce(sig *model.Signal) {
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
	listen, err := pgx.Connect(ctx, b.dsn)
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
	// stream re-read the log.
	resync()
	for {
		n, err := listen.WaitForNotification(ctx)
		if err != nil {
			cancel()
			<-errc
			return fmt.Errorf("pg broker: wait: %w", err)
		}
		var m wakeMsg
		if json.Unmarshal([]byte(n.Payload), &m) != nil || m.Node == b.node {
			continue
		}
		wake(m.Bot, m.Conv, m.Seq)
	}
}

func (b *PGBroker) sendLoop(ctx context.Context, conn *pgx.Conn) error {
	select { // send what a previous connection left behind
	case b.kick <- struct{}{}:
	default:
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.kick:
		}
		b.mu.Lock()
		batch := b.pending
		b.pending = map[topicKey]int64{}
		b.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		var pb pgx.Batch
		for k, seq := range batch {
			payload, _ := json.Marshal(wakeMsg{Node: b.node, Bot: k.bot, Conv: k.conv, Seq: seq})
			pb.Queue("SELECT pg_notify($1, $2)", b.channel, string(payload))
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
			b.mu.Unlock()
			return err
		}
	}
}
