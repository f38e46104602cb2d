package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

type listenResult struct {
	before, after     int64 // the server's RSS, KB
	goBefore, goAfter goMem // the Go runtime's view (/metrics)
	fanout            []time.Duration
	missing           int
	opening           time.Duration // to open the n streams, one after the other
}

// fanouts is how many messages are fanned out to the idle listeners, one
// after the other, each once the previous reached every stream (or
// fanoutWait passed): the figures are over all their arrivals.
const (
	fanouts    = 5
	fanoutWait = 10 * time.Second
)

// idleListeners opens n SSE streams on one conversation, reads the
// server's resident memory once they are idle, then sends fanouts
// messages, one at a time, and times each one's arrival on every stream.
func idleListeners(p *parleyTarget, n int) (listenResult, error) {
	var res listenResult
	c := p.open[0]
	time.Sleep(time.Second)
	res.before, res.goBefore = rssKB(p.pid()), readGoMem(p.url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := "fan-" + randomHex(6) + "-"
	var (
		mu      sync.Mutex
		arrived []time.Time // of the message being fanned out
		round   string      // its text
		wg      sync.WaitGroup
	)
	opened := time.Now()
	for range n {
		body, err := openStream(ctx, p.chat.base, c)
		if err != nil {
			return res, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer body.Close()
			r := bufio.NewReader(body)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				// The user's message, not the bot's echo of it.
				if bytes.Contains(line, []byte(prefix)) && !bytes.Contains(line, []byte("echo ")) {
					now := time.Now()
					mu.Lock()
					if round != "" && bytes.Contains(line, []byte(round)) {
						arrived = append(arrived, now)
					}
					mu.Unlock()
				}
			}
		}()
	}
	res.opening = time.Since(opened)
	time.Sleep(2 * time.Second) // idle
	res.after, res.goAfter = rssKB(p.pid()), readGoMem(p.url)
	for i := range fanouts {
		text := prefix + strconv.Itoa(i)
		mu.Lock()
		// With the JSON string's closing quote: "-1" is not "-10".
		round, arrived = text+`"`, arrived[:0]
		mu.Unlock()
		sent := time.Now()
		send(p.chat.base, c, text)
		deadline := sent.Add(fanoutWait)
		for time.Now().Before(deadline) {
			mu.Lock()
			got := len(arrived)
			mu.Unlock()
			if got >= n {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		for _, at := range arrived {
			res.fanout = append(res.fanout, at.Sub(sent))
		}
		res.missing += n - len(arrived)
		round = ""
		mu.Unlock()
		time.Sleep(500 * time.Millisecond) // the echoes' fan-out ends
	}
	cancel()
	wg.Wait()
	return res, nil
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
