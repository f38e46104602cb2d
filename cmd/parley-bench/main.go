// Command parley-bench measures Parley's chat pipeline over loopback, side
// by side with a bare net/http JSON handler it starts itself (and, when
// given, other parley executables), and prints the figures of issue 18's
// goals:
//
//	go run ./cmd/parley-bench [-engines sqlite,postgres] [-bin old=/path/to/parley]
//	    [-bin full=self,PARLEY_SYNC=full] [-env NAME=value] [-rounds 3] [-cpuprofile FILE]
//	    [-botkit bench/botkit]
//
// Every server is a child process on 127.0.0.1: the bare handler and this
// build's Parley are this program again (`parley-bench child ...`), so a
// CPU profile of the server alone can be taken (-cpuprofile). Each Parley
// runs a JavaScript echo bot; a createMessage answered 2xx is committed.
// Botkit's echo bot on its web adapter (bench/botkit, once `npm ci` ran
// there) is a target of the closed loop too: it answers each POST with the
// echo in the response and stores nothing.
//
//  1. Throughput: -conns clients in a closed loop for -duration, each on a
//     conversation of its own; Parley's rate counts only once every reply
//     of the bot arrived on the SSE streams ("drain": the backlog left
//     when the load stopped).
//  2. Reply latency: open loop at each of -rates messages/s for
//     -rate-duration over -convs conversations, from sending a message to
//     its reply on the SSE stream (p50/p99; a reply that never came counts
//     as slowest).
//  3. Overload: twice the sustainable rate measured in 1; shed requests
//     (429), p99 of the accepted ones, and how long the backlog takes to
//     clear once the load stops. Closed-loop clients wait Retry-After (1 s)
//     after a 429; open-loop senders do not retry.
//  4. Idle SSE listeners: the server's resident memory per listener
//     (-listeners streams on one conversation), and 5 messages fanned out
//     to all of them, one at a time (p50/p99 over every arrival).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

type options struct {
	engines      []string
	pgURL        string
	bins         []parleySpec
	conns        int
	duration     time.Duration
	rounds       int
	rates        []int
	rateDuration time.Duration
	convs        int
	listeners    int
	idle         time.Duration
	cpuprofile   string
	env          []string
	botkit       string // directory of Botkit's echo bot; "" leaves it out
	botkitNote   string // why the default Botkit target is left out
	bot          string // the echo bot: js, js-state or workflow (-bot)
	timeline     bool   // each open-loop rate's first second, slice by slice
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "parley-bench child:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "parley-bench:", err)
		os.Exit(1)
	}
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("parley-bench", flag.ContinueOnError)
	engines := fs.String("engines", "sqlite", "comma-separated engines: sqlite, postgres")
	fs.StringVar(&o.pgURL, "database-url", "postgres://127.0.0.1:5432/test?sslmode=disable", "PostgreSQL database to create the benchmark's databases from")
	self := fs.String("label", "parley", "name of this build's Parley in the tables; empty leaves it out")
	fs.Func("bin", "label=path[,NAME=value...]: another parley executable to run side by side, with environment variables of its own; path \"self\" is this build (repeatable)", func(v string) error {
		label, rest, ok := strings.Cut(v, "=")
		parts := strings.Split(rest, ",")
		if !ok || label == "" || parts[0] == "" {
			return fmt.Errorf("-bin wants label=path[,NAME=value...]")
		}
		s := parleySpec{label: label, bin: parts[0], env: parts[1:]}
		if s.bin == "self" {
			s.bin = ""
		}
		o.bins = append(o.bins, s)
		return nil
	})
	fs.Func("env", "NAME=value given to every Parley (repeatable), e.g. PARLEY_SYNC=full", func(v string) error {
		o.env = append(o.env, v)
		return nil
	})
	fs.IntVar(&o.conns, "conns", 32, "closed-loop clients")
	fs.DurationVar(&o.duration, "duration", 6*time.Second, "closed-loop run time")
	fs.IntVar(&o.rounds, "rounds", 1, "closed-loop rounds (targets alternate, Parley's in an order that rotates each round; medians are shown)")
	rates := fs.String("rates", "1000,2000", "open-loop rates in messages/s, then twice the sustained rate; empty skips the open loop")
	fs.DurationVar(&o.rateDuration, "rate-duration", 5*time.Second, "open-loop run time per rate")
	fs.IntVar(&o.convs, "convs", 100, "conversations of the open-loop runs")
	fs.BoolVar(&o.timeline, "timeline", false, "also print each open-loop rate's first second in 100 ms slices (accepted, refused, reply p50/p99 by send time): how a burst from idle is absorbed")
	fs.IntVar(&o.listeners, "listeners", 1000, "idle SSE listeners (0 skips)")
	fs.DurationVar(&o.idle, "idle", 10*time.Second, "how long the listeners stay idle before their memory is read (their CPU is measured over the last 80 % of it)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of this build's Parley server to FILE.ENGINE, and its allocations to FILE.ENGINE.allocs")
	bot := fs.String("bot", "js", "the echo bot every Parley runs: js (JavaScript), js-state (the same, counting each user's messages in state.user, as the runtime's documented example) or workflow (the echo as a bot JSON, published with publishFromBotJson)")
	botkit := fs.String("botkit", defaultBotkit, "Botkit's echo bot in `DIR` (bench/botkit once npm ci ran there), run side by side in the closed loop; empty leaves it out (the default is left out when it has no node_modules)")
	if _, err := parseFlags(fs, args); err != nil {
		return o, err
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "botkit" })
	var err error
	if o.botkit, o.botkitNote, err = botkitDir(*botkit, given); err != nil {
		return o, err
	}
	if _, ok := echoBots[*bot]; !ok {
		return o, fmt.Errorf("-bot: %q is none of js, js-state and workflow", *bot)
	}
	o.bot = *bot
	o.engines = strings.Split(*engines, ",")
	for _, e := range o.engines {
		if e != "sqlite" && e != "postgres" {
			return o, fmt.Errorf("unknown engine %q", e)
		}
	}
	for _, r := range strings.Split(*rates, ",") {
		if r == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(r, &n); err != nil || n <= 0 {
			return o, fmt.Errorf("bad rate %q", r)
		}
		o.rates = append(o.rates, n)
	}
	if *self != "" {
		o.bins = append([]parleySpec{{label: *self}}, o.bins...)
	}
	if len(o.bins) == 0 {
		return o, fmt.Errorf("nothing to measure")
	}
	return o, nil
}

