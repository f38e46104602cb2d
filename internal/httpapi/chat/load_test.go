package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testbots"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// TestLoad is the Chat API load benchmark over loopback, bounded to about
// 30 s. Run it with
//
//	PARLEY_BENCH=1 go test -run TestLoad -v -count=1 ./internal/httpapi/chat/
//
// (PARLEY_BENCH_ENGINE=postgres for PostgreSQL; PARLEY_BENCH_CPUPROFILE=f
// writes a CPU profile of phase 1, PARLEY_BENCH_CPUPROFILE2=f of phase 2). Phase 1 saturates createMessage with
// concurrent clients (each request is a durable commit: message, signal,
// turn) and reports requests/s and p50/p99 latency. Phase 2 sends
// messages at a fixed rate to the echo bot and measures the time from
// sending a message to its reply arriving on the conversation's SSE stream.
func TestLoad(t *testing.T) {
	if os.Getenv("PARLEY_BENCH") == "" {
		t.Skip("set PARLEY_BENCH=1 to run the load benchmark")
	}
	var db store.DB
	engine := os.Getenv("PARLEY_BENCH_ENGINE")
	if engine == "postgres" {
		db = testdb.Postgres(t)
	} else {
		engine = "sqlite"
		db = testdb.SQLite(t)
	}
	phase1 := envDuration("PARLEY_BENCH_SATURATE", 10*time.Second)
	phase2 := envDuration("PARLEY_BENCH_RATE_DURATION", 10*time.Second)
	rate := envInt("PARLEY_BENCH_RATE", 2000)
	clients := envInt("PARLEY_BENCH_CLIENTS", 64)

	var bot switchBot
	e := newEnv(t, db, envOpts{bot: &bot})
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t.Logf("engine=%s GOMAXPROCS=%d clients=%d", engine, runtime.GOMAXPROCS(0), clients)

	type conv struct{ id, key string }
	setup := func(n int) []conv {
		out := make([]conv, n)
		for i := range out {
			_, key := e.user("")
			out[i] = conv{e.conversation(key), key}
		}
		return out
	}
	post := func(c conv, text string) (time.Duration, error) {
		body, _ := json.Marshal(map[string]any{"conversationId": c.id, "payload": map[string]any{"type": "text", "text": text}})
		req, _ := http.NewRequest("POST", e.base+"/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-user-key", c.key)
		start := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 201 {
			return 0, fmt.Errorf("status %d", res.StatusCode)
		}
		return time.Since(start), nil
	}

	// Phase 1: saturation, bot does nothing (turns still run and complete).
	bot.set(nopBot{})
	convs := setup(clients)
	stopProfile := func() {}
	if p := os.Getenv("PARLEY_BENCH_CPUPROFILE"); p != "" {
		stopProfile = startCPUProfile(t, p)
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		fails atomic.Int64
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(phase1)
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for n := 0; time.Now().Before(deadline); n++ {
				d, err := post(convs[i], "load "+strconv.Itoa(n))
				if err != nil {
					fails.Add(1)
					continue
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProfile()
	p50, p99 := percentiles(lats)
	t.Logf("phase 1 createMessage at saturation: %d ok, %d failed in %v: %.0f req/s, p50 %v, p99 %v",
		len(lats), fails.Load(), elapsed.Round(time.Millisecond), float64(len(lats))/elapsed.Seconds(), p50, p99)
	if fails.Load() > 0 {
		t.Errorf("%d requests failed", fails.Load())
	}
	// Let the dispatcher drain phase 1's turns before measuring replies.
	waitDrained(t, db, 15*time.Second)

	// Phase 2: fixed rate to the echo bot, replies timed on SSE.
	bot.set(testbots.Echo{})
	convs2 := setup(50)
	sent := sync.Map{} // text -> time.Time
	var rlats []time.Duration
	var rmu sync.Mutex
	for _, c := range convs2 {
		s := e.listen(c.key, c.id, -1)
		go func() {
			for f := range s.frames {
				if f.Sig == nil || f.Sig["isBot"] != true {
					continue
				}
				text, _ := f.Sig["payload"].(map[string]any)["text"].(string)
				key := strings.TrimSuffix(strings.TrimPrefix(text, `Hi! You said: "`), `"`)
				if v, ok := sent.LoadAndDelete(key); ok {
					rmu.Lock()
					rlats = append(rlats, time.Since(v.(time.Time)))
					rmu.Unlock()
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if p := os.Getenv("PARLEY_BENCH_CPUPROFILE2"); p != "" {
		stop := startCPUProfile(t, p)
		defer stop()
	}
	interval := time.Second / time.Duration(rate)
	total := int(phase2 / interval)
	var sendFails atomic.Int64
	sem := make(chan struct{}, 256)
	start = time.Now()
	for i := range total {
		if time.Since(start) > phase2 {
			total = i // the server fell behind: stop at the time bound
			break
		}
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		text := "r" + strconv.Itoa(i)
		c := convs2[i%len(convs2)]
		sem <- struct{}{}
		sent.Store(text, time.Now())
		go func() {
			defer func() { <-sem }()
			if _, err := post(c, text); err != nil {
				sendFails.Add(1)
			}
		}()
	}
	achieved := float64(total) / time.Since(start).Seconds()
	time.Sleep(2 * time.Second) // let the last replies arrive
	rmu.Lock()
	got := slices.Clone(rlats)
	rmu.Unlock()
	p50, p99 = percentiles(got)
	t.Logf("phase 2 reply latency at %d msg/s (achieved %.0f/s): %d of %d replies on SSE, %d send failures, p50 %v, p99 %v",
		rate, achieved, len(got), total, sendFails.Load(), p50, p99)
}

// switchBot lets the benchmark change the bot between phases.
type switchBot struct {
	mu  sync.RWMutex
	bot turns.Bot
}

func (b *switchBot) set(x turns.Bot) { b.mu.Lock(); b.bot = x; b.mu.Unlock() }

func (b *switchBot) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	b.mu.RLock()
	x := b.bot
	b.mu.RUnlock()
	return x.HandleTurn(ctx, in, out)
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	at := func(q float64) time.Duration {
		return d[min(len(d)-1, int(q*float64(len(d))))].Round(10 * time.Microsecond)
	}
	return at(0.50), at(0.99)
}

func waitDrained(t *testing.T, db store.DB, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		refs, err := db.Signals().PendingConversations(context.Background(), 1)
		if err == nil && len(refs) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Log("turns not drained")
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func startCPUProfile(t *testing.T, path string) func() {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
