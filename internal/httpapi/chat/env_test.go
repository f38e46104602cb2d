package chat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/httpapi/chat"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testbots"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// engines runs fn on a fresh SQLite store and a fresh PostgreSQL schema.
func engines(t *testing.T, fn func(t *testing.T, db store.DB)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, testdb.SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, testdb.Postgres(t)) })
}

// env is one node: service, hub, dispatcher with the echo bot, and the
// Chat API on a real loopback server.
type env struct {
	t      *testing.T
	db     store.DB
	bots   *administration.Bots
	hub    *realtime.Hub
	srv    *httptest.Server
	bot    testBot
	base   string // {server}/chat/{webhookId}
	client *http.Client
}

type testBot struct {
	ID, WebhookID, Key string
}

type envOpts struct {
	hub    realtime.Options
	broker realtime.Broker
	leases bool
	bot    turns.Bot // nil: EchoBot
	noBot  bool      // create no bot (a second node shares the first's)
	// workers and maxTurnDelay, when set, size the dispatcher and bound
	// the turn queue at the door (turns.Door).
	workers      int
	maxTurnDelay time.Duration
}

func newEnv(t *testing.T, db store.DB, o envOpts) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o.hub.Log = log
	hub := realtime.NewHub(db.Signals(), o.broker, o.hub)
	ctx, cancel := context.WithCancel(context.Background())
	queue := turns.NewQueue()
	commit := db.NewCommitter(queue.AfterCommit(hub.Publish))
	var bot turns.Bot = testbots.Echo{}
	if o.bot != nil {
		bot = o.bot
	}
	var door conversations.Door
	if o.maxTurnDelay != 0 {
		door = queue.Door(o.maxTurnDelay, 0)
	}
	// A PostgreSQL broker carries the changes to the nodes' caches, as in
	// app.start: told by this node's Chat API, applied by the others'.
	var peers conversations.Peers
	pgBroker, _ := o.broker.(*realtime.PGBroker)
	if pgBroker != nil {
		peers = pgBroker
	}
	chatUC := conversations.NewChat(db, commit, hub, door, queue, peers)
	if pgBroker != nil {
		pgBroker.OnChange(chatUC.Changed)
	}
	hub.Start(ctx)
	d := turns.NewDispatcher(db, commit, queue, testbots.Resolver(bot), log, turns.DispatcherOptions{Leases: o.leases, Sweep: time.Second, Workers: o.workers})
	d.Start(ctx)
	mux := http.NewServeMux()
	mux.Handle("/chat/", chat.NewHandler(chatUC, hub, nil))
	srv := httptest.NewUnstartedServer(chat.FoldSlashes(mux))
	srv.Config.RegisterOnShutdown(hub.Close)
	srv.Start()
	e := &env{t: t, db: db, bots: administration.NewBots(db, nil, nil, chatUC), hub: hub, srv: srv, client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		hub.Close()
		srv.Close()
		d.Stop()
		cancel()
	})
	if !o.noBot {
		e.bot = makeBot(t, db)
		e.base = srv.URL + "/chat/" + e.bot.WebhookID
	}
	return e
}

// makeBot creates a workspace and a bot with its built-in integrations
// straight through the store.
func makeBot(t testing.TB, db store.DB) testBot {
	t.Helper()
	ctx := context.Background()
	now := model.Now()
	ws := &model.Workspace{ID: model.NewID(), Name: "test", OwnerID: model.NewID(), SocialAccounts: []string{},
		CreatedAt: now, UpdatedAt: now}
	b := &model.Bot{ID: model.NewID(), Name: "echo", Type: model.DefaultBotType, Tags: map[string]string{},
		Spec: map[string]any{}, Secrets: map[string]string{}, CreatedAt: now, UpdatedAt: now}
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
		t.Fatalf("create bot: %v", err)
	}
	ins, err := db.Bots().Integrations(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if in.Name == model.IntegrationChat {
			return testBot{ID: b.ID, WebhookID: in.WebhookID, Key: in.Configuration[model.ChatEncryptionKey].(string)}
		}
	}
	t.Fatal("no chat integration")
	return testBot{}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// resp is a decoded response.
type resp struct {
	Status int
	Body   map[string]any
	Raw    []byte
}

func (r resp) errType() string {
	s, _ := r.Body["type"].(string)
	return s
}

// obj returns a nested object by key path.
func (r resp) obj(keys ...string) map[string]any {
	m := r.Body
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	return m
}

