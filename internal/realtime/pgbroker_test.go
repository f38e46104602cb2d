package realtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// brokerNode runs one PGBroker as a hub would, recording its wake-ups and
// resyncs.
type brokerNode struct {
	b       *PGBroker
	cancel  context.CancelFunc
	done    chan struct{}
	resyncs atomic.Int64

	mu    sync.Mutex
	woken []int64 // seqs
}

func startBroker(t *testing.T, url, channel string, setup ...func(*PGBroker)) *brokerNode {
	t.Helper()
	n := &brokerNode{b: NewPGBroker(url, channel), done: make(chan struct{})}
	n.b.PeerPoll = 50 * time.Millisecond
	for _, f := range setup {
		f(n.b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		err := n.b.Run(ctx, func(_, _ string, seq int64) {
			n.mu.Lock()
			n.woken = append(n.woken, seq)
			n.mu.Unlock()
		}, func() { n.resyncs.Add(1) })
		if ctx.Err() == nil {
			t.Errorf("broker stopped: %v", err)
		}
	}()
	t.Cleanup(n.stop)
	return n
}

func (n *brokerNode) stop() {
	n.cancel()
	<-n.done
}

func (n *brokerNode) wokenWith(seq int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.woken {
		if s == seq {
			return true
		}
	}
	return false
}

// watchChannel counts the notifications on channel whose payload match
// accepts, as a plain session (not a node) sees them, until the test ends.
func watchChannel(t *testing.T, url, channel string, match func(payload string) bool) *atomic.Int64 {
	t.Helper()
	watch, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Exec(context.Background(), "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		watch.Close(context.Background())
		t.Fatal(err)
	}
	var n atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := watch.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if match(msg.Payload) {
				n.Add(1)
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
		watch.Close(context.Background())
	})
	return &n
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPGBrokerPeers: a node alone on its database sends no wake-up; a node
// that starts is woken by the others from its hello on, re-reads its
// streams' logs once it heard from each (what they committed before knew
// of it), and is not woken by its own announcements; once it is gone, the
// others stop sending again.
func TestPGBrokerPeers(t *testing.T) {
	url := testdb.PostgresURL(t)
	// Other tests' nodes are not peers; the listener names stay under
	// PostgreSQL's 63 bytes.
	channel := "t" + model.NewNodeID()[5:13]
	sig := func(seq int64) *model.Signal {
		return &model.Signal{BotID: "bot", ConversationID: "conv", Seq: seq}
	}

	// What goes out on the channel, seen from a plain session (not a node).
	heard := watchChannel(t, url, channel, func(string) bool { return true })

	a := startBroker(t, url, channel)
	eventually(t, "A found itself alone", func() bool { return a.b.Alone() })
	eventually(t, "A's hello went out", func() bool { return heard.Load() == 1 })
	for seq := int64(1); seq <= 5; seq++ {
		a.b.Announce(sig(seq))
	}
	time.Sleep(200 * time.Millisecond)
	if got := heard.Load(); got != 1 {
		t.Fatalf("a node alone sent %d notifications besides its hello", got-1)
	}
	if got := a.b.sent.Load(); got != 1 {
		t.Fatalf("a node alone counted %d NOTIFYs, want its hello only", got)
	}

	b := startBroker(t, url, channel)
	eventually(t, "A heard B's hello", func() bool { return !a.b.Alone() })
	eventually(t, "B re-read its logs after A's welcome", func() bool { return b.resyncs.Load() >= 2 })
	a.b.Announce(sig(6))
	eventually(t, "B woken by A", func() bool { return b.wokenWith(6) })
	b.b.Announce(sig(7))
	eventually(t, "A woken by B", func() bool { return a.wokenWith(7) })
	time.Sleep(100 * time.Millisecond)
	if a.wokenWith(6) || b.wokenWith(7) {
		t.Fatal("a node was woken by its own announcement")
	}
	if a.resyncs.Load() != 2 {
		t.Fatalf("A re-read its logs %d times, want 2 (start, first word from B)", a.resyncs.Load())
	}

	b.stop()
	eventually(t, "A found itself alone again", func() bool { return a.b.Alone() })
	before := a.b.sent.Load()
	a.b.Announce(sig(8))
	time.Sleep(150 * time.Millisecond)
	if a.b.sent.Load() != before {
		t.Fatal("A still sends once B is gone")
	}
}

// TestPGBrokerCannotTell: when pg_stat_activity does not show the node's
// own listening session (here its name is longer than PostgreSQL keeps),
// the node cannot tell whether it is alone, and keeps waking.
func TestPGBrokerCannotTell(t *testing.T) {
	url := testdb.PostgresURL(t)
	a := startBroker(t, url, "t"+model.NewNodeID()+model.NewNodeID())
	eventually(t, "A's hello went out", func() bool { return a.b.sent.Load() == 1 })
	time.Sleep(3 * a.b.PeerPoll) // it looked at least twice
	if a.b.Alone() {
		t.Fatal("a node that cannot see its own listener thinks it is alone")
	}
	a.b.Announce(&model.Signal{BotID: "bot", ConversationID: "conv", Seq: 1})
	eventually(t, "A's announcement went out", func() bool { return a.b.sent.Load() == 2 })
}

// TestPGBrokerOlderNode: a node of an earlier version (its wake-ups carry
// no version, its listening session no name) is not found in
// pg_stat_activity; once one is heard, a node keeps sending, as the older
// nodes did (a rolling upgrade).
func TestPGBrokerOlderNode(t *testing.T) {
	url := testdb.PostgresURL(t)
	channel := "t" + model.NewNodeID()[5:13]
	a := startBroker(t, url, channel)
	eventually(t, "A found itself alone", func() bool { return a.b.Alone() })

	old, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(context.Background())
	if _, err := old.Exec(context.Background(), "SELECT pg_notify($1, $2)", channel,
		`{"n":"node-older","b":"bot","c":"conv","s":3}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "A woken by the older node", func() bool { return a.wokenWith(3) })
	time.Sleep(3 * a.b.PeerPoll) // A looked again, and found no listener it can name
	if a.b.Alone() {
		t.Fatal("a node that heard an older node thinks it is alone")
	}
	before := a.b.sent.Load()
	a.b.Announce(&model.Signal{BotID: "bot", ConversationID: "conv", Seq: 4})
	eventually(t, "A's announcement went out", func() bool { return a.b.sent.Load() > before })
}

// TestPGBrokerFlushesOnStop: a node that stops sends what it announced
// just before (a message acknowledged while it shuts down), so that the
// others wake at once instead of at their next sweep. Several nodes in
// turn: without the last send, a stop that comes before the send loop ran
// loses the announcement.
func TestPGBrokerFlushesOnStop(t *testing.T) {
	url := testdb.PostgresURL(t)
	channel := "t" + model.NewNodeID()[5:13]
	b := startBroker(t, url, channel)
	eventually(t, "B listens", func() bool { return b.resyncs.Load() >= 1 })
	for seq := int64(1); seq <= 5; seq++ {
		hellos := b.b.hellos.Load()
		a := startBroker(t, url, channel)
		eventually(t, "B heard A's hello", func() bool { return b.b.hellos.Load() > hellos })
		a.b.Announce(&model.Signal{BotID: "bot", ConversationID: "conv", Seq: seq})
		a.stop()
		eventually(t, "B woken by the stopped node's last announcement", func() bool { return b.wokenWith(seq) })
	}
}
