package testdb

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards loopback TCP connections to a database server until Cut:
// it then closes them all, mid-statement or not, and nothing listens on
// its address, as when the server went away; Mend listens there again.
type Proxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

// PostgresBehindProxy is a URL of a fresh test database (PostgresURL)
// reached through a Proxy, and the proxy. A connection attempt gives up
// after 2 s (connect_timeout), so that one made while the proxy is cut
// fails as against a server gone.
func PostgresBehindProxy(t testing.TB) (string, *Proxy) {
	t.Helper()
	u, err := url.Parse(PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	return u.String(), p
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

// Cut closes every connection and stops listening.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Mend listens on the proxy's address again.
func (p *Proxy) Mend(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}
