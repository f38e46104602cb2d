package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestMain lets the test binary be its own child servers, as the command
// is (`parley-bench child ...`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchRuns runs every phase briefly against this build on SQLite:
// the bot answers (a sustained rate above zero means every accepted
// message got its echo on the SSE stream).
func TestBenchRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	got, out := runBench(t, []string{"-duration", "1s", "-conns", "2", "-convs", "4", "-rates", "20",
		"-rate-duration", "2s", "-listeners", "5", "-idle", "1s"})
	if got["sqlite"]["parley"] <= 0 || got["sqlite"]["bare"] <= 0 {
		t.Fatalf("sustained rates = %v", got)
	}
	// Goal 4's table: every listener got every fanned-out message.
	if a := goal4Column(out, "arrivals"); a["parley"] != strconv.Itoa(5*fanouts) {
		t.Errorf("fan-out arrivals by target = %v, want parley: %d (5 listeners × %d messages)", a, 5*fanouts, fanouts)
	}
	// The idle listeners' CPU, the server's and the clients'.
	idle := goal4Column(out, "idle CPU per 1,000 listeners (server, clients)")["parley"]
	var server, clients float64
	if _, err := fmt.Sscanf(idle, "%f ms/s, %f ms/s", &server, &clients); err != nil || server < 0 || clients < 0 {
		t.Errorf("idle CPU = %q, want two figures in ms/s", idle)
	}
	perFanout := goal4Column(out, "CPU per fan-out (server, clients)")["parley"]
	if _, err := fmt.Sscanf(perFanout, "%f ms, %f ms", &server, &clients); err != nil || server < 0 || clients < 0 {
		t.Errorf("CPU per fan-out = %q, want two figures in ms", perFanout)
	}
	// Goals 2 and 3: the replies' p99 without the first second too (its
	// conversations' first messages).
	if p := column(out, "## Goals 2 and 3", "p99 from the 2nd second")["parley"]; !strings.HasSuffix(p, " ms") {
		t.Errorf("p99 from the 2nd second = %q, want a figure", p)
	}
	// The stages table, from this build's metrics: one write per message
	// when the bot's answer is committed with it (a fold, which waits for
	// no worker: dashes there when every turn was folded), two when not;
	// at most as many transactions as writes (writes share batches).
	_, stages, _ := strings.Cut(out, stagesHeader())
	row, _, _ := strings.Cut(strings.TrimSpace(stages), "\n")
	cells := strings.Split(strings.Trim(row, "| "), " | ")
	if len(cells) != 11 || cells[0] != "parley" || slices.Contains(cells[:6], "–") || slices.Contains(cells[8:], "–") {
		t.Fatalf("stages row = %q", row)
	}
	writes, err := strconv.ParseFloat(cells[2], 64)
	if err != nil || writes < 1 || writes > 2 {
		t.Errorf("writes per message = %q, want 1 to 2", cells[2])
	}
	if n, err := strconv.ParseFloat(cells[3], 64); err != nil || n <= 0 || n > writes {
		t.Errorf("transactions per message = %q, want above 0 and at most the writes (%s)", cells[3], cells[2])
	}
	// How the messages committed, in the stages table and goal 1's: a
	// share folded, from this build's metrics.
	if !strings.HasSuffix(cells[10], "%") && !strings.Contains(cells[10], "% (") {
		t.Errorf("folded = %q, want a share", cells[10])
	}
	if f := goal1Column(out, "folded"); !strings.Contains(f["parley"], "%") || f["bare"] != "–" {
		t.Errorf("goal 1's folded column = %v, want a share for parley, a dash for the bare handler", f)
	}
	// The CPU time stolen from the machine during each run, where Linux
	// tells it.
	if _, err := os.Stat("/proc/stat"); err == nil {
		for target, v := range goal1Column(out, "CPU stolen per round") {
			if n, err := strconv.Atoi(strings.TrimSuffix(v, " %")); err != nil || n < 0 || n > 100 {
				t.Errorf("CPU stolen during %s's run = %q, want a percentage", target, v)
			}
		}
	}
}

func TestParseMachineTicks(t *testing.T) {
	for _, c := range []struct {
		line string
		want machineTicks
	}{
		{"cpu  120598 0 18732 105935 2795 0 3792 8232 0 0", machineTicks{total: 260084, steal: 8232}},
		{"cpu  100 0 50 850 0 0 0", machineTicks{total: 1000}}, // no steal field (an old kernel)
		{"cpu0 100 0 50 850 0 0 0 7 0 0", machineTicks{}},      // not the machine's line
		{"", machineTicks{}},
	} {
		if got := parseMachineTicks(c.line); got != c.want {
			t.Errorf("parseMachineTicks(%q) = %+v, want %+v", c.line, got, c.want)
		}
	}
}

