package turns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// recordingBot records the turns it runs and checks a conversation never
// runs two turns at once.
type recordingBot struct {
	mu      sync.Mutex
	running map[string]bool
	seen    map[string][]string // conversation -> texts in run order
	overlap bool
	delay   time.Duration
	fail    func(in *turns.TurnInput) error
}

func (b *recordingBot) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	b.mu.Lock()
	if b.running[in.ConversationID] {
		b.overlap = true
	}
	b.running[in.ConversationID] = true
	b.mu.Unlock()
	time.Sleep(b.delay)
	var p struct{ Text string }
	_ = json.Unmarshal(in.Event.Payload, &p)
	b.mu.Lock()
	b.running[in.ConversationID] = false
	b.seen[in.ConversationID] = append(b.seen[in.ConversationID], p.Text)
	b.mu.Unlock()
	if b.fail != nil {
		return b.fail(in)
	}
	return nil
}

func newRecordingBot(delay time.Duration) *recordingBot {
	return &recordingBot{running: map[string]bool{}, seen: map[string][]string{}, delay: delay}
}

func (b *recordingBot) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.seen {
		n += len(s)
	}
	return n
}

// node is one process's turn pipeline on a database: the Chat API's use
// cases, the committer whose hook queues turns, and a dispatcher (not
// started) running them through bot.
type node struct {
	chat       *conversations.Chat
	dispatcher *turns.Dispatcher
}

type nopStreams struct{}

func (nopStreams) CloseConversation(string, string)        {}
func (nopStreams) EndBotStreams(string, func(string) bool) {}

func newNode(db store.DB, bot turns.Bot, o turns.DispatcherOptions) *node {
	resolver := func(context.Context, string) (turns.Bot, error) { return bot, nil }
	return newNodeWith(db, resolver, nil, o)
}

// newNodeWith is newNode with the dispatcher's bot resolver and, unless
// nil, a wrapper of the committer it completes turns with.
func newNodeWith(db store.DB, resolver turns.Resolver, wrap func(store.Committer) store.Committer, o turns.DispatcherOptions) *node {
	queue := turns.NewQueue()
	commit := db.NewCommitter(queue.AfterCommit(nil))
	completions := commit
	if wrap != nil {
		completions = wrap(commit)
	}
	return &node{chat: conversations.NewChat(db, commit, nopStreams{}, nil, nil, nil),
		dispatcher: turns.NewDispatcher(db, completions, queue, resolver, slog.Default(), o)}
}

type chatFixture struct {
	*node
	botID  string
	caller *conversations.Caller
}

func newChatFixture(t *testing.T, db store.DB, bot turns.Bot, o turns.DispatcherOptions) *chatFixture {
	t.Helper()
	return newChatFixtureOn(t, db, newNode(db, bot, o))
}

