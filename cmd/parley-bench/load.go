package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// echoBot is the JavaScript echo bot every Parley target runs.
const echoBot = `bot.on.message('*', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId,
    payload: { type: 'text', text: 'echo ' + message.payload.text } })
})`

var client = &http.Client{
	Transport: &http.Transport{MaxIdleConns: 20000, MaxIdleConnsPerHost: 20000, MaxConnsPerHost: 0},
	Timeout:   60 * time.Second,
}

// call sends a JSON request and decodes a JSON answer into out (when not
// nil); a status other than 2xx is an error.
func call(method, url string, headers map[string]string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// stateEchoBot is echoBot counting each user's messages in the user's
// state (-bot js-state), as the runtime's documentation shows: every turn
// also writes a state outside its conversation.
const stateEchoBot = `bot.on.message('*', async ({ message, client, state }) => {
  state.user.count = (state.user.count || 0) + 1
  await client.createMessage({ conversationId: message.conversationId,
    payload: { type: 'text', text: 'echo ' + message.payload.text } })
})`

// workflowEcho is echoBot as a workflow bot (-bot workflow): every
// message starts its workflow, which answers and ends.
const workflowEcho = `{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[
  {"type":"message","payload":"echo {{ event.preview }}"}]}}}}}`

// echoBots are the bots -bot names: a bot's code, or a workflow bot's
// JSON, and its name in the tables' titles.
var echoBots = map[string]struct{ code, botJSON, name string }{
	"js":       {code: echoBot, name: "JavaScript"},
	"js-state": {code: stateEchoBot, name: "JavaScript (user state)"},
	"workflow": {botJSON: workflowEcho, name: "workflow"},
}

// chatAPI is a Parley bot's Chat API with its echo bot.
type chatAPI struct{ base string }

// conv is a conversation and the key of the user who owns it.
type conv struct{ id, key string }

// newChatBot creates the echo bot named kind (echoBots) through the Admin
// API (a workflow bot's JSON published to it) and returns its Chat API.
func newChatBot(t *target, kind string) (*chatAPI, error) {
	bk := echoBots[kind]
	auth := map[string]string{"Authorization": "Bearer " + t.token}
	var ws struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	if err := call("GET", t.url+"/v1/admin/workspaces", auth, nil, &ws); err != nil {
		return nil, err
	}
	if len(ws.Workspaces) == 0 {
		return nil, fmt.Errorf("%s: no workspace", t.name)
	}
	auth["x-workspace-id"] = ws.Workspaces[0].ID
	var bot struct {
		Bot struct {
			ID           string `json:"id"`
			Integrations map[string]struct {
				WebhookID string `json:"webhookId"`
			} `json:"integrations"`
		} `json:"bot"`
	}
	create := map[string]any{"name": "bench"}
	if bk.code != "" {
		create["code"] = bk.code
	}
	if err := call("POST", t.url+"/v1/admin/bots", auth, create, &bot); err != nil {
		return nil, err
	}
	if bk.botJSON != "" {
		doc := map[string]any{"botJson": json.RawMessage(bk.botJSON)}
		if err := call("POST", t.url+"/v1/admin/bots/"+bot.Bot.ID+"/publish-from-bot-json", auth, doc, nil); err != nil {
			return nil, fmt.Errorf("%s: publishing the workflow echo bot: %w", t.name, err)
		}
	}
	return &chatAPI{base: t.url + "/chat/" + bot.Bot.Integrations["chat"].WebhookID}, nil
}

// conversations creates n users, each with one conversation.
func (c *chatAPI) conversations(n int) ([]conv, error) {
	out := make([]conv, n)
	for i := range out {
		var u struct{ Key string }
		if err := call("POST", c.base+"/users", nil, map[string]any{}, &u); err != nil {
			return nil, err
		}
		var cv struct{ Conversation struct{ ID string } }
		if err := call("POST", c.base+"/conversations", map[string]string{"x-user-key": u.Key}, map[string]any{}, &cv); err != nil {
			return nil, err
		}
		out[i] = conv{cv.Conversation.ID, u.Key}
	}
	return out, nil
}

// send posts one text message; it returns the status (0: no answer).
func send(base string, c conv, text string) int {
	body := `{"conversationId":"` + c.id + `","payload":{"type":"text","text":"` + text + `"}}`
	st, _, err := post(base+"/messages", []string{"x-user-key: " + c.key}, body, nil)
	if err != nil {
		return 0
	}
	return st
}

// replies listens to conversations' SSE streams and records when each
// bot reply ("echo <text>") arrives. The streams are read as a lean SSE
// client would (listenBody), on the load's side of the CPU budget.
type replies struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	count   atomic.Int64
	conns   []net.Conn
	wg      sync.WaitGroup
}