// goal4Column reads a column of goal 4's table by target.
func goal4Column(out, name string) map[string]string { return column(out, "## Goal 4:", name) }

// goal1Column reads a column of goal 1's table by target.
func goal1Column(out, name string) map[string]string { return column(out, "## Goal 1:", name) }

// column reads a column of the table under heading by target.
func column(out, heading, name string) map[string]string {
	got := map[string]string{}
	_, table, _ := strings.Cut(out, heading)
	table, _, _ = strings.Cut(table, "\n\n## ")
	col := -1
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if cells[0] == "target" {
			col = slices.Index(cells, name)
			continue
		}
		if col >= 0 && len(cells) > col {
			got[cells[0]] = cells[col]
		}
	}
	return got
}

// TestBenchBotkit runs the closed loop briefly with Botkit's echo bot
// side by side, when Node.js and bench/botkit's node_modules are here (cd
// bench/botkit && npm ci): Botkit echoed, and the Parley / Botkit ratios
// are printed.
func TestBenchBotkit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	dir := filepath.Join("..", "..", defaultBotkit)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skipf("no %s/node_modules (cd bench/botkit && npm ci)", dir)
	}
	got, out := runBench(t, []string{"-botkit", dir, "-duration", "1s", "-conns", "2", "-rates", "", "-listeners", "0"})
	if got["sqlite"]["botkit"] <= 0 || got["sqlite"]["parley"] <= 0 {
		t.Fatalf("sustained rates = %v", got)
	}
	for _, want := range []string{"\n| botkit | ", "\nparley / botkit: sustained ", "stores nothing"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// captureStdout returns what f printed on os.Stdout (and prints it too).
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b strings.Builder
		_, _ = io.Copy(io.MultiWriter(&b, saved), r)
		done <- b.String()
	}()
	defer func() { os.Stdout = saved }()
	f()
	w.Close()
	return <-done
}

// TestSendBotkit counts a web adapter's answer as a reply only when it is
// 2xx and holds the echo of the message sent.
func TestSendBotkit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   int
	}{
		{"echo", 200, `[{"type":"message","text":"hi 3-7"}]`, 200},
		{"echo among others", 200, `[{"type":"typing"},{"type":"message","text":"hi 3-7"}]`, 200},
		{"no reply", 200, ``, -1},
		{"another text", 200, `[{"type":"message","text":"hi 3-70"}]`, -1},
		{"not JSON", 200, `hi 3-7`, -1},
		{"error", 500, `[{"type":"message","text":"hi 3-7"}]`, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct{ Type, Text, User string }
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/messages" || r.Method != "POST" {
					http.NotFound(w, r)
					return
				}
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &got)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			if st := sendBotkit(srv.URL, 3, 7); st != tc.want {
				t.Errorf("status %d, want %d", st, tc.want)
			}
			if got.Type != "message" || got.Text != "hi 3-7" || got.User != "u3" {
				t.Errorf("sent %+v", got)
			}
		})
	}
}

// TestBotkitFlag: -botkit defaults to bench/botkit when its node_modules
// is there, is left out with a note when not, is an error when a
// directory given cannot run, and ” leaves it out.
func TestBotkitFlag(t *testing.T) {
	withModules := t.TempDir()
	if err := os.Mkdir(filepath.Join(withModules, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, noNode := exec.LookPath("node")
	for _, tc := range []struct {
		name      string
		args      []string
		dir, note string // note: a substring
		bad       bool
	}{
		// The tests run in cmd/parley-bench: no bench/botkit here.
		{name: "default missing", args: nil, note: "botkit: left out, no bench/botkit/node_modules (cd bench/botkit && npm ci)"},
		{name: "empty", args: []string{"-botkit", ""}},
		{name: "given", args: []string{"-botkit", withModules}, dir: withModules, bad: noNode != nil},
		{name: "given without node_modules", args: []string{"-botkit", t.TempDir()}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args)
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted: %+v", o)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.botkit != tc.dir || !strings.Contains(o.botkitNote, tc.note) || (tc.note == "") != (o.botkitNote == "") {
				t.Errorf("botkit %q, note %q; want %q, %q", o.botkit, o.botkitNote, tc.dir, tc.note)
			}
		})
	}
	t.Run("default present", func(t *testing.T) {
		if noNode != nil {
			t.Skip("no node on PATH")
		}
		t.Chdir(filepath.Dir(withModules))
		if err := os.MkdirAll(filepath.Join("bench", "botkit", "node_modules"), 0o755); err != nil {
			t.Fatal(err)
		}
		o, err := parse(nil)
		if err != nil || o.botkit != defaultBotkit || o.botkitNote != "" {
			t.Errorf("botkit %q, note %q, %v", o.botkit, o.botkitNote, err)
		}
	})
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bins int
		bad  bool
	}{
		{args: nil, bins: 1},
		{args: []string{"-bin", "old=/x/parley", "-bin", "full=self,PARLEY_SYNC=full"}, bins: 3},
		{args: []string{"-label", "", "-bin", "old=/x/parley"}, bins: 1},
		{args: []string{"-label", ""}, bad: true},
		{args: []string{"-bin", "nopath"}, bad: true},
		{args: []string{"-engines", "mysql"}, bad: true},
		{args: []string{"-rates", "fast"}, bad: true},
		{args: []string{"-bot", "workflow"}, bins: 1},
		{args: []string{"-bot", "js-state"}, bins: 1},
		{args: []string{"-bot", "python"}, bad: true},
	} {
		o, err := parse(tc.args)
		if tc.bad {
			if err == nil {
				t.Errorf("%v: accepted", tc.args)
			}
			continue
		}
		if err != nil || len(o.bins) != tc.bins {
			t.Errorf("%v: %d targets, %v; want %d", tc.args, len(o.bins), err, tc.bins)
		}
	}
}

