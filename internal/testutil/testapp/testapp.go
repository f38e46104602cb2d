// Package testapp starts real Parley servers on loopback for tests and runs
// the Node.js compatibility scripts (the official Botpress clients) against
// them.
package testapp

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/turns"
)

// Config returns a server configuration on a free loopback port with a
// fresh data directory; databaseURL "" means SQLite.
func Config(t testing.TB, databaseURL string) app.Config {
	// The overload door is off: tests send bursts on a loaded machine and
	// assert on other things; the door has tests of its own.
	return app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), DatabaseURL: databaseURL,
		LogFormat: "text", LogLevel: "warn", MaxTurnDelay: -1, MaxMessagesInFlight: -1, FoldWithin: turns.DefaultFoldWithin}
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, cfg app.Config, opts ...app.Option) *app.App {
	t.Helper()
	a, err := app.Start(context.Background(), cfg, Logger(t), opts...)
	if err != nil {
		t.Fatalf("start parley: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return a
}

// Logger returns a logger that writes warnings and errors to the test log
// (set PARLEY_TEST_LOG=debug to see everything).
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("PARLEY_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// CompatDir is where the Node.js compatibility scripts and their
// node_modules live.
func CompatDir() string { return filepath.Join(RepoRoot(), "tests", "compat") }

// RunNode runs a compatibility script with node and fails the test with its
// output when it fails. node and the npm packages are required: the test
// command installs them (see README); a missing one is a failure, not a
// skip, so CI cannot pass without the real clients.
func RunNode(t testing.TB, script string, env map[string]string) string {
	t.Helper()
	return StartNode(t, script, env).Wait()
}

// Node is a compatibility script running, for a test that acts while it
// runs (StartNode).
type Node struct {
	t      testing.TB
	script string
	out    *strings.Builder
	done   chan struct{}
	err    error
}

// StartNode starts a compatibility script as RunNode does, without waiting
// for it.
func StartNode(t testing.TB, script string, env map[string]string) *Node {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the compatibility tests: %v", err)
	}
	if _, err := os.Stat(filepath.Join(CompatDir(), "node_modules", "@botpress")); err != nil {
		t.Fatalf("npm packages missing: run `npm ci` in tests/compat (the test script does it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = CompatDir()
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// One writer for both: os/exec then writes to it from one goroutine
	// at a time (two different writers over one builder race).
	n := &Node{t: t, script: script, out: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stdout = n.out
	cmd.Stderr = n.out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("node %s: %v", script, err)
	}
	go func() {
		defer cancel()
		n.err = cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() { cancel(); <-n.done })
	return n
}

// Exited tells whether the script has ended.
func (n *Node) Exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// Wait waits for the script to end and returns its output, or fails the
// test with it.
func (n *Node) Wait() string {
	n.t.Helper()
	<-n.done
	if n.err != nil {
		n.t.Fatalf("node %s failed: %v\n%s", n.script, n.err, n.out.String())
	}
	return n.out.String()
}