// listen opens one stream per conversation; it returns once all answered
// 200.
func listen(base string, convs []conv) (*replies, error) {
	r := &replies{arrived: map[string]time.Time{}}
	for _, c := range convs {
		conn, _, body, err := listenBody(base, c)
		if err != nil {
			r.close()
			return nil, err
		}
		r.conns = append(r.conns, conn)
		r.wg.Add(1)
		br := bufio.NewReader(body)
		go func() {
			defer r.wg.Done()
			partial := false // the rest of a line longer than the buffer: not a reply of ours
			for {
				line, err := br.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				skip := partial
				partial = err == bufio.ErrBufferFull
				if skip || partial {
					continue
				}
				data, ok := bytes.CutPrefix(line, []byte("data: "))
				if !ok || !bytes.Contains(data, []byte(`"echo `)) {
					continue
				}
				var f struct {
					Data struct {
						IsBot   bool `json:"isBot"`
						Payload struct{ Text string }
					} `json:"data"`
				}
				if json.Unmarshal(data, &f) != nil || !f.Data.IsBot {
					continue
				}
				now := time.Now()
				r.mu.Lock()
				r.arrived[strings.TrimPrefix(f.Data.Payload.Text, "echo ")] = now
				r.mu.Unlock()
				r.count.Add(1)
			}
		}()
	}
	return r, nil
}

func (r *replies) at(text string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.arrived[text]
	return t, ok
}

// waitFor waits until n replies arrived or the timeout passes; it returns
// when the last of them arrived.
func (r *replies) waitFor(n int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for r.count.Load() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

func (r *replies) close() {
	for _, c := range r.conns {
		c.Close()
	}
	r.wg.Wait()
}

// closedResult is a closed-loop run: conns clients, each sending its next
// message as soon as the previous one was answered.
type closedResult struct {
	ok, shed, failed int
	elapsed          time.Duration
	lat              []time.Duration
	drain            time.Duration // after the load stopped, until every reply arrived (-1: not within the limit)
	cpu              time.Duration // the server's CPU time over the run and the drain
	dbCPU            time.Duration // the PostgreSQL server's, when measured
	loadCPU          time.Duration // this process's: the load and the reading of the replies
	stolen           float64       // the machine's CPU time stolen by the hypervisor meanwhile, a share (-1: unknown)
	// folded is the share of the messages that folded, and why the others
	// did not (foldedCell; a dash for a target without the metric).
	folded string
}

// cpuPerMsg is the server's CPU time per accepted message, in µs: less
// sensitive to other tenants of the machine than the rates.
func (r closedResult) cpuPerMsg() float64 {
	if r.ok == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.ok)
}

// loadCPUPerMsg is the load's CPU time per accepted message, in µs: what
// the server under test could not use on a machine that runs both.
func (r closedResult) loadCPUPerMsg() float64 {
	if r.ok == 0 {
		return 0
	}
	return float64(r.loadCPU.Microseconds()) / float64(r.ok)
}

