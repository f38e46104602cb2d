//go:build !unix

package sqlite

// lockDatabase takes no lock where flock is not available.
func lockDatabase(string) (unlock func(), err error) { return func() {}, nil }
