package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/blob"
	"github.com/parley-bots/parley/internal/botproc"
	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/files"
	"github.com/parley-bots/parley/internal/httpapi/admin"
	"github.com/parley-bots/parley/internal/httpapi/chat"
	fileshttp "github.com/parley-bots/parley/internal/httpapi/files"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	integrationshttp "github.com/parley-bots/parley/internal/httpapi/integrations"
	"github.com/parley-bots/parley/internal/httpapi/openapi"
	runtimehttp "github.com/parley-bots/parley/internal/httpapi/runtimeapi"
	tableshttp "github.com/parley-bots/parley/internal/httpapi/tables"
	"github.com/parley-bots/parley/internal/httpapi/webchat"
	"github.com/parley-bots/parley/internal/httpapi/webhook"
	"github.com/parley-bots/parley/internal/integrations"
	"github.com/parley-bots/parley/internal/metrics"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/runtimeapi"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/store/sqlite"
	"github.com/parley-bots/parley/internal/tables"
	"github.com/parley-bots/parley/internal/turns"
	"github.com/parley-bots/parley/internal/web"
)

// App is a running Parley server.
type App struct {
	cfg      Config
	log      *slog.Logger
	db       store.DB
	listener net.Listener
	server   *http.Server
	// metricsListener serves /metrics alone when Config.MetricsAddr is set.
	metricsListener net.Listener
	metricsServer   *http.Server
	closers         []func(context.Context) error // run in reverse order on shutdown

	accounts   *administration.Accounts
	workspaces *administration.Workspaces
	bots       *administration.Bots
	chat       *conversations.Chat
	bundles    *botproc.Supervisor
	runtimeAPI *runtimeapi.API

	// node is this process's name as a lease holder; started its start.
	node       string
	started    time.Time
	dispatcher *turns.Dispatcher
	scheduler  *turns.Scheduler
	handOver   []func() // run first on shutdown: release leases

	// URL is the public base URL.
	URL string
	// AdminToken is the bootstrap token when this start created it.
	AdminToken string
}

// Option changes how Start assembles the server (tests).
type Option func(*options)

type options struct {
	bots    turns.Resolver
	actions runtimeapi.ActionCaller
}

// WithBots runs every bot's turns with the given resolver instead of the
// JavaScript runtime (tests plug in their own bots).
func WithBots(r turns.Resolver) Option { return func(o *options) { o.bots = r } }

// WithActions runs the Runtime API's callAction with a (tests plug in
// their own bot actions).
func WithActions(a runtimeapi.ActionCaller) Option { return func(o *options) { o.actions = a } }

// ShutdownTimeout bounds how long in-flight requests may take to finish.
const ShutdownTimeout = 15 * time.Second

// Start opens the store, bootstraps it on first start, and starts serving.
func Start(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	a := &App{cfg: cfg.limitsOrDefaults(), log: log}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := a.start(ctx, o); err != nil {
		a.shutdown(context.Background())
		return nil, err
	}
	return a, nil
}