// newChatFixtureOn is newChatFixture on a node built by the caller.
func newChatFixtureOn(t *testing.T, db store.DB, n *node) *chatFixture {
	t.Helper()
	ctx := context.Background()
	now := model.Now()
	ws := &model.Workspace{ID: model.NewID(), Name: "w", OwnerID: "o", SocialAccounts: []string{}, CreatedAt: now, UpdatedAt: now}
	b := &model.Bot{ID: model.NewID(), Name: "b", Tags: map[string]string{}, Spec: map[string]any{}, Secrets: map[string]string{}, CreatedAt: now, UpdatedAt: now}
	err := db.InTx(ctx, func(tx store.Store) error {
		if err := tx.Workspaces().Create(ctx, ws); err != nil {
			return err
		}
		b.WorkspaceID = ws.ID
		if err := tx.Bots().Create(ctx, b); err != nil {
			return err
		}
		return administration.EnsureBuiltinIntegrations(ctx, tx, b.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := db.Bots().Integrations(ctx, b.ID)
	var wh string
	for _, in := range ins {
		if in.Name == model.IntegrationChat {
			wh = in.WebhookID
		}
	}
	sc, err := n.chat.Scope(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	c := &conversations.Caller{Scope: sc, UserID: "u1"}
	if _, err := n.chat.GetOrCreateUser(ctx, c, conversations.UserInput{}); err != nil {
		t.Fatal(err)
	}
	return &chatFixture{node: n, botID: b.ID, caller: c}
}

func (f *chatFixture) post(t *testing.T, conv, text string) {
	t.Helper()
	id := conv
	_, err := f.chat.CreateMessage(context.Background(), f.caller, conversations.MessageInput{ConversationID: &id,
		Payload: json.RawMessage(fmt.Sprintf(`{"type":"text","text":%q}`, text))})
	if err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// onEngines runs f on SQLite and on PostgreSQL, the latter with leases
// (as several nodes on one database run).
func onEngines(t *testing.T, f func(t *testing.T, db store.DB, leases bool)) {
	for _, eng := range []struct {
		name string
		open func(testing.TB) store.DB
	}{{"sqlite", testdb.SQLite}, {"postgres", testdb.Postgres}} {
		t.Run(eng.name, func(t *testing.T) { f(t, eng.open(t), eng.name == "postgres") })
	}
}

// TestDispatcherOrder: turns of a conversation run one at a time in order;
// conversations run in parallel; every turn is completed.
func TestDispatcherOrder(t *testing.T) {
	onEngines(t, func(t *testing.T, db store.DB, leases bool) {
		bot := newRecordingBot(2 * time.Millisecond)
		f := newChatFixture(t, db, bot, turns.DispatcherOptions{Workers: 4, Leases: leases})
		d := f.dispatcher
		d.Start(context.Background())
		defer d.Stop()
		convs := []string{}
		for range 3 {
			conv, err := f.chat.CreateConversation(context.Background(), f.caller, nil)
			if err != nil {
				t.Fatal(err)
			}
			convs = append(convs, conv.ID)
		}
		var wg sync.WaitGroup
		for _, c := range convs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					f.post(t, c, fmt.Sprint(i))
				}
			}()
		}
		wg.Wait()
		waitUntil(t, "all turns", func() bool { return bot.count() == 60 })
		if bot.overlap {
			t.Fatal("two turns of one conversation ran at once")
		}
		for _, c := range convs {
			for i, got := range bot.seen[c] {
				if got != fmt.Sprint(i) {
					t.Fatalf("conversation %s ran %v", c, bot.seen[c])
				}
			}
			waitUntil(t, "turns completed", func() bool {
				ts, _ := db.Signals().PendingTurns(context.Background(), f.botID, c, 10)
				return len(ts) == 0
			})
		}
	})
}

// TestDispatcherRecovers: turns left pending (a crash before they ran)
// run when a dispatcher starts; a failing bot does not block the
// conversation.
func TestDispatcherRecovers(t *testing.T) {
	db := testdb.SQLite(t)
	bot := newRecordingBot(0)
	bot.fail = func(in *turns.TurnInput) error { return fmt.Errorf("boom") }
	f := newChatFixture(t, db, bot, turns.DispatcherOptions{})
	conv, _ := f.chat.CreateConversation(context.Background(), f.caller, nil)
	for i := range 3 {
		f.post(t, conv.ID, fmt.Sprint(i)) // no dispatcher yet: the turns wait
	}
	d := f.dispatcher
	d.Start(context.Background())
	defer d.Stop()
	waitUntil(t, "recovered turns", func() bool { return bot.count() == 3 })
	waitUntil(t, "turns completed", func() bool {
		ts, _ := db.Signals().PendingTurns(context.Background(), f.botID, conv.ID, 10)
		return len(ts) == 0
	})
}

// TestDispatcherTwoNodes: two dispatchers on one PostgreSQL database run
// each turn exactly once, in order, never concurrently within a
// conversation (store leases); also while each believes it is alone
// (DispatcherOptions.Alone: a node that has not heard of the other yet),
// ending its runs without reading the conversation again.
func TestDispatcherTwoNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alone func() bool
	}{
		{"each knows of the other", func() bool { return false }},
		{"each believes it is alone", func() bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) { testTwoNodes(t, tc.alone) })
	}
}

