package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/gctune"
	"github.com/parley-bots/parley/internal/store/postgres"
)

// target is a server under test, running as a child process.
type target struct {
	name  string
	url   string
	token string // Parley's admin token; empty for the bare handler
	cmd   *exec.Cmd
	drop  func() // drops the target's PostgreSQL database
	// dbPID is the PostgreSQL server's postmaster when it runs on this
	// machine and /proc shows it (0 otherwise): its CPU time and its
	// backends' are the database's share of a message.
	dbPID int
}

// pid is the child's process id (its memory is read from /proc).
func (t *target) pid() int { return t.cmd.Process.Pid }

// stop ends the child with SIGTERM (a Parley child writes its CPU profile
// then) and waits for it.
func (t *target) stop() {
	closeIdle(t.url)
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = t.cmd.Process.Kill()
		<-done
	}
	if t.drop != nil {
		t.drop()
	}
}

// freeAddr returns a loopback address nobody listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startBare starts the bare net/http JSON handler: this program again,
// as `parley-bench child bare ADDR`.
func startBare() (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "child", "bare", addr)
	cmd.Stderr = os.Stderr
	t := &target{name: "bare net/http", url: "http://" + addr, cmd: cmd}
	return t, t.start("/")
}

// parleySpec says which Parley to start: bin "" is this program's own
// copy of the server (`parley-bench child parley`), else a `parley`
// executable (an older build, side by side); env is added to its
// environment.
type parleySpec struct {
	label, bin string
	env        []string
}

// startParley starts a Parley server on engine ("sqlite" or "postgres",
// then on a fresh database created through pgURL). env adds environment
// variables (PARLEY_...) to the child's.
func startParley(s parleySpec, engine, pgURL, dir string, env []string, cpuprofile string) (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	t := &target{name: s.label, url: "http://" + addr, token: randomHex(16)}
	args := []string{"serve", "--addr", addr, "--data-dir", filepath.Join(dir, s.label+"-"+engine), "--log-level", "warn"}
	if engine == "postgres" {
		url, drop, err := freshDatabase(pgURL)
		if err != nil {
			return nil, err
		}
		t.drop = drop
		args = append(args, "--database-url", url)
	}
	if s.bin == "" {
		t.cmd = exec.Command(os.Args[0], append([]string{"child", "parley", cpuprofile}, args...)...)
	} else {
		t.cmd = exec.Command(s.bin, args...)
	}
	t.cmd.Env = append(os.Environ(), append([]string{
		"PARLEY_ADMIN_TOKEN=" + t.token,
		// The benchmark is its own abuse: lift the per-user and per-bot
		// limits and the stream caps.
		"PARLEY_RATE_PER_USER=-1", "PARLEY_RATE_PER_BOT=-1",
		"PARLEY_MAX_STREAMS_PER_USER=100000", "PARLEY_MAX_STREAMS_PER_CONVERSATION=100000",
		"PARLEY_MAX_CONNECTIONS=30000", "PARLEY_LOG_FORMAT=text",
	}, env...)...)
	t.cmd.Stderr = os.Stderr
	if err := t.start("/healthz"); err != nil {
		if t.drop != nil {
			t.drop()
		}
		return nil, err
	}
	return t, nil
}

