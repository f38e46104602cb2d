// Package botproc runs deployed bot bundles: CommonJS bundles built for
// Node.js with @botpress/sdk (the bot as module.exports.default, its
// `handler` exported). For each bot version it runs one Node.js child
// process with an embedded runner (runner.cjs) that serves the bundle's
// handler on 127.0.0.1 at a random port, restarts it with backoff when it
// dies, and stops it when the version is retired or Parley shuts down.
// The turn pipeline (package turns) calls it through turns.Bundles.
package botproc

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed runner.cjs
var runnerJS []byte

// IntegrationPrefix starts the key of an integration's processes
// ("integration:<id>" where a bot's is its id): they get BP_INTEGRATION_ID
// instead of BP_BOT_ID, and Options.Token is asked for that key.
const IntegrationPrefix = "integration:"

// Options configure a Supervisor.
type Options struct {
	// Node is the node executable; "" looks "node" up on PATH.
	Node string
	// Dir is where bundles and the runner are written (0700).
	Dir string
	// APIURL is Parley's public URL, BP_API_URL of the bot processes.
	APIURL string
	// Token mints BP_TOKEN, the credential a bot process uses to call the
	// Runtime API as its bot; nil leaves it empty.
	Token func(ctx context.Context, botID string) (string, error)
	// Env returns extra environment variables of a process (nil: none),
	// asked for at every start with the process's key.
	Env func(ctx context.Context, owner string) ([]string, error)
	// Output is given every line a process writes (stderr tells which
	// stream); nil: lines go to Log only.
	Output func(owner, line string, stderr bool)
	// MaxOldSpaceMB is the V8 heap limit of a process (default 256).
	MaxOldSpaceMB int
	// CallTimeout bounds one call inside the runner (default 60 s).
	CallTimeout time.Duration
	// StartTimeout bounds a start until the runner reports its port
	// (default 20 s).
	StartTimeout time.Duration
	Log          *slog.Logger
}

// Supervisor runs the bot processes of one Parley process.
type Supervisor struct {
	o       Options
	node    string
	nodeErr error

	mu      sync.Mutex
	procs   map[string]*proc // by bot id + "/" + version id
	stopped bool
}

// New returns a supervisor. Without Node.js it still works: Available
// reports why, and URL fails.
func New(o Options) *Supervisor {
	if o.MaxOldSpaceMB <= 0 {
		o.MaxOldSpaceMB = 256
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 20 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Supervisor{o: o, procs: map[string]*proc{}}
	name := o.Node
	if name == "" {
		name = "node"
	}
	s.node, s.nodeErr = exec.LookPath(name)
	if s.nodeErr != nil {
		s.nodeErr = fmt.Errorf("Node.js (%s) is not installed or not on PATH", name)
	}
	return s
}

// Available reports why bundles cannot run here, or nil.
func (s *Supervisor) Available() error { return s.nodeErr }

// URL returns the base URL of the process serving a bot version, starting
// it when needed; it waits for the process to be ready (or ctx).
func (s *Supervisor) URL(ctx context.Context, botID, versionID, code string) (string, error) {
	if s.nodeErr != nil {
		return "", s.nodeErr
	}
	key := botID + "/" + versionID
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return "", errors.New("bot processes are stopped")
	}
	p := s.procs[key]
	if p == nil {
		file, err := s.writeBundle(botID, versionID, code)
		if err != nil {
			s.mu.Unlock()
			return "", err
		}
		p = &proc{s: s, botID: botID, versionID: versionID, file: file, changed: make(chan struct{}), done: make(chan struct{})}
		s.procs[key] = p
		go p.run()
	}
	s.mu.Unlock()
	return p.waitURL(ctx)
}

// Retire stops the bot's processes of versions other than keep ("": all).
func (s *Supervisor) Retire(botID, keep string) {
	s.mu.Lock()
	var old []*proc
	for k, p := range s.procs {
		if p.botID == botID && p.versionID != keep {
			old = append(old, p)
			delete(s.procs, k)
		}
	}
	s.mu.Unlock()
	for _, p := range old {
		p.stop()
	}
}