// start assembles the server. Collaborators are built in dependency order
// and passed to constructors; docs/architecture.md draws the result.
func (a *App) start(ctx context.Context, o options) error {
	// Storage.
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	var err error
	pg := a.cfg.DatabaseURL != ""
	if pg {
		a.db, err = postgres.Open(ctx, a.cfg.DatabaseURL, a.cfg.DBMaxConnections)
	} else {
		a.db, err = sqlite.OpenWith(ctx, filepath.Join(a.cfg.DataDir, "parley.db"),
			sqlite.Options{MaxConns: a.cfg.DBMaxConnections, SyncFull: a.cfg.Sync == "full", Exclusive: true})
	}
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	a.closeOnShutdown(func() { a.db.Close() })
	if pg && a.cfg.DBWarmConnections != 0 {
		a.warmPool(ctx)
	}
	blobs, err := fileBlobs(a.db, pg, a.cfg.DataDir)
	if err != nil {
		return err
	}
	a.listener, err = net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	// At most MaxConnections clients at once: more wait to be accepted
	// rather than take file descriptors.
	a.listener = httpx.LimitListener(a.listener, a.cfg.MaxConnections)
	a.URL = publicURLFor(a.cfg.PublicURL, a.listener.Addr())
	if a.cfg.MetricsAddr != "" {
		if a.metricsListener, err = net.Listen("tcp", a.cfg.MetricsAddr); err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
	}
	// Metrics (GET /metrics): the collectors are handed to what they
	// observe below: the dispatcher (turns), the HTTP handler (requests per
	// route), and gauges read from the queue, the hub and the store.
	met := metrics.New()
	met.DBStats(a.db.Stats)

	// The turn pipeline: durable first, then published. The store commits
	// each write of the chat pipeline, then its hook publishes the signal
	// to the realtime hub and queues the conversation for the dispatcher.
	// On PostgreSQL the broker also carries the changes to what the nodes
	// cache (the Chat API's, the bots'); the hub starts it once the caches
	// exist (below).
	var broker realtime.Broker
	var pgBroker *realtime.PGBroker
	var alone func() bool
	var peers conversations.Peers
	if pg {
		pgBroker = realtime.NewPGBroker(a.cfg.DatabaseURL, "")
		broker, alone, peers = pgBroker, pgBroker.Alone, pgBroker
	}
	hub := realtime.NewHub(a.db.Signals(), broker, realtime.Options{Log: a.log,
		MaxStreamsPerUser: a.cfg.StreamsPerUser, MaxStreamsPerConversation: a.cfg.StreamsPerConv})
	a.closeOnShutdown(hub.Close)
	queue := turns.NewQueue()
	met.Gauge("parley_turn_queue_depth", "Conversations with pending turns waiting for a dispatcher worker.", func() float64 { return float64(queue.Len()) })
	met.Gauge("parley_turn_queue_delay_seconds", "How long the conversation first in line has waited for a dispatcher worker, or the oldest fold (a message answered before it is committed) has run: what the door bounds.", func() float64 { return queue.Delay().Seconds() })
	met.Gauge("parley_sse_streams_open", "Open SSE streams (Chat and Webchat API listeners) on this node.", func() float64 { return float64(hub.Streams()) })
	// Deployed Node.js bundles (SDK bots and integrations) run in child
	// processes, stopped after the workers that call them. Their BP_TOKEN
	// is a bot token, or an integration token, minted by the Runtime API's
	// credentials.
	credentials := runtimeapi.NewCredentials(a.db)
	processToken := func(ctx context.Context, owner string) (string, error) {
		if id, ok := strings.CutPrefix(owner, botproc.IntegrationPrefix); ok {
			return credentials.MintIntegrationToken(ctx, id)
		}
		return credentials.MintBotToken(ctx, owner)
	}
	// An integration's process also gets its secrets, and its output
	// becomes the integration's logs (integ is built just below; the
	// supervisor calls these only once a process starts).
	var integ *integrations.API
	processEnv := func(ctx context.Context, owner string) ([]string, error) {
		if id, ok := strings.CutPrefix(owner, botproc.IntegrationPrefix); ok {
			return integ.Definitions.ProcessEnv(ctx, id)
		}
		return nil, nil
	}
	processOutput := func(owner, line string, stderr bool) {
		if id, ok := strings.CutPrefix(owner, botproc.IntegrationPrefix); ok {
			integ.Definitions.ProcessLine(id, line, stderr)
		}
	}
	bundles := botproc.New(botproc.Options{Node: a.cfg.Node, Dir: filepath.Join(a.cfg.DataDir, "bundles"),
		APIURL: a.URL, Token: processToken, Env: processEnv, Output: processOutput, Log: a.log})
	a.closeOnShutdown(bundles.Stop)
	a.bundles = bundles
	// Leases keep a conversation's turns on one node when several share
	// the database.
	node := model.NewNodeID()
	// Integrations: the bot's messages in the conversations they own are
	// delivered from the signal log (the outbox hears of each commit).
	integ = integrations.New(a.db, bundles, integrations.Options{PublicURL: a.URL, Node: node, Log: a.log})
	grouped := a.db.NewCommitter(queue.AfterCommit(func(sigs ...*model.Signal) {
		hub.Publish(sigs...)
		for _, sig := range sigs {
			integ.Outbox.Published(sig)
		}
	}))
	if g, ok := grouped.(interface{ Transactions() uint64 }); ok {
		met.CounterFunc("parley_commit_transactions_total", "Transactions the chat pipeline's group commit ran (batches of writes, and writes run again alone after their batch failed): parley_commits_total over it is how many writes a transaction holds.",
			func() float64 { return float64(g.Transactions()) })
	}
	commit := store.Committer(observedCommitter{grouped, met})
	engine := runtime.New(runtime.Options{})
	a.closeOnShutdown(engine.Close) // after the workers that run turns
	sdkBots := turns.NewSDKBots(a.db, bundles, a.log)
	// The Chat API's use cases, then the Runtime API's (bots and
	// integrations over HTTP, and the sandbox's client through the turns
	// runtime; its deletions reach the Chat API's caches and streams).
	// callAction of a bot's own action calls the SDK bot.
	// Users' messages wait at the door, then are refused (429), while
	// turns wait for a worker longer than the door's bound (MaxTurnDelay
	// or automatic), or while MaxMessagesInFlight are being stored.
	door := queue.Door(a.cfg.MaxTurnDelay, a.cfg.MaxMessagesInFlight)
	met.Gauge("parley_door_waiting", "Users' messages waiting at the door for the bots to catch up.", func() float64 { return float64(door.Waiting()) })
	if _, on := door.Bound(); on {
		met.Gauge("parley_door_bound_seconds", "How long the conversation first in line may wait for a worker before new messages wait at the door (--max-turn-delay, or the automatic bound).",
			func() float64 { b, _ := door.Bound(); return b.Seconds() })
	}
	a.chat = conversations.NewChat(a.db, commit, hub, door, queue, peers)
	// callAction of '<integration>:<action>' calls the integration.
	var actions runtimeapi.ActionCaller = actionRouter{integrations: integ.Actions, bots: sdkBots}
	if o.actions != nil {
		actions = o.actions
	}
	// The Files API (its indexer runs in the background; its callers
	// authenticate with the Runtime API's credentials); bot code's
	// client.searchFiles runs its search.
	filesAPI := files.NewAPI(a.db, blobs, a.URL, a.cfg.models(), a.log)
	a.runtimeAPI = runtimeapi.New(a.db, commit, actions, sdkBots, a.chat, filesAPI, integ.Actions)
	runtimeScheduler := runtimeapi.NewScheduler(a.runtimeAPI, a.log, 0)
	// The Tables API's use cases (importTable reads the bot's uploaded
	// files through the Files API's library, its tables.FileSource); the
	// sandbox's client reaches their row operations through turns.WithTables.
	tablesUC, rowsUC, jobsUC := tables.New(a.db, filesAPI.Files, tables.Limits{})
	sandboxAPI := turns.WithTables(a.runtimeAPI, tables.Invoker{Rows: rowsUC}, tables.TableOperations)
	botRuntime := turns.NewRuntime(a.db, commit, engine, sdkBots, sandboxAPI, filesAPI, a.log)
	if pgBroker != nil {
		// Changes told by other nodes (and, when this node may have missed
		// some, realtime.ChangedAll) reach the caches that hold copies.
		pgBroker.OnChange(func(kind, botID, conversationID string) {
			a.chat.Changed(kind, botID, conversationID)
			if kind != conversations.ChangedParticipants && kind != conversations.ChangedConversation {
				botRuntime.ForgetBots()
			}
		})
	}
	hub.Start(ctx)
	resolver := botRuntime.Resolve
	if o.bots != nil {
		resolver = o.bots
	}
	// The lease TTL bounds how long a dead or stalled node's conversations
	// wait (docs/architecture.md, "Several nodes").
	leaseTTL := a.cfg.LeaseTTL
	if leaseTTL <= 0 {
		leaseTTL = turns.DefaultLeaseTTL
	}
	dispatcher := turns.NewDispatcher(a.db, commit, queue, resolver, a.log, turns.DispatcherOptions{Workers: a.cfg.TurnWorkers, Leases: pg, Alone: alone, Node: node, Observer: met, LeaseTTL: leaseTTL,
		FoldWithin: foldWithin(a.cfg.FoldWithin)})
	scheduler := turns.NewScheduler(botRuntime, turns.SchedulerOptions{Node: node, LeaseTTL: leaseTTL})
	a.node, a.started, a.dispatcher, a.scheduler = node, time.Now(), dispatcher, scheduler
	a.log.Info("node started", "node", node, "lease_ttl", leaseTTL.String(), "leases", pg)

	// Use cases, one package per API family (the Chat API's and the
	// Runtime API's above: the turns runtime uses the latter).
	webchatUC := conversations.NewWebchat(a.chat, a.URL)
	fileUC := files.New(a.db, blobs)
	a.accounts = administration.NewAccounts(a.db)
	a.workspaces = administration.NewWorkspaces(a.db)
	members := administration.NewMembers(a.db)
	// Bot changes reach the Chat API's caches, the workflow scheduler and
	// the bundle processes; code is checked by the runtime (sandbox
	// JavaScript by the engine, bundles need Node.js).
	a.bots = administration.NewBots(a.db, botRuntime, integ.Installs, a.chat, botRuntime)

	if err := a.bootstrap(ctx); err != nil {
		return err
	}

	// Workers (stopped in reverse order, before the engine, hub and store).
	// The dispatcher resumes the turns left pending at once.
	dispatcher.Start(ctx)
	a.closeOnShutdown(dispatcher.Stop)
	scheduler.Start(context.Background())
	a.closeOnShutdown(scheduler.Stop)
	a.handOver = []func(){dispatcher.Stop, scheduler.Stop}
	runtimeScheduler.Start(context.Background())
	a.closeOnShutdown(runtimeScheduler.Stop)
	filesAPI.Indexer.Start(context.Background())
	a.closeOnShutdown(filesAPI.Indexer.Stop)
	integ.Outbox.Start(context.Background())
	a.closeOnShutdown(integ.Outbox.Stop)

	// Routes. Bots' users are rate-limited per user and per bot. Every mux
	// is an httpx.Mux, which reports the pattern that served a request to
	// the metrics; openapi.json lists every route.
	limits := httpx.NewLimits(a.cfg.RatePerUser, a.cfg.RatePerBot)
	mux := httpx.NewMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	api, err := openapi.Handler(a.URL)
	if err != nil {
		return err
	}
	mux.Handle("GET /openapi.json", api)
	if a.metricsListener == nil {
		mux.Handle("GET /metrics", met.Handler())
	}
	mux.Handle("/v1/admin/", admin.NewHandler(admin.Deps{Accounts: a.accounts, Workspaces: a.workspaces,
		Members: members, Bots: a.bots, Support: administration.NewSupport(a.db, commit), PublicURL: a.URL}))
	integrationsAPI := integrationshttp.NewHandler(integrationshttp.Deps{Accounts: a.accounts, Integrations: integ})
	for _, p := range integrationshttp.Patterns {
		mux.Handle(p, integrationsAPI)
	}
	// The Webhook interface, {public-url}/{webhookId}[/...]: installed
	// integrations' webhook_received, and the built-in webhook
	// integration's events.
	builtinHooks := webhook.NewHandler(conversations.NewWebhooks(a.db, commit), limits)
	webhooks := integrationshttp.NewWebhookHandler(integ.Webhooks, builtinHooks)
	for _, p := range integrationshttp.WebhookPatterns {
		mux.Handle(p, webhooks)
	}
	mux.Handle("/v2/", admin.HostedOnly) // Botpress's billing and usage: 405 MethodNotFound
	mux.Handle("/v1/chat/", runtimehttp.NewHandler(a.runtimeAPI, limits))
	filesHandler := fileshttp.NewHandler(filesAPI, credentials, limits)
	mux.Handle("/v1/files", filesHandler)
	mux.Handle("/v1/files/", filesHandler)
	// The Tables API: bots' tables, authenticated like the Runtime API.
	tablesAPI := tableshttp.NewHandler(tableshttp.Deps{Auth: a.runtimeAPI.Credentials,
		Tables: tablesUC, Rows: rowsUC, Jobs: jobsUC, Limits: limits})
	mux.Handle("/v1/tables", tablesAPI)
	mux.Handle("/v1/tables/", tablesAPI)
	mux.HandleFunc("/v1/", httpx.NoRoute) // every other /v1 path: the standard error body
	mux.Handle("/chat/", chat.NewHandler(a.chat, hub, limits))
	mux.Handle("/webchat/", webchat.NewHandler(webchat.Deps{Chat: a.chat, Webchat: webchatUC, Files: fileUC,
		Hub: hub, PublicURL: a.URL, Limits: limits}, webchat.Options{}))
	pages, err := web.NewHandler(webchatUC, a.URL)
	if err != nil {
		return err
	}
	for _, route := range web.Routes {
		mux.Handle(route, pages)
	}

	a.server = &http.Server{
		Handler: httpx.AccessLog(a.log, a.db.Transient, met.Instrument(chat.FoldSlashes(mux))),
		// Reading a request, headers and body, is bounded: a client that
		// sends slowly is cut off. SSE streams lift the deadline once
		// they start (realtime.Hub.Serve).
		ReadHeaderTimeout: min(10*time.Second, a.cfg.BodyReadTimeout),
		ReadTimeout:       a.cfg.BodyReadTimeout,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	a.server.RegisterOnShutdown(hub.Close) // SSE streams end before Shutdown waits on them
	go func() {
		if err := a.server.Serve(a.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("server stopped", "err", err)
		}
	}()
	if a.metricsListener != nil {
		metricsMux := httpx.NewMux()
		metricsMux.Handle("GET /metrics", met.Handler())
		a.metricsServer = &http.Server{Handler: metricsMux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := a.metricsServer.Serve(a.metricsListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("metrics server stopped", "err", err)
			}
		}()
		a.log.Info("metrics are served", "addr", a.metricsListener.Addr().String())
	}
	a.log.Info("parley is serving", "addr", a.listener.Addr().String(), "public_url", a.URL, "store", a.db.Engine())
	return nil
}

// fileBlobs is where uploaded file contents live: in the database on
// PostgreSQL (every node sees every file), on disk under the data
// directory with SQLite.
func fileBlobs(db store.DB, pg bool, dataDir string) (files.Blobs, error) {
	if pg {
		return blob.DB{Files: db.Files()}, nil
	}
	return blob.NewDisk(filepath.Join(dataDir, "files"))
}

// warmPool warms PostgreSQL's pool before the node serves
// (Config.DBWarmConnections, postgres.DB.Warm). A failure is only logged:
// the connections warm as they are used.
func (a *App) warmPool(ctx context.Context) {
	db, ok := a.db.(*postgres.DB)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	warmed, err := db.Warm(ctx, a.cfg.DBWarmConnections)
	if err != nil {
		a.log.Warn("postgres: warming the pool's connections", "err", err)
		return
	}
	a.log.Debug("postgres: pool warmed", "connections", warmed, "took", time.Since(start))
}

func (a *App) closeOnShutdown(fn func()) {
	a.closers = append(a.closers, func(context.Context) error { fn(); return nil })
}

// readyz reports whether the store answers and its schema is migrated.
func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := a.db.Ping(ctx)
	if err == nil {
		err = a.db.Migrated(ctx)
	}
	if err != nil {
		a.log.Warn("not ready", "err", err)
		httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "store unreachable or not migrated"})
		return
	}
	held, n := a.dispatcher.Held(100)
	conv := make([]string, len(held))
	for i, r := range held {
		conv[i] = r.BotID + "/" + r.ConversationID
	}
	sched := map[string]any{"leader": false}
	if leading, since := a.scheduler.Leading(); leading {
		sched = map[string]any{"leader": true, "since": since.UTC().Format(time.RFC3339Nano)}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "store": a.db.Engine(),
		"node": map[string]any{"id": a.node, "started_at": a.started.UTC().Format(time.RFC3339Nano),
			"held_conversations": n, "conversations": conv, "scheduler": sched}})
}