// dbCPUPerMsg is the PostgreSQL server's CPU time per accepted message, in
// µs (0: not measured).
func (r closedResult) dbCPUPerMsg() float64 {
	if r.ok == 0 {
		return 0
	}
	return float64(r.dbCPU.Microseconds()) / float64(r.ok)
}

func (r closedResult) rate() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// sendTo is a closed-loop client's request: client's n-th message, whose
// HTTP status it returns (0: no answer; -1: 2xx without the bot's reply).
type sendTo func(client, n int) int

// sendChat sends createMessage to a Chat API (or the bare handler), client
// i on convs[i].
func sendChat(base string, convs []conv, prefix string) sendTo {
	return func(i, n int) int {
		return send(base, convs[i], prefix+strconv.Itoa(i)+"-"+strconv.Itoa(n))
	}
}

// closedLoop runs clients for d against t, each sending its next message
// with do as soon as the previous one was answered; with rep set it then
// waits for the bot's replies to every accepted message.
func closedLoop(t *target, clients int, do sendTo, d time.Duration, rep *replies) closedResult {
	var (
		mu  sync.Mutex
		res closedResult
		wg  sync.WaitGroup
	)
	var before int64
	if rep != nil {
		before = rep.count.Load()
	}
	cpu0, db0, load0, machine0 := cpuTime(t.pid()), dbCPUTime(t.dbPID), cpuTime(os.Getpid()), readMachineTicks()
	stored0 := countsOf(scrape(t.url), messagesMetric)
	start := time.Now()
	deadline := start.Add(d)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			ok, shed, failed := 0, 0, 0
			for n := 0; time.Now().Before(deadline); n++ {
				t0 := time.Now()
				switch st := do(i, n); {
				case st/100 == 2:
					ok++
					lat = append(lat, time.Since(t0))
				case st == http.StatusTooManyRequests:
					shed++
					time.Sleep(time.Second) // Parley's Retry-After
				default:
					failed++
				}
			}
			mu.Lock()
			res.ok, res.shed, res.failed = res.ok+ok, res.shed+shed, res.failed+failed
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if rep != nil {
		stopped := time.Now()
		res.drain = -1
		if rep.waitFor(before+int64(res.ok), 60*time.Second) {
			res.drain = time.Since(stopped)
		}
	}
	res.cpu = cpuTime(t.pid()) - cpu0
	res.dbCPU = dbCPUTime(t.dbPID) - db0
	res.loadCPU = cpuTime(os.Getpid()) - load0
	res.stolen = machine0.stolenSince()
	res.folded = foldedCell(stored0, countsOf(scrape(t.url), messagesMetric))
	return res
}

// openResult is an open-loop run at a fixed rate, replies timed on SSE.
type openResult struct {
	rate                 int
	sent, ok, shed, fail int
	// coldShed are the 429s of messages sent in the run's first second,
	// where each conversation gets its first message (shedCell).
	coldShed int
	achieved float64
	replyLat []time.Duration // of accepted messages whose reply arrived
	// warmLat are replyLat's sent from the run's second second on: the
	// first has every conversation's first message, which on PostgreSQL
	// takes the conversation's lease (a cold start, not the steady state).
	warmLat []time.Duration
	missing int           // accepted messages without a reply within the grace period
	drain   time.Duration // after the last send, until the last reply arrived
	// steps are the run's first second in timelineStep slices, by
	// when each message was sent (-timeline): how a burst from idle
	// is absorbed.
	steps []timelineSlice
}

// timelineStep is the width of a -timeline slice.
const timelineStep = 100 * time.Millisecond

// timelineSlice is what happened to the messages sent in one slice of
// an open-loop run: how many were accepted and refused, and the replies'
// latencies of the accepted ones.
type timelineSlice struct {
	ok, shed int
	lat      []time.Duration
}

