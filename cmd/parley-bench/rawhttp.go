package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
)

// The load's requests go through a lean HTTP/1.1 client, as wrk's do (the
// tool issue 18's goals name): keep-alive connections, a request written
// in one piece, the answer's head parsed for its status and length only.
// On the 2-core machine the load shares the CPU with the server it
// measures, and Go's HTTP client (a request's and a response's objects,
// a goroutine per connection and the channels between them) costs CPU a
// faster server could not use, and a slower one did not need: this
// process took 12.2 s of CPU with it for a 10-second closed loop against
// the bare handler and one against Parley, 7.7 s with this client, for
// more requests (goal 1's table prints the load's CPU per message).

// rawPools holds a pool of idle connections per host.
var rawPools sync.Map // host → *rawPool

type rawPool struct {
	host string
	mu   sync.Mutex
	idle []*rawConn
}

// rawConn is one keep-alive connection, with buffers reused by its
// requests.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
	req  []byte
	body []byte
}

func poolOf(host string) *rawPool {
	if p, ok := rawPools.Load(host); ok {
		return p.(*rawPool)
	}
	p, _ := rawPools.LoadOrStore(host, &rawPool{host: host})
	return p.(*rawPool)
}

func (p *rawPool) get() (*rawConn, bool, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, true, nil
	}
	p.mu.Unlock()
	conn, err := net.Dial("tcp", p.host)
	if err != nil {
		return nil, false, err
	}
	return &rawConn{conn: conn, r: bufio.NewReaderSize(conn, 8<<10)}, false, nil
}

func (p *rawPool) put(c *rawConn) {
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// closeIdle closes the idle connections to base's host (a target that
// stops).
func closeIdle(base string) {
	u, err := url.Parse(base)
	if err != nil {
		return
	}
	p := poolOf(u.Host)
	p.mu.Lock()
	for _, c := range p.idle {
		c.conn.Close()
	}
	p.idle = nil
	p.mu.Unlock()
}

// post sends a JSON body to rawURL (http only) with headers ("Name:
// value" each) and returns the answer's status and body; check, when not
// nil, is given the body before the connection is reused (the body is
// not valid after). A connection that was idle and fails before any
// answer is replaced once (the server closed it meanwhile).
func post(rawURL string, headers []string, body string, check func(body []byte) bool) (status int, checked bool, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, false, err
	}
	p := poolOf(u.Host)
	for attempt := 0; ; attempt++ {
		c, reused, err := p.get()
		if err != nil {
			return 0, false, err
		}
		status, resBody, keep, answered, err := c.roundTrip(u.Host, u.RequestURI(), headers, body)
		if err != nil {
			c.conn.Close()
			if reused && !answered && attempt == 0 {
				continue
			}
			return 0, false, err
		}
		if check != nil {
			checked = check(resBody)
		}
		if keep {
			p.put(c)
		} else {
			c.conn.Close()
		}
		return status, checked, nil
	}
}

var errBadAnswer = errors.New("malformed HTTP answer")

// roundTrip writes one POST and reads its answer: answered tells whether
// any of it came.
func (c *rawConn) roundTrip(host, path string, headers []string, body string) (status int, resBody []byte, keep, answered bool, err error) {
	b := append(c.req[:0], "POST "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n"...)
	for _, h := range headers {
		b = append(b, h...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	c.req = b
	if _, err := c.conn.Write(b); err != nil {
		return 0, nil, false, false, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, len(line) > 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, true, errBadAnswer
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, true, errBadAnswer
	}
	length, chunked, keep := -1, false, line[7] == '1'
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, true, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, false, true, errBadAnswer
		}
		val = bytes.TrimSpace(val)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(val)); err != nil || length < 0 {
				return 0, nil, false, true, errBadAnswer
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(val, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(val, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(val, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		err = c.readChunked()
	case length >= 0:
		c.body = grow(c.body, length)
		_, err = io.ReadFull(c.r, c.body)
	default: // the body runs to the connection's end
		keep = false
		c.body, err = appendAll(c.body, c.r)
	}
	if err != nil {
		return 0, nil, false, true, err
	}
	return status, c.body, keep, true, nil
}

// readChunked reads a chunked body into c.body.
func (c *rawConn) readChunked() error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: chunk size %q", errBadAnswer, size)
		}
		if n == 0 {
			for { // trailers, then the empty line
				line, err := c.r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		at := len(c.body)
		c.body = grow(c.body, at+int(n))
		if _, err := io.ReadFull(c.r, c.body[at:]); err != nil {
			return err
		}
		if _, err := c.r.Discard(2); err != nil { // the chunk's CRLF
			return err
		}
	}
}

// grow returns b resized to n bytes, reallocated only when too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, max(n, 2*cap(b)))
		copy(nb, b)
		return nb
	}
	return b[:n]
}

func appendAll(b []byte, r io.Reader) ([]byte, error) {
	rest, err := io.ReadAll(r)
	return append(b, rest...), err
}