// call sends a request to the bot's Chat API; body may be a string (sent
// raw), nil, or a value encoded as JSON.
func (e *env) call(method, path, key string, body any) resp {
	e.t.Helper()
	return e.callURL(method, e.base+path, key, body)
}

func (e *env) callURL(method, url, key string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, _ := json.Marshal(b)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-user-key", key)
	}
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{Status: res.StatusCode, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// must checks the status of r.
func (e *env) must(r resp, status int) resp {
	e.t.Helper()
	if r.Status != status {
		e.t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	return r
}

// user creates a user and returns its id and key.
func (e *env) user(fid string) (id, key string) {
	e.t.Helper()
	body := map[string]any{}
	if fid != "" {
		body["id"] = fid
	}
	r := e.must(e.call("POST", "/users", "", body), 201)
	return r.obj("user")["id"].(string), r.Body["key"].(string)
}

// conversation creates a conversation owned by key's user.
func (e *env) conversation(key string) string {
	e.t.Helper()
	r := e.must(e.call("POST", "/conversations", key, map[string]any{}), 201)
	return r.obj("conversation")["id"].(string)
}

func (e *env) sendText(key, conv, text string) map[string]any {
	e.t.Helper()
	r := e.must(e.call("POST", "/messages", key, map[string]any{"conversationId": conv,
		"payload": map[string]any{"type": "text", "text": text}}), 201)
	return r.obj("message")
}

func signKey(secret, id string) string {
	k, _ := auth.SignUserKey(secret, id)
	return k
}

// frame is one SSE event read from a stream.
type frame struct {
	ID   int64
	Data string
	Type string         // signal type ("" for pings)
	Sig  map[string]any // signal data
}

// sse is an open listen stream.
type sse struct {
	t      *testing.T
	res    *http.Response
	frames chan frame
	done   chan struct{}
	cancel context.CancelFunc
}

// listen opens a stream; lastID < 0 sends no Last-Event-ID.
func (e *env) listen(key, conv string, lastID int64) *sse {
	e.t.Helper()
	s, status := e.tryListen(e.base, key, conv, lastID)
	if status != 200 {
		e.t.Fatalf("listen: status %d", status)
	}
	return s
}

func (e *env) tryListen(base, key, conv string, lastID int64) (*sse, int) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/conversations/"+conv+"/listen", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("x-user-key", key)
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("listen: %v", err)
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		cancel()
		return nil, res.StatusCode
	}
	s := &sse{t: e.t, res: res, frames: make(chan frame, 1024), done: make(chan struct{}), cancel: cancel}
	go s.read()
	e.t.Cleanup(s.close)
	return s, 200
}

func (s *sse) read() {
	defer close(s.done)
	sc := bufio.NewScanner(s.res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var f frame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f.Data != "" {
				if f.Data != "ping" {
					var env struct {
						Type string         `json:"type"`
						Data map[string]any `json:"data"`
					}
					_ = json.Unmarshal([]byte(f.Data), &env)
					f.Type, f.Sig = env.Type, env.Data
				}
				s.frames <- f
			}
			f = frame{}
		case strings.HasPrefix(line, "id: "):
			f.ID, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			f.Data = line[6:]
		}
	}
}

func (s *sse) close() {
	s.cancel()
	s.res.Body.Close()
	<-s.done
}

// next returns the next signal frame (skipping pings) or fails.
func (s *sse) next(timeout time.Duration) frame {
	s.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				s.t.Fatal("stream closed")
			}
			if f.Type == "" {
				continue
			}
			return f
		case <-s.done:
			select {
			case f := <-s.frames:
				if f.Type != "" {
					return f
				}
				continue
			default:
			}
			s.t.Fatal("stream ended")
		case <-deadline:
			s.t.Fatal("timed out waiting for a signal")
		}
	}
}

// waitFor returns the first signal frame matching pred.
func (s *sse) waitFor(timeout time.Duration, pred func(frame) bool) frame {
	s.t.Helper()
	end := time.Now().Add(timeout)
	for {
		f := s.next(time.Until(end))
		if pred(f) {
			return f
		}
	}
}

// ended reports whether the server closed the stream within timeout,
// returning the signal frames still read before the end.
func (s *sse) ended(timeout time.Duration) ([]frame, bool) {
	var got []frame
	deadline := time.After(timeout)
	for {
		select {
		case f := <-s.frames:
			if f.Type != "" {
				got = append(got, f)
			}
		case <-s.done:
			for {
				select {
				case f := <-s.frames:
					if f.Type != "" {
						got = append(got, f)
					}
				default:
					return got, true
				}
			}
		case <-deadline:
			return got, false
		}
	}
}
