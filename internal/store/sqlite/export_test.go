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