func testTwoNodes(t *testing.T, alone func() bool) {
	url := testdb.PostgresURL(t)
	open := func() store.DB {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	dbA, dbB := open(), open()
	bot := newRecordingBot(time.Millisecond)
	f := newChatFixture(t, dbA, bot, turns.DispatcherOptions{Leases: true, Alone: alone, Node: "a"})
	nB := newNode(dbB, bot, turns.DispatcherOptions{Leases: true, Alone: alone, Node: "b"})
	dA, dB := f.dispatcher, nB.dispatcher
	dA.Start(context.Background())
	dB.Start(context.Background())
	defer dA.Stop()
	defer dB.Stop()
	conv, _ := f.chat.CreateConversation(context.Background(), f.caller, nil)
	scB, err := nB.chat.Scope(context.Background(), f.caller.Integration.WebhookID)
	if err != nil {
		t.Fatal(err)
	}
	cB := &conversations.Caller{Scope: scB, UserID: f.caller.UserID}
	for i := range 30 {
		if i%2 == 0 {
			f.post(t, conv.ID, fmt.Sprint(i))
		} else {
			id := conv.ID
			if _, err := nB.chat.CreateMessage(context.Background(), cB, conversations.MessageInput{ConversationID: &id,
				Payload: json.RawMessage(fmt.Sprintf(`{"type":"text","text":"%d"}`, i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "all turns", func() bool { return bot.count() >= 30 })
	time.Sleep(200 * time.Millisecond)
	if n := bot.count(); n != 30 || bot.overlap {
		t.Fatalf("ran %d turns (overlap %v): %v", n, bot.overlap, bot.seen)
	}
	for i, got := range bot.seen[conv.ID] {
		if got != fmt.Sprint(i) {
			t.Fatalf("order %v", bot.seen[conv.ID])
		}
	}
}

// TestDispatcherKeepsLeaseBriefly: with leases, a conversation's lease is
// kept a moment after its turns ran out (lease.go), so that the user's
// next message reuses it, then released; Stop releases it at once.
func TestDispatcherKeepsLeaseBriefly(t *testing.T) {
	db := testdb.Postgres(t)
	ctx := context.Background()
	bot := newRecordingBot(0)
	f := newChatFixture(t, db, bot, turns.DispatcherOptions{Leases: true, Node: "a"})
	f.dispatcher.Start(ctx)
	stopped := false
	defer func() {
		if !stopped {
			f.dispatcher.Stop()
		}
	}()
	conv, _ := f.chat.CreateConversation(ctx, f.caller, nil)
	name := "turns:" + f.botID + ":" + conv.ID
	otherTakes := func() bool {
		_, ok, err := db.Leases().Take(ctx, name, "x", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if err := db.Leases().Release(ctx, name, "x"); err != nil {
				t.Fatal(err)
			}
		}
		return ok
	}
	f.post(t, conv.ID, "0")
	waitUntil(t, "turn 0", func() bool { return bot.count() == 1 })
	if otherTakes() {
		t.Fatal("the lease was released as soon as the turn ran")
	}
	f.post(t, conv.ID, "1") // reuses it
	waitUntil(t, "turn 1", func() bool { return bot.count() == 2 })
	if otherTakes() {
		t.Fatal("the lease was released as soon as the second turn ran")
	}
	waitUntil(t, "the lease released after its linger", otherTakes)
	f.post(t, conv.ID, "2")
	waitUntil(t, "turn 2", func() bool { return bot.count() == 3 })
	f.dispatcher.Stop()
	stopped = true
	if !otherTakes() {
		t.Fatal("Stop kept the lease")
	}
	if got := bot.seen[conv.ID]; fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("turns ran %v", got)
	}
}

// TestDoorFollowsTheBot: the door's automatic bound is twice a turn's
// recent run, as the dispatcher measures it. With a bot that takes 150 ms
// a turn and one worker, a conversation that has waited 80 ms for the
// worker is within the bound (300 ms), so a new message comes in at once;
// with the floor of 30 ms it would wait, then be refused.
func TestDoorFollowsTheBot(t *testing.T) {
	onEngines(t, func(t *testing.T, db store.DB, leases bool) {
		bot := newRecordingBot(150 * time.Millisecond)
		resolver := func(context.Context, string) (turns.Bot, error) { return bot, nil }
		queue := turns.NewQueue()
		commit := db.NewCommitter(queue.AfterCommit(nil))
		n := &node{chat: conversations.NewChat(db, commit, nopStreams{}, queue.Door(0, -1), nil, nil),
			dispatcher: turns.NewDispatcher(db, commit, queue, resolver, slog.Default(),
				turns.DispatcherOptions{Workers: 1, Leases: leases})}
		f := newChatFixtureOn(t, db, n)
		f.dispatcher.Start(context.Background())
		defer f.dispatcher.Stop()
		var convs []string
		for range 3 {
			conv, err := f.chat.CreateConversation(context.Background(), f.caller, nil)
			if err != nil {
				t.Fatal(err)
			}
			convs = append(convs, conv.ID)
		}
		f.post(t, convs[0], "warm up")
		waitUntil(t, "the first turn", func() bool { return bot.count() == 1 })

		f.post(t, convs[0], "busy")   // the worker runs it for 150 ms
		f.post(t, convs[1], "queued") // waits for the worker
		time.Sleep(80 * time.Millisecond)
		if d := queue.Delay(); d < 60*time.Millisecond {
			t.Fatalf("the queued conversation waited %v, want about 80 ms", d)
		}
		start := time.Now()
		f.post(t, convs[2], "new") // fails the test if refused
		if waited := time.Since(start); waited > 60*time.Millisecond {
			t.Fatalf("a message within the bound waited %v at the door", waited)
		}
		waitUntil(t, "every turn", func() bool { return bot.count() == 4 })
	})
}

// takeFailer fails the Takes of its leases while armed, as a Take in
// flight fails when Stop cancels its context.
type takeFailer struct {
	store.DB
	armed  atomic.Bool
	failed atomic.Bool
}

func (f *takeFailer) Leases() store.Leases { return failingLeases{f.DB.Leases(), f} }

type failingLeases struct {
	store.Leases
	f *takeFailer
}

func (l failingLeases) Take(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, bool, error) {
	if l.f.armed.Load() {
		l.f.failed.Store(true)
		return store.Lease{}, false, context.Canceled
	}
	return l.Leases.Take(ctx, name, holder, ttl)
}

// TestDispatcherReleasesStaleParkedLease: a parked lease too old to reuse
// is taken again (a renewal); when that Take fails, the lease is released,
// not left to run out its TTL while another node waits for it. With a
// 600 ms TTL, the turn's completion (at about 300 ms: the bot takes that
// long) renews the lease and parks it: it is stale (older than TTL/4) from
// 450 ms on and parked until 600 ms (the linger is 300 ms), so the next
// message comes at 525 ms, 75 ms from either edge; the lease would run
// until 900 ms, 75 ms after the release must be seen (300 ms after the
// failed Take). The node's Takes keep failing until then: its retry, 250
// ms after the failed one, would take the lease again (when the test was
// slower than that, under -race on a loaded machine, it failed).
func TestDispatcherReleasesStaleParkedLease(t *testing.T) {
	pg := testdb.Postgres(t)
	db := &takeFailer{DB: pg}
	ctx := context.Background()
	bot := newRecordingBot(300 * time.Millisecond)
	f, conv, name := startLeased(t, db, bot, 600*time.Millisecond)
	f.post(t, conv, "0")
	waitUntil(t, "turn 0", func() bool { return bot.count() == 1 }) // at 300 ms
	time.Sleep(225 * time.Millisecond)
	db.armed.Store(true)
	f.post(t, conv, "1")
	waitUntil(t, "the failed Take", db.failed.Load)
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		_, ok, err := pg.Leases().Take(ctx, name, "x", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stale parked lease was kept after its Take failed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	db.armed.Store(false)
	if err := pg.Leases().Release(ctx, name, "x"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "turn 1, run once the lease is free", func() bool { return bot.count() == 2 })
}

// startLeased starts node "a" with leases of ttl on db, running bot, and
// creates a conversation: the fixture, the conversation and its lease's
// name. The dispatcher stops with the test.
func startLeased(t *testing.T, db store.DB, bot turns.Bot, ttl time.Duration) (f *chatFixture, conv, lease string) {
	t.Helper()
	f = newChatFixture(t, db, bot, turns.DispatcherOptions{Leases: true, Node: "a", LeaseTTL: ttl})
	f.dispatcher.Start(context.Background())
	t.Cleanup(f.dispatcher.Stop)
	c, err := f.chat.CreateConversation(context.Background(), f.caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, c.ID, "turns:" + f.botID + ":" + c.ID
}

// countingLeases counts the lease statements a dispatcher makes of its own.
type countingLeases struct {
	store.DB
	takes, renews, frees, releases atomic.Int64
}

func (c *countingLeases) Leases() store.Leases { return countedLeases{c.DB.Leases(), c} }

type countedLeases struct {
	store.Leases
	c *countingLeases
}

func (l countedLeases) Take(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, bool, error) {
	l.c.takes.Add(1)
	return l.Leases.Take(ctx, name, holder, ttl)
}

func (l countedLeases) Free(ctx context.Context, name string) (bool, int64, error) {
	l.c.frees.Add(1)
	return l.Leases.Free(ctx, name)
}

func (l countedLeases) Release(ctx context.Context, name, holder string) error {
	l.c.releases.Add(1)
	return l.Leases.Release(ctx, name, holder)
}

func (l countedLeases) Renew(ctx context.Context, name, holder string, epoch int64, ttl time.Duration) (bool, error) {
	l.c.renews.Add(1)
	return l.Leases.Renew(ctx, name, holder, epoch, ttl)
}

// TestDispatcherFencedWritesRenewTheLease: a conversation whose turns
// commit more often than the lease's quarter TTL keeps its lease through
// their completions' fences (Fence.Renew): one Take for 12 messages 100 ms
// apart over 1.2 s with an 800 ms TTL, where a parked lease is reused only
// while renewed less than 200 ms ago; without the fences' renewals it is
// taken again every 200 ms. Another node cannot take it meanwhile (the
// last completion renewed it), and can once it was released.
func TestDispatcherFencedWritesRenewTheLease(t *testing.T) {
	pg := testdb.Postgres(t)
	db := &countingLeases{DB: pg}
	ctx := context.Background()
	bot := newRecordingBot(0)
	f, conv, name := startLeased(t, db, bot, 800*time.Millisecond)
	for i := range 12 {
		f.post(t, conv, fmt.Sprint(i))
		waitUntil(t, fmt.Sprint("turn ", i), func() bool { return bot.count() == i+1 })
		time.Sleep(100 * time.Millisecond)
	}
	// A slow machine may let the linger end once between two messages.
	if takes := db.takes.Load(); takes > 2 {
		t.Fatalf("%d Takes of the lease for 12 turns (and %d Renews), want 1", takes, db.renews.Load())
	}
	if _, ok, err := pg.Leases().Take(ctx, name, "x", time.Second); err != nil || ok {
		t.Fatalf("another node took the lease of a busy conversation (ok %v, err %v)", ok, err)
	}
	waitUntil(t, "the lease released after its linger", func() bool {
		_, ok, err := pg.Leases().Take(ctx, name, "x", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if got := bot.seen[conv]; len(got) != 12 {
		t.Fatalf("turns ran %v", got)
	}
}

// TestDispatcherRenewsDuringALongTurn: a turn that runs longer than the
// lease's TTL keeps the lease through its run's renewals (a quarter TTL
// after the last one), runs once and completes; another node cannot take
// the conversation meanwhile.
func TestDispatcherRenewsDuringALongTurn(t *testing.T) {
	pg := testdb.Postgres(t)
	db := &countingLeases{DB: pg}
	ctx := context.Background()
	bot := newRecordingBot(time.Second)
	f, conv, name := startLeased(t, db, bot, 400*time.Millisecond)
	f.post(t, conv, "long")
	waitUntil(t, "the lease taken", func() bool { return db.takes.Load() == 1 })
	time.Sleep(600 * time.Millisecond) // past the TTL, the turn still running
	if _, ok, err := pg.Leases().Take(ctx, name, "x", time.Second); err != nil || ok {
		t.Fatalf("another node took the lease of a running turn (ok %v, err %v)", ok, err)
	}
	waitUntil(t, "the turn", func() bool { return bot.count() == 1 })
	time.Sleep(300 * time.Millisecond) // a re-run would have started
	if n := bot.count(); n != 1 {
		t.Fatalf("the turn ran %d times", n)
	}
	if r := db.renews.Load(); r < 5 {
		t.Fatalf("%d renewals in a 1 s turn with a 400 ms TTL, want about 10", r)
	}
}