// timeline slices the messages sent within the run's first `within` by
// their send time (sentAt relative to start): each gets its 2xx or 429,
// and the accepted ones their reply's latency (lat, < 0 when none came).
func timeline(start time.Time, sentAt []time.Time, status []int, lat []time.Duration, within time.Duration) []timelineSlice {
	out := make([]timelineSlice, within/timelineStep)
	for i, at := range sentAt {
		k := int(at.Sub(start) / timelineStep)
		if k < 0 || k >= len(out) {
			continue
		}
		switch {
		case status[i]/100 == 2:
			out[k].ok++
			if lat[i] >= 0 {
				out[k].lat = append(out[k].lat, lat[i])
			}
		case status[i] == http.StatusTooManyRequests:
			out[k].shed++
		}
	}
	return out
}

// openLoop sends rate messages per second for d, spread over convs, and
// times each accepted message's reply on the SSE streams.
func openLoop(base string, convs []conv, rep *replies, rate int, d time.Duration, prefix string, grace time.Duration) openResult {
	res := openResult{rate: rate}
	interval := time.Second / time.Duration(rate)
	total := int(d / interval)
	sentAt := make([]time.Time, total)
	status := make([]int, total)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4096)
	start := time.Now()
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		sem <- struct{}{}
		wg.Add(1)
		sentAt[i] = time.Now()
		go func() {
			defer func() { <-sem; wg.Done() }()
			status[i] = send(base, convs[i%len(convs)], prefix+strconv.Itoa(i))
		}()
	}
	res.achieved = float64(total) / time.Since(start).Seconds()
	wg.Wait()
	lastSend := time.Now()
	// cold tells the messages sent in the run's first second, where each
	// conversation gets its first message (coldShed, warmLat).
	cold := func(i int) bool { return sentAt[i].Sub(start) < time.Second }
	for i, st := range status {
		switch {
		case st/100 == 2:
			res.ok++
		case st == http.StatusTooManyRequests:
			res.shed++
			if cold(i) {
				res.coldShed++
			}
		default:
			res.fail++
		}
	}
	res.sent = total
	// Wait for the replies of every accepted message (or the grace).
	deadline := time.Now().Add(grace)
	var last time.Time
	lat := make([]time.Duration, total) // each message's, < 0 without a reply (timeline)
	for {
		res.replyLat, res.warmLat, res.missing, last = res.replyLat[:0], res.warmLat[:0], 0, time.Time{}
		for i, st := range status {
			lat[i] = -1
			if st/100 != 2 {
				continue
			}
			at, ok := rep.at(prefix + strconv.Itoa(i))
			if !ok {
				res.missing++
				continue
			}
			lat[i] = at.Sub(sentAt[i])
			res.replyLat = append(res.replyLat, lat[i])
			if !cold(i) {
				res.warmLat = append(res.warmLat, lat[i])
			}
			if at.After(last) {
				last = at
			}
		}
		if res.missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.steps = timeline(start, sentAt, status, lat, min(time.Second, d))
	if res.missing == 0 {
		res.drain = max(0, last.Sub(lastSend))
	} else {
		res.drain = -1
	}
	return res
}

// shedCell is the 429 column of the open-loop table: how many, and how
// many of them in the run's first second (the conversations' cold start:
// on PostgreSQL their leases are taken and their starts read then), so
// that refusals of a burst from idle read apart from the steady state's.
func shedCell(shed, cold int) string {
	if shed == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%d in the 1st s)", shed, cold)
}

// pct returns the q-quantile of d (sorted in place); missing values count
// as slower than any present one (then the quantile may be +Inf: -1).
func pct(d []time.Duration, missing int, q float64) time.Duration {
	n := len(d) + missing
	if n == 0 {
		return 0
	}
	slices.Sort(d)
	i := min(n-1, int(q*float64(n)))
	if i >= len(d) {
		return -1
	}
	return d[i]
}

func ms(d time.Duration) string {
	if d < 0 {
		return "∞"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

// share prints a share as a percentage ("–": unknown).
func share(v float64) string {
	if v < 0 {
		return "–"
	}
	return strconv.FormatFloat(100*v, 'f', 0, 64) + " %"
}