func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// run measures every engine and returns the sustained rates (messages/s
// with their replies) by engine and target.
func run(o options) (map[string]map[string]float64, error) {
	dir, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("parley-bench: %s, GOMAXPROCS %d, load average %s\n", time.Now().UTC().Format(time.RFC3339), runtime.GOMAXPROCS(0), loadavg())
	fmt.Printf("closed loop: %d clients × %v × %d rounds; open loop: %v per rate over %d conversations\n\n",
		o.conns, o.duration, o.rounds, o.rateDuration, o.convs)
	if o.botkitNote != "" {
		fmt.Println(o.botkitNote)
		fmt.Println()
	}
	sustained := map[string]map[string]float64{} // engine → label → msg/s
	for _, engine := range o.engines {
		s, err := runEngine(o, engine, dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", engine, err)
		}
		sustained[engine] = s
	}
	if len(o.engines) == 2 {
		fmt.Println("## Goal 5: PostgreSQL / SQLite, sustained createMessage with replies")
		for _, b := range o.bins {
			fmt.Printf("%-12s %.0f / %.0f = %.2f×\n", b.label, sustained["postgres"][b.label], sustained["sqlite"][b.label],
				sustained["postgres"][b.label]/sustained["sqlite"][b.label])
		}
	}
	fmt.Printf("\nload average at the end: %s\n", loadavg())
	return sustained, nil
}

// parleyTarget is a started Parley with its echo bot and conversations.
type parleyTarget struct {
	*target
	chat  *chatAPI
	loop  []conv // one per closed-loop client
	open  []conv // the open-loop conversations
	loopR *replies
}

