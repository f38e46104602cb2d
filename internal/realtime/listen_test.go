package realtime

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// freezingProxy forwards TCP connections to PostgreSQL and can freeze one:
// its bytes are held, neither side is told, as when a NAT or a firewall
// drops a quiet connection.
type freezingProxy struct {
	url    string // the database's URL through the proxy
	ln     net.Listener
	closed atomic.Bool

	mu    sync.Mutex
	conns []*proxied // in the order they were accepted
}

type proxied struct {
	frozen         atomic.Bool
	client, server net.Conn
}

func startFreezingProxy(t *testing.T, dbURL string) *freezingProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	p := &freezingProxy{url: u.String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			pc := &proxied{client: c, server: s}
			p.mu.Lock()
			p.conns = append(p.conns, pc)
			p.mu.Unlock()
			go p.pipe(pc, s, c)
			go p.pipe(pc, c, s)
		}
	}()
	t.Cleanup(func() {
		p.closed.Store(true)
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.client.Close()
			c.server.Close()
		}
	})
	return p
}

func (p *freezingProxy) pipe(c *proxied, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for c.frozen.Load() && !p.closed.Load() {
			time.Sleep(5 * time.Millisecond) // hold what was read
		}
		if n > 0 && !c.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) || !c.frozen.Load() {
				dst.Close()
			}
			return
		}
	}
}

// freeze freezes the i-th connection accepted.
func (p *freezingProxy) freeze(t *testing.T, i int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= len(p.conns) {
		t.Fatalf("the proxy accepted %d connections, not %d", len(p.conns), i+1)
	}
	p.conns[i].frozen.Store(true)
}

// TestPGBrokerSilentListener: a listening session that stays silent is
// checked, and kept (it still hears), while the database answers; once
// its connection goes silent for good, Run fails within twice ListenCheck
// (the caches forget what they kept for long), and the restarted broker
// hears the changes other nodes tell. Without the check, Run would wait
// on the dead connection for as long as TCP keepalive takes.
func TestPGBrokerSilentListener(t *testing.T) {
	dbURL := testdb.PostgresURL(t)
	channel := "t" + model.NewNodeID()[5:13]
	px := startFreezingProxy(t, dbURL)

	var on changeLog
	b := NewPGBroker(px.url, channel)
	b.PeerPoll = 50 * time.Millisecond
	b.ListenCheck = 200 * time.Millisecond
	on.on(b)
	ctx, cancel := context.WithCancel(context.Background())
	runs := make(chan error, 16)
	done := make(chan struct{})
	go func() { // as the hub does, without its pause
		defer close(done)
		for ctx.Err() == nil {
			runs <- b.Run(ctx, func(string, string, int64) {}, func() {})
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	other := startBroker(t, dbURL, channel)
	eventually(t, "both hear", func() bool { return b.Hearing() && other.b.Hearing() })
	// Silence on a live session: checked five times, never failed, and
	// still hearing.
	time.Sleep(5 * b.ListenCheck)
	select {
	case err := <-runs:
		t.Fatalf("Run failed on a live session: %v", err)
	default:
	}
	other.b.Tell("bot", "b0", "")
	eventually(t, "a change arrived on the session after its checks", func() bool {
		return on.has(change{"bot", "b0", ""})
	})

	px.freeze(t, 0) // the listening session (Run connects it first)
	frozen := time.Now()
	select {
	case err := <-runs:
		if err == nil || !strings.Contains(err.Error(), "listening session silent") {
			t.Fatalf("Run returned %v, want the listening session's check to fail", err)
		}
		took := time.Since(frozen)
		if took > 2*b.ListenCheck+time.Second {
			t.Fatalf("the dead session was found after %v, want within 2×ListenCheck", took)
		}
		t.Logf("the dead session was found after %v (ListenCheck %v)", took, b.ListenCheck)
	case <-time.After(5 * time.Second):
		t.Fatal("Run still waits on a listening session that went silent")
	}
	if got := on.last(); got.kind != ChangedAll { // deaf, or the restarted Run's hear
		t.Fatalf("last change after the session died: %+v, want ChangedAll", got)
	}

	eventually(t, "the restarted broker hears", b.Hearing)
	other.b.Tell("bot", "b1", "")
	eventually(t, "a change told by the other node arrived", func() bool {
		return on.has(change{"bot", "b1", ""})
	})
}

// TestPGBrokerSlowChange: a change whose handling waits (OnChange reading
// a slow store) holds up neither the wake-ups that come after it nor Run;
// the changes are handed over in the order they came.
func TestPGBrokerSlowChange(t *testing.T) {
	dbURL := testdb.PostgresURL(t)
	channel := "t" + model.NewNodeID()[5:13]

	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	var mu sync.Mutex
	var got []change
	a := startBroker(t, dbURL, channel, func(b *PGBroker) {
		b.OnChange(func(kind, botID, conversationID string) {
			if kind == "bot" {
				<-release
			}
			mu.Lock()
			got = append(got, change{kind, botID, conversationID})
			mu.Unlock()
		})
	})
	applied := func() []change {
		mu.Lock()
		defer mu.Unlock()
		var out []change
		for _, c := range got {
			if c.kind != ChangedAll {
				out = append(out, c)
			}
		}
		return out
	}
	t.Cleanup(free) // before A stops (cleanups run last first)
	b := startBroker(t, dbURL, channel)
	eventually(t, "both hear", func() bool { return a.b.Hearing() && b.b.Hearing() })
	eventually(t, "B knows of A", func() bool { return !b.b.Alone() })

	b.b.Tell("bot", "b1", "")
	b.b.Tell("conversation", "b1", "c1")
	b.b.Announce(&model.Signal{BotID: "b1", ConversationID: "c2", Seq: 7})
	eventually(t, "A woken while a change before it is being handled", func() bool { return a.wokenWith(7) })
	if n := len(applied()); n != 0 {
		t.Fatalf("%d changes handed over while the first still waits, want 0 (in order)", n)
	}
	free()
	eventually(t, "both changes handed over", func() bool { return len(applied()) == 2 })
	want := []change{{"bot", "b1", ""}, {"conversation", "b1", "c1"}}
	if g := applied(); g[0] != want[0] || g[1] != want[1] {
		t.Fatalf("changes handed over %v, want %v", g, want)
	}
}
