//go:build !unix

package realtime

import (
	"errors"
	"net"
	"syscall"
)

func rawConnOf(net.Conn) syscall.RawConn { return nil }

func tryWrite(syscall.RawConn, []byte) (int, error) { return 0, errors.ErrUnsupported }
