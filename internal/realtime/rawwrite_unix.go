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

// tryWrite writes what the socket takes now: no waiting, and no deadline
// (a deadline arms a timer, which fires later, for every write).
func tryWrite(raw syscall.RawConn, p []byte) (int, error) {
	var n int
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		for len(p) > 0 {
			m, e := syscall.Write(int(fd), p)
			if m > 0 {
				n += m
				p = p[m:]
			}
			if e == syscall.EINTR {
				continue
			}
			if e != nil && e != syscall.EAGAIN {
				werr = e
			}
			if e != nil || m <= 0 {
				break
			}
		}
		return true
	})
	if werr == nil {
		werr = err
	}
	return n, werr
}
