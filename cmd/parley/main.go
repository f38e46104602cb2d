// Command parley is the Parley server and its tools: a self-hostable bot
// platform that speaks the Botpress Chat, Webchat and Admin APIs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/gctune"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/store/sqlite"
)

// version, when set at build time with -ldflags "-X main.version=...",
// replaces the module version read from the build information.
var version = ""

const usage = `Parley: a self-hostable bot platform that speaks the Botpress protocols.

Usage:
  parley serve [flags]          run the server (Chat, Webchat and Admin APIs)
  parley token create [flags]   give an account a personal access token
  parley bot init|deploy|pull|test   build, test and publish workflow bots
  parley version                print the version and build information
  parley help                   show this help

Run "parley serve -h", "parley token create -h" or "parley bot help" for
their flags. Every serve flag also reads an environment variable
(PARLEY_ADDR, PARLEY_DATA_DIR, PARLEY_DATABASE_URL, PARLEY_PUBLIC_URL,
PARLEY_LOG_FORMAT, PARLEY_LOG_LEVEL); PARLEY_ADMIN_TOKEN (at least 16
characters) sets the first admin token.

On first start Parley creates an owner account, a workspace and an admin
token, printed once and saved to <data-dir>/admin-token.
`

// minAdminTokenLength is the shortest PARLEY_ADMIN_TOKEN serve accepts.
const minAdminTokenLength = 16

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "parley:", err)
	}
	stop()
	os.Exit(exitCode(err))
}

// usageError is a command line the program cannot run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitCode is 0 on success and for an explicit request for help, 2 for a
// command line that cannot run (unknown command, bad flag), 1 otherwise.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue), isFlagError(err):
		return 2
	}
	return 1
}

// isFlagError reports errors of the flag package (an unknown flag, a bad
// value), which it has already explained on stderr with the usage.
func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}

type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

var commands = []string{"serve", "token", "bot", "version", "help"}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageErrorf("missing command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "token":
		if len(args) < 2 || args[1] != "create" {
			return usageErrorf(`usage: parley token create --email ADDRESS [--note TEXT]`)
		}
		return tokenCreate(ctx, args[2:], getenv, stdout, stderr)
	case "bot":
		return botCommand(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-version", "-v":
		fmt.Fprintln(stdout, versionText())
		return nil
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return unknownCommand("parley", args[0], commands, `Run "parley help" for the list of commands.`)
}

// unknownCommand is the error for a mistyped command: the closest known
// command, if one is close, and a one-line hint.
func unknownCommand(prog, got string, known []string, hint string) error {
	msg := fmt.Sprintf("unknown command %q", got)
	if s := closest(got, known); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return usageErrorf("%s\n%s", msg, hint)
}

// closest returns the known word nearest to s (edit distance at most 2,
// and less than the word's length), or "".
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(s), k); d < bestD && d < len(k) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein (optimal string alignment)
// distance: "srve" is 1 from "serve", "sevre" is 1 too.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// versionText describes this binary from its build information: the module
// version (a tag, or a pseudo-version with the commit), the VCS revision,
// its time and whether the tree had local changes, and the Go version.
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	return describeBuild(info, ok)
}

func describeBuild(info *debug.BuildInfo, ok bool) string {
	v := version
	if v == "" && ok {
		v = info.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, at, modified string
	if ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "parley %s", v)
	if rev != "" {
		fmt.Fprintf(&b, "\ncommit %s", rev)
		if at != "" {
			fmt.Fprintf(&b, " (%s)", at)
		}
		if modified == "true" {
			b.WriteString(", with uncommitted changes")
		}
	}
	goVersion := runtime.Version()
	if ok && info.GoVersion != "" {
		goVersion = info.GoVersion
	}
	fmt.Fprintf(&b, "\nbuilt with %s for %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	stopWithGoRun()
	cfg, err := app.LoadConfig(args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &flagError{err}
	}
	if n := len(cfg.AdminToken); n > 0 && n < minAdminTokenLength {
		return usageErrorf("PARLEY_ADMIN_TOKEN is %d characters long: an admin token must have at least %d (for example: openssl rand -hex 24)", n, minAdminTokenLength)
	}
	if cfg.DatabaseURL == "" {
		// The SQLite store would only say "unable to open database file (14)".
		if err := ensureWritableDir(cfg.DataDir); err != nil {
			return err
		}
	}
	log := app.NewLogger(cfg.LogFormat, cfg.LogLevel, os.Stderr)
	defer gctune.StartUnlessSet(cfg.GCHeadroomMB)()
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
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErrorf("unexpected argument %q\nusage: parley token create --email ADDRESS [--note TEXT]", rest[0])
	}
	if *email == "" {
		return usageErrorf("--email is required\nusage: parley token create --email ADDRESS [--note TEXT]")
	}
	var db store.DB
	if *dbURL != "" {
		db, err = postgres.Open(ctx, *dbURL)
	} else {
		if err := ensureWritableDir(*dataDir); err != nil {
			return err
		}
		db, err = sqlite.Open(ctx, filepath.Join(*dataDir, "parley.db"))
	}
	if err != nil {
		return err
	}
	defer db.Close()
	acct, secret, err := administration.NewAccounts(db).IssueTokenForEmail(ctx, *email, *note)
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

// ensureWritableDir creates the data directory if needed and checks that
// files can be created in it, so that a read-only directory is reported as
// such rather than by the database driver.
func ensureWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s cannot be created: %w", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".parley-write-check-*")
	if err != nil {
		return fmt.Errorf("data directory %s is not writable: %w (set --data-dir or PARLEY_DATA_DIR to a directory this user can write)", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("data directory %s is not writable: %w", dir, unwrapPath(err))
	}
	if db := filepath.Join(dir, "parley.db"); fileExists(db) {
		if f, err := os.OpenFile(db, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("database %s is not writable: %w", db, unwrapPath(err))
		} else {
			f.Close()
		}
	}
	return nil
}

// unwrapPath drops the operation and path of a *fs.PathError, which the
// message around it already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
