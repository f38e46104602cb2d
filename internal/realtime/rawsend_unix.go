//go:build unix && !linux

package realtime

import "syscall"

// sendNow is one write(2) of p on the non-blocking socket fd.
func sendNow(fd uintptr, p []byte) (int, error) { return syscall.Write(int(fd), p) }