// TestBenchRunsOtherBots: with -bot workflow, every Parley runs the echo
// as a workflow bot; with -bot js-state, as JavaScript that also counts
// the user's messages in the user's state. The closed loop waits for
// their answers (a sustained rate counts the replies on the streams),
// and their turns fold.
func TestBenchRunsOtherBots(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	for _, tc := range []struct{ bot, title string }{
		{"workflow", "workflow echo bot answering"},
		{"js-state", "JavaScript (user state) echo bot answering"},
	} {
		t.Run(tc.bot, func(t *testing.T) {
			// A long fold bound: on a loaded machine (the whole suite,
			// -race) a turn past 5 ms commits its message first.
			got, out := runBench(t, []string{"-bot", tc.bot, "-duration", "1s", "-conns", "2", "-rates", "", "-listeners", "0", "-botkit", "",
				"-env", "PARLEY_FOLD_WITHIN=10s"})
			if got["sqlite"]["parley"] <= 0 {
				t.Fatalf("sustained rates = %v", got)
			}
			if !strings.Contains(out, tc.title) {
				t.Errorf("goal 1's title does not name the bot (%q):\n%s", tc.title, out)
			}
			f := goal1Column(out, "folded")["parley"]
			share, _, _ := strings.Cut(f, " %")
			if n, err := strconv.Atoi(share); err != nil || n < 50 {
				t.Errorf("folded = %q, want most messages (the bot's turn folds)", f)
			}
		})
	}
}

// runBench runs parley-bench with args and returns the sustained rates by
// engine and target, and what it printed.
func runBench(t *testing.T, args []string) (map[string]map[string]float64, string) {
	t.Helper()
	o, err := parse(args)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]float64
	out := captureStdout(t, func() { got, err = run(o) })
	if err != nil {
		t.Fatal(err)
	}
	return got, out
}

