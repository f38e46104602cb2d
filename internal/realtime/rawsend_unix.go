//go:build unix && !linux

package realtime

import "syscall"

// sendNow is one write(2) of p on the non-blocking socket fd: the bytes
// taken, none on an error.
func sendNow(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Write(int(fd), p)
	if err != nil {
		return 0, err
	}
	return n, nil
}
