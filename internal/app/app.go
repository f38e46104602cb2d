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

	"github.com/parley-bots/parley/internal/blob"
	"github.com/parley-bots/parley/internal/httpapi/admin"
	"github.com/parley-bots/parley/internal/httpapi/chat"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/httpapi/webchat"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/service"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/store/sqlite"
	"github.com/parley-bots/parley/internal/web"
)

// App is a running Parley server.
type App struct {
	cfg      Config
	log      *slog.Logger
	db       store.DB
	svc      *service.Service
	listener net.Listener
	server   *http.Server
	hub      *realtime.Hub
	closers  []func(context.Context) error // run in reverse order on shutdown
	// URL is the public base URL.
	URL string
	// AdminToken is the bootstrap token when this start created it.
	AdminToken string
}

// ShutdownTimeout bounds how long in-flight requests may take to finish.
const ShutdownTimeout = 15 * time.Second

// Start opens the store, bootstraps it on first start, and starts serving.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	a := &App{cfg: cfg, log: log}
	if err := a.start(ctx); err != nil {
		a.shutdown(context.Background())
		return nil, err
	}
	return a, nil
}

func (a *App) start(ctx context.Context) error {
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	var err error
	if a.cfg.DatabaseURL != "" {
		a.db, err = postgres.Open(ctx, a.cfg.DatabaseURL)
	} else {
		a.db, err = sqlite.Open(ctx, filepath.Join(a.cfg.DataDir, "parley.db"))
	}
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	a.closers = append(a.closers, func(context.Context) error { return a.db.Close() })

	a.listener, err = net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	a.URL = publicURLFor(a.cfg.PublicURL, a.listener.Addr())
	a.svc = service.New(service.Options{Store: a.db, Log: a.log, PublicURL: a.URL})

	if err := a.bootstrap(ctx); err != nil {
		return err
	}
	mux := http.NewServeMux()
	if err := a.wire(ctx, mux); err != nil {
		return err
	}
	a.server = &http.Server{
		Handler:           httpx.AccessLog(a.log, chat.FoldSlashes(mux)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	a.server.RegisterOnShutdown(a.hub.Close) // SSE streams end before Shutdown waits on them
	go func() {
		if err := a.server.Serve(a.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("server stopped", "err", err)
		}
	}()
	a.log.Info("parley is serving", "addr", a.listener.Addr().String(), "public_url", a.URL, "store", a.db.Engine())
	return nil
}

// wire mounts every interface on mux and starts background workers.
func (a *App) wire(ctx context.Context, mux *http.ServeMux) error {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("/v1/admin/", admin.NewHandler(a.svc))
	a.wireRuntime()
	a.wireChat(ctx, mux)
	if err := a.wireWebchat(mux); err != nil {
		return err
	}
	return nil
}

// wireChat builds the realtime hub (with the PostgreSQL broker when several
// nodes may share the database) and the turn dispatcher, and mounts the
// Chat API.
// wireRuntime plugs the JavaScript runtime in: it checks code on deploy and
// runs the turns of bots with deployed code. It must run before the turn
// dispatcher starts, which resumes pending turns at once.
func (a *App) wireRuntime() {
	engine := runtime.New(runtime.Options{})
	a.svc.SetCompiler(engine)
	a.svc.SetBots(a.svc.CodeBots(engine))
	sched := a.svc.NewWorkflowScheduler(engine, service.WorkflowSchedulerOptions{})
	sched.Start(context.Background())
	a.closers = append(a.closers, func(context.Context) error { sched.Stop(); engine.Close(); return nil })
}

func (a *App) wireChat(ctx context.Context, mux *http.ServeMux) {
	var broker realtime.Broker
	turns := service.DispatcherOptions{}
	if a.db.Engine() == "postgres" {
		broker = realtime.NewPGBroker(a.cfg.DatabaseURL, "")
		turns.Leases = true
	}
	a.hub = realtime.NewHub(a.db.Chat(), broker, realtime.Options{Log: a.log})
	a.hub.Start(ctx)
	a.svc.SetPublisher(a.hub)
	d := service.NewDispatcher(a.svc, turns)
	d.Start(ctx)
	a.closers = append(a.closers, func(context.Context) error { a.hub.Close(); d.Stop(); return nil })
	mux.Handle("/chat/", chat.NewHandler(a.svc, a.hub))
}

// readyz reports whether the store answers and its schema is migrated.
func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.svc.Ready(ctx); err != nil {
		a.log.Warn("not ready", "err", err)
		httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "store unreachable or not migrated"})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready", "store": a.db.Engine()})
}

// bootstrap creates the owner, workspace and admin token on first start.
func (a *App) bootstrap(ctx context.Context) error {
	secret, err := a.svc.Bootstrap(ctx, a.cfg.AdminToken)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if secret == "" {
		return nil
	}
	a.AdminToken = secret
	if a.cfg.AdminToken != "" {
		a.log.Info("bootstrapped: owner account and default workspace created; the admin token is PARLEY_ADMIN_TOKEN", "email", service.BootstrapEmail)
		return nil
	}
	path := filepath.Join(a.cfg.DataDir, "admin-token")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	a.log.Info("bootstrapped: owner account and default workspace created; this admin token is shown once and saved to "+path,
		"email", service.BootstrapEmail, "token", secret)
	return nil
}

// Service exposes the service (for tests and commands).
func (a *App) Service() *service.Service { return a.svc }

// Shutdown stops accepting requests, lets in-flight ones finish, then stops
// workers and closes the store.
func (a *App) Shutdown(ctx context.Context) error {
	return a.shutdown(ctx)
}

func (a *App) shutdown(ctx context.Context) error {
	var errs []error
	if a.server != nil {
		if err := a.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	} else if a.listener != nil {
		a.listener.Close()
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

// wireWebchat mounts the Webchat API, the file store behind its uploads,
// the dashboard's extra admin operations and the built-in pages.
func (a *App) wireWebchat(mux *http.ServeMux) error {
	if fp, ok := a.db.(store.FilesProvider); ok && a.db.Engine() == "postgres" {
		a.svc.SetBlobs(blob.DB{Files: fp.Files()})
	} else {
		disk, err := blob.NewDisk(filepath.Join(a.cfg.DataDir, "files"))
		if err != nil {
			return err
		}
		a.svc.SetBlobs(disk)
	}
	mux.Handle("/webchat/", webchat.NewHandler(a.svc, a.hub, webchat.Options{}))
	adminExtra := webchat.NewAdminHandler(a.svc)
	mux.Handle("GET /v1/admin/bots/{id}/conversations", adminExtra)
	mux.Handle("GET /v1/admin/bots/{id}/conversations/{conversationId}/messages", adminExtra)
	pages, err := web.NewHandler(a.svc)
	if err != nil {
		return err
	}
	for _, route := range web.Routes {
		mux.Handle(route, pages)
	}
	return nil
}
