//go:build unix

package realtime

import (
	"net"
	"syscall"
)

// rawConnOf returns the connection's socket, for writes that never wait;
// nil when it has none.
func rawConnOf(c net.Conn) syscall.RawConn {
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return raw
		}
	}
	return nil
}

// rawWriter writes what a socket takes now: no waiting, and no deadline
// (a deadline arms a timer, which fires later, for every write). Its
// callback is made once, so a write allocates nothing.
type rawWriter struct {
	fn   func(fd uintptr) bool
	p    []byte
	n    int
	werr error
}

func (w *rawWriter) init() {
	w.fn = func(fd uintptr) bool {
		for len(w.p) > 0 {
			m, e := sendNow(fd, w.p)
			if m > 0 {
				w.n += m
				w.p = w.p[m:]
			}
			if e == syscall.EINTR {
				continue
			}
			if e != nil && e != syscall.EAGAIN {
				w.werr = e
			}
			if e != nil || m <= 0 {
				break
			}
		}
		return true
	}
}

func (w *rawWriter) write(raw syscall.RawConn, p []byte) (int, error) {
	w.p, w.n, w.werr = p, 0, nil
	err := raw.Write(w.fn)
	n, werr := w.n, w.werr
	w.p, w.werr = nil, nil
	if werr == nil {
		werr = err
	}
	return n, werr
}
