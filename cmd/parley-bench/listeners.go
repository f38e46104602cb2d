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
}

// idleListeners opens n SSE streams on one conversation, reads the
// server's resident memory once they are idle, then sends one message and
// times its arrival on every stream.
func idleListeners(p *parleyTarget, n int) (listenResult, error) {
	var res listenResult
	c := p.open[0]
	time.Sleep(time.Second)
	res.before, res.goBefore = rssKB(p.pid()), readGoMem(p.url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	marker := "fan-" + randomHex(6)
	var (
		mu      sync.Mutex
		arrived []time.Time
		wg      sync.WaitGroup
	)
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
				if bytes.Contains(line, []byte(marker)) && !bytes.Contains(line, []byte("echo ")) {
					now := time.Now()
					mu.Lock()
					arrived = append(arrived, now)
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(2 * time.Second) // idle
	res.after, res.goAfter = rssKB(p.pid()), readGoMem(p.url)
	sent := time.Now()
	send(p.chat.base, c, marker)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		got := len(arrived)
		mu.Unlock()
		if got >= n {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	for _, at := range arrived {
		res.fanout = append(res.fanout, at.Sub(sent))
	}
	mu.Unlock()
	res.missing = n - len(res.fanout)
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
