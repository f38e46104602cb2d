//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDatabase takes the database's lock file (path + ".lock", beside it)
// for as long as the store is open (Options.Exclusive): a lock of the
// file's own (flock), not SQLite's (POSIX record locks on the database,
// which closing any other descriptor of it would drop). The kernel
// releases it when the process ends, however it ends.
func lockDatabase(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sqlite: %s is in use by another Parley server (it holds %s.lock): one server per database file", path, path)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
