package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type listenResult struct {
	before, after     int64 // the server's RSS, KB
	goBefore, goAfter goMem // the Go runtime's view (/metrics)
	fanout            []time.Duration
	missing           int
	opening           time.Duration                    // to open the n streams, one after the other
	idleCPU           struct{ server, clients cpuUse } // while they are idle
	// The CPU time of the fan-outs, from each message's send to its last
	// arrival: the server's (HTTP, the turn and the commit included) and
	// the listening clients'. On a machine that runs both, their sum over
	// the cores bounds the fan-out's time from below.
	fanoutCPU struct{ server, clients time.Duration }
}

// cpuUse is CPU time used over a wall time.
type cpuUse struct{ cpu, over time.Duration }

// perSecond formats it as milliseconds of CPU a second for each 1,000 of
// n listeners.
func (u cpuUse) perSecond(n float64) string {
	if u.over <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms/s", float64(u.cpu)/float64(time.Millisecond)/u.over.Seconds()*1000/n)
}

// fanouts is how many messages are fanned out to the idle listeners, one
// after the other, each once the previous reached every stream (or
// fanoutWait passed): the figures are over all their arrivals.
const (
	fanouts    = 5
	fanoutWait = 10 * time.Second
)

// idleListeners opens n SSE streams on one conversation, leaves them idle
// for idle (the server's heartbeats and keepalives go on: their CPU, the
// server's and the clients', is measured over the last 80 % of it, once
// the streams opened last are idle too), reads the server's resident
// memory, then sends fanouts messages, one at a time, and times each one's
// arrival on every stream.
//
// The streams are read as a lean SSE client would (rawListen): on a 2-core
// machine the listening process shares the CPU with the server, and Go's
// HTTP client (its per-connection goroutines and channels) took 1.7× a raw
// reader's CPU per arrival: 570 against 340 ms for five fan-outs to 10,000
// streams, while the server took 710 ms.
func idleListeners(p *parleyTarget, n int, idle time.Duration) (listenResult, error) {
	var res listenResult
	c := p.open[0]
	time.Sleep(time.Second)
	res.before, res.goBefore = rssKB(p.pid()), readGoMem(p.url)
	prefix := []byte("fan-" + randomHex(6) + "-")
	var (
		marker  atomic.Pointer[[]byte] // the text of the message being fanned out
		arrived = make([]atomic.Int64, n)
		count   atomic.Int64
		wg      sync.WaitGroup
		conns   = make([]net.Conn, 0, n)
	)
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
		wg.Wait()
	}()
	opened := time.Now()
	for i := range n {
		conn, r, err := rawListen(p.chat.base, c)
		if err != nil {
			return res, err
		}
		conns = append(conns, conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				line, err := r.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				// The user's message, not the bot's echo of it.
				if bytes.Contains(line, prefix) && !bytes.Contains(line, []byte("echo ")) {
					if m := marker.Load(); m != nil && bytes.Contains(line, *m) &&
						arrived[i].CompareAndSwap(0, time.Now().UnixNano()) {
						count.Add(1)
					}
				}
			}
		}()
	}
	res.opening = time.Since(opened)
	time.Sleep(idle / 5)
	from, server, clients := time.Now(), cpuTime(p.pid()), cpuTime(os.Getpid())
	time.Sleep(idle - idle/5)
	over := time.Since(from)
	res.idleCPU.server = cpuUse{cpuTime(p.pid()) - server, over}
	res.idleCPU.clients = cpuUse{cpuTime(os.Getpid()) - clients, over}
	res.after, res.goAfter = rssKB(p.pid()), readGoMem(p.url)
	for i := range fanouts {
		text := string(prefix) + strconv.Itoa(i)
		// With the JSON string's closing quote: "-1" is not "-10".
		m := []byte(text + `"`)
		count.Store(0)
		for j := range arrived {
			arrived[j].Store(0)
		}
		marker.Store(&m)
		server, clients := cpuTime(p.pid()), cpuTime(os.Getpid())
		sent := time.Now()
		send(p.chat.base, c, text)
		deadline := sent.Add(fanoutWait)
		for count.Load() < int64(n) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		res.fanoutCPU.server += cpuTime(p.pid()) - server
		res.fanoutCPU.clients += cpuTime(os.Getpid()) - clients
		marker.Store(nil)
		for j := range arrived {
			if at := arrived[j].Load(); at != 0 {
				res.fanout = append(res.fanout, time.Unix(0, at).Sub(sent))
			} else {
				res.missing++
			}
		}
		time.Sleep(500 * time.Millisecond) // the echoes' fan-out ends
	}
	return res, nil
}

// rawListen opens a Chat API stream on a TCP connection of its own and
// reads the response's head; the returned reader is its body's bytes,
// chunk framing included: a frame this build writes alone is never split
// between chunks, so its data line is whole (listenBody decodes the
// framing, for streams with a backlog or older builds).
func rawListen(base string, c conv) (net.Conn, *bufio.Reader, error) {
	conn, r, _, err := listenBody(base, c)
	return conn, r, err
}

// listenBody is rawListen that also returns the decoded body.
func listenBody(base string, c conv) (net.Conn, *bufio.Reader, io.Reader, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, nil, err
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, nil, nil, err
	}
	_, err = fmt.Fprintf(conn, "GET %s/conversations/%s/listen HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nx-user-key: %s\r\n\r\n",
		u.Path, c.id, u.Host, c.key)
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	if res.StatusCode != 200 {
		conn.Close()
		return nil, nil, nil, fmt.Errorf("listen: status %d", res.StatusCode)
	}
	return conn, r, res.Body, nil
}

// goMem is what a server's /metrics says of its Go memory.
type goMem struct {
	heapStack  int64 // heap in use + goroutine stacks, bytes
	stacks     int64 // goroutine stacks, bytes
	goroutines int64
}

func readGoMem(base string) goMem {
	var m goMem
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return m
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(val, 64)
		switch name {
		case "go_memstats_heap_inuse_bytes":
			m.heapStack += int64(f)
		case "go_memstats_stack_inuse_bytes":
			m.heapStack += int64(f)
			m.stacks = int64(f)
		case "go_goroutines":
			m.goroutines = int64(f)
		}
	}
	return m
}