// bootstrap creates the owner, workspace and admin token on first start.
func (a *App) bootstrap(ctx context.Context) error {
	secret, err := a.accounts.Bootstrap(ctx, a.cfg.AdminToken)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if secret == "" {
		return nil
	}
	a.AdminToken = secret
	if a.cfg.AdminToken != "" {
		a.log.Info("bootstrapped: owner account and default workspace created; the admin token is PARLEY_ADMIN_TOKEN", "email", administration.BootstrapEmail)
		return nil
	}
	path := filepath.Join(a.cfg.DataDir, "admin-token")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	a.log.Info("bootstrapped: owner account and default workspace created; this admin token is shown once and saved to "+path,
		"email", administration.BootstrapEmail, "token", secret)
	return nil
}

// Store, Accounts, Workspaces, Bots and Chat expose parts of the server to
// tests and commands.
func (a *App) Store() store.DB                        { return a.db }
func (a *App) Accounts() *administration.Accounts     { return a.accounts }
func (a *App) Workspaces() *administration.Workspaces { return a.workspaces }
func (a *App) Bots() *administration.Bots             { return a.bots }
func (a *App) Chat() *conversations.Chat              { return a.chat }
func (a *App) RuntimeAPI() *runtimeapi.API            { return a.runtimeAPI }