// Stop stops every process and refuses new ones (Parley's shutdown).
func (s *Supervisor) Stop() {
	s.mu.Lock()
	s.stopped = true
	procs := s.procs
	s.procs = map[string]*proc{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// PID returns the process id of the bot's running process (tests).
func (s *Supervisor) PID(botID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.botID == botID {
			p.mu.Lock()
			pid := p.pid
			p.mu.Unlock()
			if pid != 0 {
				return pid
			}
		}
	}
	return 0
}

func (s *Supervisor) writeBundle(botID, versionID, code string) (string, error) {
	dir := filepath.Join(s.o.Dir, strings.ReplaceAll(filepath.Base(botID), ":", "-"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	runner := filepath.Join(s.o.Dir, "runner.cjs")
	if err := os.WriteFile(runner, runnerJS, 0o600); err != nil {
		return "", err
	}
	file := filepath.Join(dir, filepath.Base(versionID)+".cjs")
	return file, os.WriteFile(file, []byte(code), 0o600)
}

// proc is one bot version's process, restarted until stopped.
type proc struct {
	s                      *Supervisor
	botID, versionID, file string
	mu                     sync.Mutex
	url                    string
	pid                    int
	lastErr                error
	cmd                    *exec.Cmd
	changed                chan struct{} // closed when url or lastErr change
	stopped                bool
	done                   chan struct{}
	stopOnce               sync.Once
}

func (p *proc) set(url string, pid int, cmd *exec.Cmd, err error) {
	p.mu.Lock()
	p.url, p.pid, p.lastErr = url, pid, err
	if cmd != nil || url == "" {
		p.cmd = cmd
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

func (p *proc) waitURL(ctx context.Context) (string, error) {
	for {
		p.mu.Lock()
		url, err, ch, stopped := p.url, p.lastErr, p.changed, p.stopped
		p.mu.Unlock()
		if url != "" {
			return url, nil
		}
		if stopped {
			return "", errors.New("bot process stopped")
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return "", fmt.Errorf("bot process not ready: %w", err)
			}
			return "", ctx.Err()
		case <-ch:
			if err := p.lastErrNow(); err != nil {
				return "", err // the start failed; the caller retries later
			}
		}
	}
}

func (p *proc) lastErrNow() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.url != "" {
		return nil
	}
	return p.lastErr
}

func (p *proc) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// run starts the process and restarts it with backoff (200 ms doubling to
// 10 s, reset after a run of 30 s) until stopped.
func (p *proc) run() {
	defer close(p.done)
	backoff := 200 * time.Millisecond
	for !p.isStopped() {
		started := time.Now()
		err := p.once()
		if p.isStopped() {
			return
		}
		p.set("", 0, nil, fmt.Errorf("bot process exited: %v", err))
		p.s.o.Log.Warn("botproc: bot process exited; restarting", "bot", p.botID, "version", p.versionID, "err", err, "in", backoff)
		if time.Since(started) > 30*time.Second {
			backoff = 200 * time.Millisecond
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-p.stopCh():
			t.Stop()
			return
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (p *proc) stopCh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.changed
}

// once runs the process until it exits.
func (p *proc) once() error {
	o := p.s.o
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	token := ""
	if o.Token != nil {
		var err error
		if token, err = o.Token(ctx, p.botID); err != nil {
			cancel()
			return fmt.Errorf("minting the bot token: %w", err)
		}
	}
	var extra []string
	if o.Env != nil {
		var err error
		if extra, err = o.Env(ctx, p.botID); err != nil {
			cancel()
			return fmt.Errorf("the process's environment: %w", err)
		}
	}
	cancel()
	cmd := exec.Command(p.s.node, "--max-old-space-size="+strconv.Itoa(o.MaxOldSpaceMB),
		filepath.Join(o.Dir, "runner.cjs"), p.file)
	cmd.Dir = filepath.Dir(p.file)
	// Only what the bot needs: never Parley's own environment (database
	// URL, admin token).
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NODE_ENV=production",
		"BP_API_URL=" + o.APIURL, "BP_TOKEN=" + token,
		"PARLEY_CALL_TIMEOUT_MS=" + strconv.FormatInt(o.CallTimeout.Milliseconds(), 10)}
	if id, ok := strings.CutPrefix(p.botID, IntegrationPrefix); ok {
		cmd.Env = append(cmd.Env, "BP_INTEGRATION_ID="+id)
	} else {
		cmd.Env = append(cmd.Env, "BP_BOT_ID="+p.botID)
	}
	cmd.Env = append(cmd.Env, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.mu.Lock()
	p.cmd, p.pid = cmd, cmd.Process.Pid
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		_ = cmd.Process.Kill()
	}
	log := o.Log.With("bot", p.botID, "version", p.versionID)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.Warn("bot process: " + sc.Text())
			if o.Output != nil {
				o.Output(p.botID, sc.Text(), true)
			}
		}
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		first := true
		for sc.Scan() {
			line := sc.Bytes()
			if first {
				var hello struct {
					Runner *struct {
						Port int `json:"port"`
					} `json:"parleyRunner"`
				}
				if json.Unmarshal(line, &hello) == nil && hello.Runner != nil {
					first = false
					ready <- "http://127.0.0.1:" + strconv.Itoa(hello.Runner.Port) + "/"
					continue
				}
			}
			log.Debug("bot process: " + string(line))
			if o.Output != nil {
				o.Output(p.botID, string(line), false)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(o.StartTimeout)
	defer timer.Stop()
	select {
	case url := <-ready:
		p.set(url, cmd.Process.Pid, cmd, nil)
		log.Info("botproc: bot process ready", "url", url, "pid", cmd.Process.Pid)
	case err := <-exited:
		return fmt.Errorf("exited before it was ready: %v", err)
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return errors.New("not ready in time")
	}
	return <-exited
}

// stop ends the process: SIGTERM, then SIGKILL after 3 s.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		cmd := p.cmd
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if cmd != nil && cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
				return
			case <-time.After(3 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		}
		<-p.done
	})
}
