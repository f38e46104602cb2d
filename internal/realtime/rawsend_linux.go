package realtime

import (
	"syscall"
	"unsafe"
)

// sendNow is one send(2) of p on the non-blocking socket fd: as write(2),
// without the file layer's steps (its position lock, its checks), which
// a fan-out pays once per stream; MSG_NOSIGNAL, as the runtime makes of
// SIGPIPE anyway: a closed peer is an EPIPE. BenchmarkFanout: 2 to 4 %
// faster than write(2), in ten of ten side-by-side pairs.
func sendNow(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.Syscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), syscall.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