// TestPGPoolEnv checks the pool cap given to the Parley servers of a
// PostgreSQL run: none while their default pools fit in max_connections,
// an even share of it when they do not, an error when a share is too
// small to run a server.
func TestPGPoolEnv(t *testing.T) {
	url := testdb.PostgresURL(t) // skips or fails as testdb does when PostgreSQL is unreachable
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var maxConns int
	err = conn.QueryRow(t.Context(), "SELECT current_setting('max_connections')::int").Scan(&maxConns)
	conn.Close(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fits := (maxConns - 10) / postgres.DefaultMaxConns
	for _, tc := range []struct {
		servers int
		want    string // "" no cap; "error"
	}{
		{1, ""},
		{fits, ""},
		{fits + 1, "PARLEY_DB_MAX_CONNECTIONS=" + strconv.Itoa((maxConns-10)/(fits+1))},
		{maxConns, "error"},
	} {
		if tc.servers < 1 {
			continue
		}
		got, err := pgPoolEnv(url, tc.servers)
		switch {
		case tc.want == "error":
			if err == nil {
				t.Errorf("%d servers: %v, want an error", tc.servers, got)
			}
		case err != nil:
			t.Errorf("%d servers: %v", tc.servers, err)
		case strings.Join(got, " ") != tc.want:
			t.Errorf("%d servers: %q, want %q", tc.servers, got, tc.want)
		}
	}
}

// TestDBCPUTime: the PostgreSQL server's CPU time, read from /proc when it
// runs on this machine, grows by what a query of ours costs it.
func TestDBCPUTime(t *testing.T) {
	url := testdb.PostgresURL(t)
	pm := postmasterPID(url)
	if pm == 0 {
		t.Skip("the PostgreSQL server does not run on this machine (or /proc does not show it)")
	}
	if got := dbCPUTime(0); got != 0 {
		t.Fatalf("no server: %v", got)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	before := dbCPUTime(pm)
	var n int64
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM generate_series(1, 5000000) g WHERE g % 7 = 0").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if spent := dbCPUTime(pm) - before; spent < 100*time.Millisecond {
		t.Fatalf("a query of %d rows cost the server %v of CPU", n, spent)
	}
}

// TestPGStats: a CHECKPOINT is counted among the server's checkpoints;
// without PostgreSQL nothing is read or run.
func TestPGStats(t *testing.T) {
	var none pgStats
	if none.checkpoint() || none.checkpoints() != -1 {
		t.Fatal("pgStats without a server read or ran something")
	}
	for _, c := range []struct {
		before, after int64
		want          string
	}{{3, 5, "2"}, {7, 7, "0"}, {-1, 4, "–"}, {4, -1, "–"}} {
		if got := checkpointsCell(c.before, c.after); got != c.want {
			t.Errorf("checkpointsCell(%d, %d) = %q, want %q", c.before, c.after, got, c.want)
		}
	}
	pg := pgStats{url: testdb.PostgresURL(t)}
	before := pg.checkpoints()
	if before < 0 {
		t.Fatal("could not read pg_stat_bgwriter")
	}
	if !pg.checkpoint() {
		t.Skip("CHECKPOINT refused: the test's role is neither a superuser nor pg_checkpoint")
	}
	if after := pg.checkpoints(); after <= before {
		t.Fatalf("checkpoints %d before a CHECKPOINT, %d after", before, after)
	}
}

// TestOpenLoopColdShed: the open loop tells the 429s of messages sent in
// its first second (the conversations' cold start) from the others, and
// the table's cell shows both.
func TestOpenLoopColdShed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	// 20/s for 2 s, every one refused: 20 sent in the first second (the
	// last of them at 950 ms; a stall of the machine may push one past it).
	r := openLoop(srv.URL, []conv{{id: "c", key: "k"}}, &replies{}, 20, 2*time.Second, "t-", time.Second)
	if r.sent != 40 || r.shed != 40 || r.ok != 0 {
		t.Fatalf("sent %d, refused %d, accepted %d; want 40, 40, 0", r.sent, r.shed, r.ok)
	}
	if r.coldShed < 18 || r.coldShed > 20 {
		t.Errorf("refused in the first second = %d, want 20", r.coldShed)
	}

	for _, c := range []struct {
		shed, cold int
		want       string
	}{
		{0, 0, "0"},
		{134, 126, "134 (126 in the 1st s)"},
		{8, 0, "8 (0 in the 1st s)"},
	} {
		if got := shedCell(c.shed, c.cold); got != c.want {
			t.Errorf("shedCell(%d, %d) = %q, want %q", c.shed, c.cold, got, c.want)
		}
	}
}

// TestTimeline: -timeline slices the run's first second by send time;
// each slice counts its 2xx and 429s, and its rows show the replies'
// quantiles, a missing reply counted as the slowest.
func TestTimeline(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	msd := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	sent := []time.Time{at(0), at(50), at(99), at(100), at(150), at(250), at(1000)}
	status := []int{200, 429, 200, 200, 200, 429, 200}
	lat := []time.Duration{msd(40), -1, msd(10), msd(3), -1, -1, msd(1)}
	steps := timeline(start, sent, status, lat, time.Second)
	tests := []struct {
		slice, ok, shed int
		lat             []time.Duration
	}{
		{0, 2, 1, []time.Duration{msd(40), msd(10)}},
		{1, 2, 0, []time.Duration{msd(3)}}, // the one at 150 ms got no reply
		{2, 0, 1, nil},
		{9, 0, 0, nil}, // the message at 1,000 ms is past the first second
	}
	if len(steps) != 10 {
		t.Fatalf("%d slices, want 10", len(steps))
	}
	for _, tt := range tests {
		got := steps[tt.slice]
		if got.ok != tt.ok || got.shed != tt.shed || !slices.Equal(got.lat, tt.lat) {
			t.Errorf("slice %d: %d accepted, %d refused, latencies %v; want %d, %d, %v", tt.slice, got.ok, got.shed, got.lat, tt.ok, tt.shed, tt.lat)
		}
	}
	rows := timelineRows("new", 1000, "", steps)
	for i, want := range map[int]string{
		0: "| new | 1000 | 0–100 ms | 2 | 1 | 40.0 ms | 40.0 ms |",
		1: "| new | 1000 | 100–200 ms | 2 | 0 | ∞ | ∞ |", // the missing reply is the slowest
		2: "| new | 1000 | 200–300 ms | 0 | 1 | – | – |",
	} {
		if rows[i] != want {
			t.Errorf("row %d = %q, want %q", i, rows[i], want)
		}
	}
}