// start runs the child and waits until path answers.
func (t *target) start(path string) error {
	if err := t.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(t.url + path)
		if err == nil {
			res.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.stop()
	return fmt.Errorf("%s did not start on %s", t.name, t.url)
}

// freshDatabase creates an empty PostgreSQL database next to the one of
// url and returns its URL and a function that drops it.
func freshDatabase(url string) (string, func(), error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	name := "parley_bench_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	cfg := conn.Config()
	fresh := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	drop := func() {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return fresh, drop, nil
}

// pgPoolEnv caps each Parley's PostgreSQL pool when that many Parleys
// at their default pool (32) would pass the server's max_connections: they
// all run at once, and a refused connection fails turns (their replies
// are lost), which the benchmark would count as a server that cannot keep
// up. Nil when the default fits.
func pgPoolEnv(url string, servers int) ([]string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	var maxConns int
	if err := conn.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&maxConns); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	const reserve = 10 // this tool's connections, psql, others
	if servers*postgres.DefaultMaxConns+reserve <= maxConns {
		return nil, nil
	}
	n := (maxConns - reserve) / max(servers, 1)
	if n < 4 {
		return nil, fmt.Errorf("postgres: max_connections %d is too small for %d servers", maxConns, servers)
	}
	fmt.Printf("PostgreSQL max_connections %d: each of the %d Parley servers gets a pool of %d (PARLEY_DB_MAX_CONNECTIONS)\n\n", maxConns, servers, n)
	return []string{"PARLEY_DB_MAX_CONNECTIONS=" + strconv.Itoa(n)}, nil
}

// child runs the server side of a target in this process.
func child(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	switch {
	case len(args) == 2 && args[0] == "bare":
		return serveBare(ctx, args[1])
	case len(args) >= 3 && args[0] == "parley" && args[2] == "serve":
		return serveParley(ctx, args[1], args[3:])
	}
	return errors.New("usage: parley-bench child bare ADDR | child parley CPUPROFILE serve FLAGS")
}

// serveBare is the reference: a net/http handler that decodes the
// createMessage body and answers a JSON message, storing nothing.
func serveBare(ctx context.Context, addr string) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ConversationID string         `json:"conversationId"`
			Payload        map[string]any `json:"payload"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil && r.Method == http.MethodPost {
			http.Error(w, `{"message":"bad body"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{
			"id": randomHex(8), "conversationId": in.ConversationID, "payload": in.Payload,
			"userId":    r.Header.Get("x-user-key")[:min(8, len(r.Header.Get("x-user-key")))],
			"createdAt": time.Now().UTC().Format(time.RFC3339Nano), "metadata": map[string]any{}}})
	})
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveParley is `parley serve` with this build's code, writing a CPU
// profile to cpuprofile ("-": none) until it is told to stop.
func serveParley(ctx context.Context, cpuprofile string, args []string) error {
	cfg, err := app.LoadConfig(args, os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	if cpuprofile != "-" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
		defer writeAllocs(cpuprofile + ".allocs")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	defer gctune.StartUnlessSet(cfg.GCHeadroomMB)() // as parley serve
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), app.ShutdownTimeout)
	defer cancel()
	return a.Shutdown(sctx)
}

// writeAllocs writes the server's allocation profile (what it allocated
// since it started) beside its CPU profile.
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("allocs").WriteTo(f, 0)
}

// rssKB reads a process's resident set size from /proc (Linux).
func rssKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

// cpuTime is the CPU time (user + system) a process has used, from /proc
// (Linux; clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// postmasterPID is the process id of the PostgreSQL server at url when it
// runs on this machine (the parent of a backend of ours, read from
// /proc), or 0.
func postmasterPID(url string) int {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0
	}
	defer conn.Close(ctx)
	var backend int
	if conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend) != nil {
		return 0
	}
	f := procStat(backend)
	if len(f) < 2 {
		return 0
	}
	pm, _ := strconv.Atoi(f[1])
	return pm
}

// dbCPUTime is the CPU time the PostgreSQL server with postmaster pm has
// used: the postmaster's own and that of its children gone (cutime,
// cstime), plus that of its children alive.
func dbCPUTime(pm int) time.Duration {
	if pm == 0 {
		return 0
	}
	ticks := func(f []string, fields ...int) (n int64) {
		for _, i := range fields {
			if i < len(f) {
				v, _ := strconv.ParseInt(f[i], 10, 64)
				n += v
			}
		}
		return n
	}
	total := ticks(procStat(pm), 11, 12, 13, 14)
	dirs, _ := os.ReadDir("/proc")
	parent := strconv.Itoa(pm)
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil && pid != pm {
			if f := procStat(pid); len(f) > 12 && f[1] == parent {
				total += ticks(f, 11, 12)
			}
		}
	}
	return time.Duration(total) * 10 * time.Millisecond
}

// procStat is a process's /proc stat fields after its command name (state
// first, then ppid, ...; utime and stime at 11 and 12), or nil.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The command name is in parentheses and may hold spaces.
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
}

// machineTicks are the machine's CPU time so far, in clock ticks: all of
// it, and what the hypervisor gave other guests while this one had work
// (steal, the eighth field of /proc/stat's cpu line); zeros where there is
// no /proc/stat.
type machineTicks struct{ total, steal int64 }

func readMachineTicks() machineTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachineTicks(line)
}

// parseMachineTicks reads /proc/stat's first line: cpu user nice system
// idle iowait irq softirq steal (guest time, after it, is in user's).
func parseMachineTicks(line string) machineTicks {
	f := strings.Fields(line)
	var m machineTicks
	if len(f) == 0 || f[0] != "cpu" {
		return m
	}
	for i := 1; i < len(f) && i <= 8; i++ {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		m.total += v
		if i == 8 {
			m.steal = v
		}
	}
	return m
}

// stolenSince is the share of the machine's CPU time stolen since m (-1:
// unknown): another tenant's load, which makes a run's figures lower
// whatever the code does.
func (m machineTicks) stolenSince() float64 {
	now := readMachineTicks()
	if now.total <= m.total {
		return -1
	}
	return float64(now.steal-m.steal) / float64(now.total-m.total)
}