// BotProcesses is the supervisor of deployed bundles' Node.js processes.
func (a *App) BotProcesses() *botproc.Supervisor { return a.bundles }

// Shutdown stops accepting requests, lets in-flight ones finish, then stops
// workers and closes the store.
func (a *App) Shutdown(ctx context.Context) error {
	return a.shutdown(ctx)
}

func (a *App) shutdown(ctx context.Context) error {
	var errs []error
	// First the turn workers: they release their leases as they end, so
	// another node takes this one's conversations over at once (not when
	// the leases expire), and the turns in flight can still call this
	// node's API while they finish. Stop is idempotent (also a closer).
	for _, stop := range a.handOver {
		stop()
	}
	if a.server != nil {
		if err := a.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	} else if a.listener != nil {
		a.listener.Close()
	}
	if a.metricsServer != nil {
		if err := a.metricsServer.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	} else if a.metricsListener != nil {
		a.metricsListener.Close()
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	a.closers = nil
	return errors.Join(errs...)
}

// NewLogger builds the process logger: text on a terminal, JSON otherwise,
// unless the format is forced.
func NewLogger(format, level string, out *os.File) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "auto" {
		format = "json"
		if fi, err := out.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(out, opts))
	}
	return slog.New(slog.NewJSONHandler(out, opts))
}

// MetricsURL is the URL of GET /metrics (on its own listener when
// Config.MetricsAddr is set).
func (a *App) MetricsURL() string {
	if a.metricsListener != nil {
		return "http://" + a.metricsListener.Addr().String() + "/metrics"
	}
	return a.URL + "/metrics"
}

// foldWithin is the dispatcher's FoldWithin for the configured one, whose
// zero means never.
func foldWithin(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
