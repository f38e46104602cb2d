package sqlite

import (
	"context"

	"github.com/parley-bots/parley/internal/store"
)

// OpenAt opens the store at path with its schema at version, as an older
// binary left it, for the tests of a migration.
func OpenAt(ctx context.Context, path string, version int) (store.DB, error) {
	return openAt(ctx, path, Options{}, version)
}

// OpenPlain opens the store at path through SQLite's default VFS, without
// walVFS's gathered WAL writes.
func OpenPlain(ctx context.Context, path string) (store.DB, error) {
	return OpenWith(ctx, path, Options{plainVFS: true})
}
