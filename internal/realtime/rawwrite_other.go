//go:build !unix

package realtime

import (
	"errors"
	"net"
	"syscall"
)

func rawConnOf(net.Conn) syscall.RawConn { return nil }

// rawWriter is unused where there is no raw socket (rawConnOf is nil).
type rawWriter struct{}

func (*rawWriter) init() {}

func (*rawWriter) write(syscall.RawConn, []byte) (int, error) { return 0, errors.ErrUnsupported }