func runEngine(o options, engine, dir string) (map[string]float64, error) {
	fmt.Printf("# %s\n\n", engine)
	bare, err := startBare()
	if err != nil {
		return nil, err
	}
	defer bare.stop()
	var botkit *target
	if o.botkit != "" {
		if botkit, err = startBotkit(o.botkit); err != nil {
			return nil, err
		}
		defer botkit.stop()
	}
	var ps []*parleyTarget
	defer func() {
		for _, p := range ps {
			if p.loopR != nil {
				p.loopR.close()
			}
			p.stop()
		}
	}()
	env := slices.Clone(o.env)
	dbPID := 0
	if engine == "postgres" {
		dbPID = postmasterPID(o.pgURL)
		pool, err := pgPoolEnv(o.pgURL, len(o.bins))
		if err != nil {
			return nil, err
		}
		env = append(pool, env...) // -env may still set it
	}
	for _, b := range o.bins {
		prof := "-"
		if b.bin == "" && o.cpuprofile != "" && b.label == o.bins[0].label {
			prof = o.cpuprofile + "." + engine
		}
		t, err := startParley(b, engine, o.pgURL, dir, append(slices.Clone(env), b.env...), prof)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.label, err)
		}
		t.dbPID = dbPID
		p := &parleyTarget{target: t}
		ps = append(ps, p)
		if p.chat, err = newChatBot(t, o.bot); err != nil {
			return nil, err
		}
		if p.loop, err = p.chat.conversations(o.conns); err != nil {
			return nil, err
		}
		if p.open, err = p.chat.conversations(o.convs); err != nil {
			return nil, err
		}
		if p.loopR, err = listen(p.chat.base, p.loop); err != nil {
			return nil, err
		}
	}
	bareConvs := make([]conv, o.conns)
	for i := range bareConvs {
		bareConvs[i] = conv{id: fmt.Sprintf("conv_%d", i), key: "key_" + randomHex(8)}
	}

	// 4. Idle listeners, first: the servers have no garbage yet.
	if o.listeners > 0 {
		fmt.Printf("## Goal 4: %d idle SSE listeners on one conversation\n\n", o.listeners)
		fmt.Println("| target | RSS before | RSS with listeners | RSS per listener | Go heap+stacks per listener | of which stacks | goroutines per listener | idle CPU per 1,000 listeners (server, clients) | fan-out p50 | fan-out p99 | CPU per fan-out (server, clients) | arrivals | listens/s |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, p := range ps {
			r, err := idleListeners(p, o.listeners, o.idle)
			if err != nil {
				return nil, err
			}
			n := float64(o.listeners)
			fmt.Printf("| %s | %d KB | %d KB | %.1f KB | %.1f KB | %.1f KB | %.2f | %s, %s | %s | %s | %s, %s | %d | %.0f |\n", p.name, r.before, r.after,
				float64(r.after-r.before)/n, float64(r.goAfter.heapStack-r.goBefore.heapStack)/1024/n,
				float64(r.goAfter.stacks-r.goBefore.stacks)/1024/n,
				float64(r.goAfter.goroutines-r.goBefore.goroutines)/n, r.idleCPU.server.perSecond(n), r.idleCPU.clients.perSecond(n),
				ms(pct(r.fanout, r.missing, 0.5)), ms(pct(r.fanout, r.missing, 0.99)),
				ms(r.fanoutCPU.server/fanouts), ms(r.fanoutCPU.clients/fanouts), len(r.fanout), n/r.opening.Seconds())
		}
	}
	// 1. Throughput, targets alternating within each round, Parley's in an
	// order that rotates from round to round.
	fmt.Printf("\n## Goal 1: createMessage, %d clients, closed loop, %s echo bot answering\n\n", o.conns, echoBots[o.bot].name)
	results := map[string][]closedResult{}
	for round := range o.rounds {
		results["bare"] = append(results["bare"], closedLoop(bare, o.conns, sendChat(bare.url, bareConvs, "b"), o.duration, nil))
		if botkit != nil {
			time.Sleep(500 * time.Millisecond)
			results["botkit"] = append(results["botkit"], closedLoop(botkit, o.conns, func(i, n int) int { return sendBotkit(botkit.url, i, n) }, o.duration, nil))
		}
		// Parley's targets take turns going first: side by side runs of one
		// build twice showed the one run right after the other ahead by 7-9 %
		// in 14 pairs of 16, or behind, with other pauses between runs.
		for i := range ps {
			p := ps[(i+round)%len(ps)]
			time.Sleep(500 * time.Millisecond) // idle between runs
			results[p.name] = append(results[p.name], closedLoop(p.target, o.conns, sendChat(p.chat.base, p.loop, fmt.Sprintf("c%d-", round)), o.duration, p.loopR))
		}
	}
	median := func(rs []closedResult, f func(closedResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	sustainedOf := func(r closedResult) float64 {
		if r.drain < 0 {
			return 0
		}
		return float64(r.ok) / (r.elapsed + r.drain).Seconds()
	}
	bareRate := median(results["bare"], closedResult.rate)
	fmt.Println("| target | 2xx/s | sustained/s (replies included) | × bare | server CPU µs/msg | PostgreSQL CPU µs/msg | load CPU µs/msg | drain after load | p50 | p99 | 429 | errors | folded | sustained/s per round | CPU stolen per round |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	sustained := map[string]float64{}
	names := []string{"bare"}
	if botkit != nil {
		names = append(names, "botkit")
	}
	for _, name := range append(names, labels(ps)...) {
		rs := results[name]
		mid := rs[len(rs)/2]
		rate, sus := median(rs, closedResult.rate), median(rs, sustainedOf)
		sustained[name] = sus
		drain := "–" // the bare handler and Botkit answer in the response
		if name != "bare" && name != "botkit" {
			drain = ms(mid.drain)
		} else {
			sus = rate
		}
		var each, stolen []string
		for _, r := range rs {
			each = append(each, fmt.Sprintf("%.0f", sustainedOf(r)))
			stolen = append(stolen, share(r.stolen))
		}
		db := "–" // SQLite's work is the server's; the bare handler and Botkit store nothing
		if v := median(rs, closedResult.dbCPUPerMsg); v > 0 {
			db = fmt.Sprintf("%.0f", v)
		}
		fmt.Printf("| %s | %.0f | %.0f | %.3f× | %.0f | %s | %.0f | %s | %s | %s | %d | %d | %s | %s | %s |\n", name, rate, sus, sus/bareRate,
			median(rs, closedResult.cpuPerMsg), db, median(rs, closedResult.loadCPUPerMsg), drain, ms(pct(mid.lat, 0, 0.5)), ms(pct(mid.lat, 0, 0.99)), mid.shed, mid.failed,
			mid.folded, strings.Join(each, " "), strings.Join(stolen, " "))
	}
	for _, p := range ps[1:] {
		fmt.Printf("\n%s / %s: sustained %.2f×, CPU per message %.2f×", ps[0].name, p.name, sustained[ps[0].name]/sustained[p.name],
			median(results[ps[0].name], closedResult.cpuPerMsg)/median(results[p.name], closedResult.cpuPerMsg))
		if db := median(results[p.name], closedResult.dbCPUPerMsg); db > 0 {
			fmt.Printf(", PostgreSQL CPU per message %.2f×", median(results[ps[0].name], closedResult.dbCPUPerMsg)/db)
		}
		if o.rounds > 1 {
			fmt.Printf("; sustained round by round %s", pairedCell(pairedRatios(results[ps[0].name], results[p.name], sustainedOf, sustainedOf)))
		}
	}
	if botkit != nil {
		bk := results["botkit"]
		for _, p := range ps {
			fmt.Printf("\n%s / botkit: sustained %.2f×, 2xx %.2f×, CPU per message %.2f×", p.name, sustained[p.name]/sustained["botkit"],
				median(results[p.name], closedResult.rate)/median(bk, closedResult.rate),
				median(results[p.name], closedResult.cpuPerMsg)/median(bk, closedResult.cpuPerMsg))
			if o.rounds > 1 {
				fmt.Printf("; sustained round by round %s", pairedCell(pairedRatios(results[p.name], bk, sustainedOf, closedResult.rate)))
			}
		}
		fmt.Printf("\n\nbotkit: %s, one process; its echo comes back in the HTTP response and it stores nothing"+
			" (conversation state in memory), while every Parley 2xx is a committed message whose reply is committed too.", botkitVersions(o.botkit))
	}
	fmt.Println()

	// 2. Reply latency at fixed rates, 3. overload at twice the sustainable rate.
	if len(o.rates) == 0 {
		fmt.Println()
		return sustained, nil
	}
	fmt.Printf("\n## Goals 2 and 3: user message → bot reply on SSE, open loop over %d conversations\n\n", o.convs)
	fmt.Println("| target | rate/s | sent | 2xx | 429 | reply p50 | reply p99 | p99 from the 2nd second | no reply | backlog cleared after | server CPU µs/msg | PostgreSQL CPU µs/msg | PostgreSQL checkpoints |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var stages, steps []string
	var pg pgStats
	if engine == "postgres" {
		pg.url = o.pgURL
	}
	checkpointed := true
	for _, p := range ps {
		if pg.url != "" && !pg.checkpoint() {
			checkpointed = false
		}
		rep, err := listen(p.chat.base, p.open)
		if err != nil {
			return nil, err
		}
		rates := slices.Clone(o.rates)
		if s := sustained[p.name]; s > 0 {
			rates = append(rates, int(2*s))
		}
		for i, rate := range rates {
			before, cp0 := scrape(p.url), pg.checkpoints()
			cpu0, db0 := cpuTime(p.pid()), dbCPUTime(p.dbPID)
			r := openLoop(p.chat.base, p.open, rep, rate, o.rateDuration, fmt.Sprintf("o%d-", i), 15*time.Second)
			// The CPU of each accepted message, its reply's wait included:
			// what a rate costs below the closed loop's saturation, where
			// a message's turn finds its conversation idle.
			cpu, db := perMsg(cpuTime(p.pid())-cpu0, r.ok), "–"
			if p.dbPID != 0 {
				db = perMsg(dbCPUTime(p.dbPID)-db0, r.ok)
			}
			tag := ""
			if i == len(o.rates) {
				tag = " (2× sustained)"
			}
			warm := "–" // a run of a second or less
			if len(r.warmLat)+r.missing > 0 {
				warm = ms(pct(r.warmLat, r.missing, 0.99))
			}
			fmt.Printf("| %s | %d%s | %d | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", p.name, rate, tag, r.sent, r.ok, shedCell(r.shed, r.coldShed),
				ms(pct(r.replyLat, r.missing, 0.5)), ms(pct(r.replyLat, r.missing, 0.99)), warm, r.missing, ms(r.drain),
				cpu, db, checkpointsCell(cp0, pg.checkpoints()))
			after := scrape(p.url)
			cells := append(stageCells(histsOf(before, stageMetrics), histsOf(after, stageMetrics), r.ok),
				foldedCell(countsOf(before, messagesMetric), countsOf(after, messagesMetric)))
			cells = slices.Insert(cells, 1, transactionsCell(before, after, r.ok))
			stages = append(stages, stagesRow(p.name, rate, tag, cells))
			if o.timeline {
				steps = append(steps, timelineRows(p.name, rate, tag, r.steps)...)
			}
			time.Sleep(time.Second)
		}
		rep.close()
	}
	if pg.url != "" {
		if checkpointed {
			fmt.Println("\nPostgreSQL checkpointed (CHECKPOINT) before each target's runs: a time-driven checkpoint then comes a checkpoint_timeout later.")
		} else {
			fmt.Println("\nPostgreSQL could not be checkpointed before each target's runs (CHECKPOINT needs a superuser or pg_checkpoint): see the checkpoints column.")
		}
	}
	// Where the replies' time went, by the servers' own histograms
	// (quantiles within their buckets): each write's wait for its commit
	// (a user's message, then the turn's completion with the reply), a
	// conversation's wait for a turn worker, the bot's turn.
	fmt.Println("\nWhere the time went, from each build's /metrics during each rate (quantiles interpolated within the histograms' buckets):")
	fmt.Println()
	fmt.Println(stagesHeader())
	for _, row := range stages {
		fmt.Println(row)
	}
	if o.timeline {
		fmt.Println("\nEach rate's first second, by when the messages were sent (-timeline):")
		fmt.Println()
		fmt.Println("| target | rate/s | sent at | 2xx | 429 | reply p50 | reply p99 |")
		fmt.Println("|---|---|---|---|---|---|---|")
		for _, row := range steps {
			fmt.Println(row)
		}
	}

	fmt.Println()
	return sustained, nil
}

// timelineRows are the -timeline table's rows of one rate.
func timelineRows(name string, rate int, tag string, steps []timelineSlice) []string {
	rows := make([]string, len(steps))
	for i, st := range steps {
		from := time.Duration(i) * timelineStep
		p50, p99 := "–", "–"
		if st.ok > 0 {
			p50, p99 = ms(pct(st.lat, st.ok-len(st.lat), 0.5)), ms(pct(st.lat, st.ok-len(st.lat), 0.99))
		}
		rows[i] = fmt.Sprintf("| %s | %d%s | %d–%d ms | %d | %d | %s | %s |", name, rate, tag,
			from.Milliseconds(), (from + timelineStep).Milliseconds(), st.ok, st.shed, p50, p99)
	}
	return rows
}

func labels(ps []*parleyTarget) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return out
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// perMsg is a CPU time per message in µs ("–" without messages).
func perMsg(cpu time.Duration, msgs int) string {
	if msgs == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(cpu.Microseconds())/float64(msgs))
}
