//go:build unix

package realtime

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
)

// TestSendNow: sendNow writes what a non-blocking socket takes now, and
// tells a full socket (EAGAIN, after a partial write) and a closed peer
// (EPIPE, with no signal that would end the process) apart from success.
func TestSendNow(t *testing.T) {
	pair := func(t *testing.T) (int, int) {
		t.Helper()
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
		if err := syscall.SetNonblock(fds[0], true); err != nil {
			t.Fatal(err)
		}
		return fds[0], fds[1]
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, w, r int)
	}{
		{"nothing", func(t *testing.T, w, r int) {
			if n, err := sendNow(uintptr(w), nil); n != 0 || err != nil {
				t.Fatalf("sendNow(nil) = %d, %v", n, err)
			}
		}},
		{"all taken", func(t *testing.T, w, r int) {
			p := []byte("data: hello\n\n")
			if n, err := sendNow(uintptr(w), p); n != len(p) || err != nil {
				t.Fatalf("sendNow = %d, %v; want %d, nil", n, err, len(p))
			}
			got := make([]byte, 64)
			m, _ := syscall.Read(r, got)
			if !bytes.Equal(got[:m], p) {
				t.Fatalf("peer read %q, want %q", got[:m], p)
			}
		}},
		{"full socket", func(t *testing.T, w, r int) {
			p := bytes.Repeat([]byte("x"), 1<<16)
			total, partial := 0, false
			for range 1 << 12 {
				n, err := sendNow(uintptr(w), p)
				if n < 0 || n > len(p) {
					t.Fatalf("sendNow = %d of %d bytes", n, len(p))
				}
				total += n
				if err != nil {
					if !errors.Is(err, syscall.EAGAIN) || n != 0 {
						t.Fatalf("full socket: %d, %v; want 0, EAGAIN", n, err)
					}
					if !partial || total == 0 {
						t.Fatalf("EAGAIN after %d bytes, no partial write before it", total)
					}
					return
				}
				partial = partial || n < len(p)
			}
			t.Fatalf("the socket took %d bytes without filling", total)
		}},
		{"closed peer", func(t *testing.T, w, r int) {
			if err := syscall.Shutdown(r, syscall.SHUT_RDWR); err != nil {
				t.Fatal(err)
			}
			if n, err := sendNow(uintptr(w), []byte("x")); !errors.Is(err, syscall.EPIPE) || n != 0 {
				t.Fatalf("sendNow to a closed peer = %d, %v; want 0, EPIPE", n, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, r := pair(t)
			tc.run(t, w, r)
		})
	}
}
