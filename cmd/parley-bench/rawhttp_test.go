package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPost sends requests through the lean client to servers that answer
// in each of HTTP/1.1's framings, and checks status, body and reuse.
func TestPost(t *testing.T) {
	big := strings.Repeat("x", 10_000) // more than the reader's buffer
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		status   int
		body     string
		newConns int64 // connections the three requests took
	}{
		{"content length", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(201)
			io.WriteString(w, `{"ok":true}`)
		}, 201, `{"ok":true}`, 1},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "part one, ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part two")
		}, 200, "part one, part two", 1},
		{"large chunked", func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			io.WriteString(w, big)
		}, 200, big, 1},
		{"connection close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			w.WriteHeader(429)
			io.WriteString(w, "slow down")
		}, 429, "slow down", 3},
		{"echoes the request", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, r.Header.Get("x-user-key")+" "+r.Header.Get("Content-Type")+" "+r.URL.Path+" "+string(b))
		}, 200, "k1 application/json /a/b {\"n\":1}", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tc.handler)
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			defer closeIdle(srv.URL)
			for range 3 {
				var got string
				st, ok, err := post(srv.URL+"/a/b", []string{"x-user-key: k1"}, `{"n":1}`, func(b []byte) bool {
					got = string(b)
					return true
				})
				if err != nil || !ok {
					t.Fatalf("post: %v (checked %v)", err, ok)
				}
				if st != tc.status || got != tc.body {
					t.Fatalf("got %d %.40q, want %d %.40q", st, got, tc.status, tc.body)
				}
			}
			if n := conns.Load(); n != tc.newConns {
				t.Errorf("connections = %d, want %d", n, tc.newConns)
			}
		})
	}
}

// TestPostRetriesAStaleConnection: a kept connection that the server
// closed while idle is replaced once, and the request goes through; one
// that fails on a fresh connection is an error.
func TestPostRetriesAStaleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { // one answer, kept alive, then closed while idle
				defer c.Close()
				r := bufio.NewReader(c)
				req, err := http.ReadRequest(r)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	url := "http://" + ln.Addr().String() + "/m"
	defer closeIdle(url)
	for i := range 3 {
		st, _, err := post(url, nil, "{}", nil)
		if err != nil || st != 200 {
			t.Fatalf("request %d: %d %v", i, st, err)
		}
	}
	if n := accepted.Load(); n != 3 {
		t.Errorf("connections = %d, want 3 (each stale one replaced)", n)
	}

	ln.Close()
	if st, _, err := post("http://"+ln.Addr().String()+"/m", nil, "{}", nil); err == nil {
		t.Errorf("post to a closed listener = %d, want an error", st)
	}
}
