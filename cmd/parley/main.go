// Command parley is the Parley server and its tools: a self-hostable bot
// platform that speaks the Botpress Chat, Webchat and Admin APIs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/service"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/store/sqlite"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `Parley: a self-hostable bot platform that speaks the Botpress protocols.

Usage:
  parley serve [flags]          run the server (Chat, Webchat and Admin APIs)
  parley token create [flags]   give an account a personal access token
  parley bot init|deploy|pull|test   build, test and publish workflow bots
  parley version                print the version
  parley help                   show this help

Run "parley serve -h" or "parley token create -h" for their flags.
Every serve flag also reads an environment variable (PARLEY_ADDR,
PARLEY_DATA_DIR, PARLEY_DATABASE_URL, PARLEY_PUBLIC_URL, PARLEY_LOG_FORMAT,
PARLEY_LOG_LEVEL); PARLEY_ADMIN_TOKEN sets the first admin token.

On first start Parley creates an owner account, a workspace and an admin
token, printed once and saved to <data-dir>/admin-token.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "parley:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "token":
		if len(args) < 2 || args[1] != "create" {
			return errors.New(`usage: parley token create --email ADDRESS [--note TEXT]`)
		}
		return tokenCreate(ctx, args[2:], getenv, stdout, stderr)
	case "bot":
		return botCommand(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "parley", version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := app.LoadConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg.LogFormat, cfg.LogLevel, os.Stderr)
	a, err := app.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), app.ShutdownTimeout)
	defer cancel()
	if err := a.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped cleanly")
	return nil
}

// tokenCreate issues a personal access token straight through the store,
// for people added as workspace members (Parley sends no e-mail).
func tokenCreate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("parley token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "e-mail of the account (created if unknown)")
	note := fs.String("note", "issued with parley token create", "a note to recognise the token by")
	dataDir := fs.String("data-dir", envOr(getenv, "PARLEY_DATA_DIR", "./parley-data"), "data directory of the SQLite store (PARLEY_DATA_DIR)")
	dbURL := fs.String("database-url", getenv("PARLEY_DATABASE_URL"), "PostgreSQL URL (PARLEY_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	var db store.DB
	var err error
	if *dbURL != "" {
		db, err = postgres.Open(ctx, *dbURL)
	} else {
		if err := os.MkdirAll(*dataDir, 0o700); err != nil {
			return err
		}
		db, err = sqlite.Open(ctx, filepath.Join(*dataDir, "parley.db"))
	}
	if err != nil {
		return err
	}
	defer db.Close()
	acct, secret, err := service.New(service.Options{Store: db}).IssueTokenForEmail(ctx, *email, *note)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "token for %s (account %s):\n", acct.Email, acct.ID)
	fmt.Fprintln(stdout, secret)
	return nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
