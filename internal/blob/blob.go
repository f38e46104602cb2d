// Package blob keeps the contents of uploaded files: on disk under the data
// directory (the SQLite set-up) or in the database (PostgreSQL, so that
// every node of a cluster sees every file). Both implement files.Blobs.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Disk keeps each file in Dir/<bot hash>/<file hash>. Names are hashes, so
// no id can escape Dir. Writes go to a temporary file renamed into place:
// a failed write leaves nothing behind.
type Disk struct{ Dir string }

// NewDisk returns a Disk store under dir, creating it.
func NewDisk(dir string) (*Disk, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("files directory: %w", err)
	}
	return &Disk{Dir: dir}, nil
}

func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

func (d *Disk) path(botID, fileID string) string {
	return filepath.Join(d.Dir, hashName(botID), hashName(fileID))
}

// Put implements files.Blobs.
func (d *Disk) Put(_ context.Context, botID, fileID string, data []byte) error {
	p := d.path(botID, fileID)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".upload-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Get implements files.Blobs.
func (d *Disk) Get(_ context.Context, botID, fileID string) ([]byte, error) {
	b, err := os.ReadFile(d.path(botID, fileID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, model.NotFound("file contents")
	}
	return b, err
}

// Delete implements files.Blobs.
func (d *Disk) Delete(_ context.Context, botID, fileID string) error {
	err := os.Remove(d.path(botID, fileID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// DB keeps file contents in the store's file_blobs table.
type DB struct{ Files store.Files }

// Put implements files.Blobs.
func (d DB) Put(ctx context.Context, botID, fileID string, data []byte) error {
	return d.Files.PutBlob(ctx, botID, fileID, data)
}

// Get implements files.Blobs.
func (d DB) Get(ctx context.Context, botID, fileID string) ([]byte, error) {
	return d.Files.GetBlob(ctx, botID, fileID)
}

// Delete implements files.Blobs.
func (d DB) Delete(ctx context.Context, botID, fileID string) error {
	return d.Files.DeleteBlob(ctx, botID, fileID)
}
