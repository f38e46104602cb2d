package files

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// ReadFile returns the content of a bot's uploaded file (the Tables API's
// importTable, through tables.FileSource). Another bot's file is not
// found; a file whose upload has not completed is refused.
func (l *Library) ReadFile(ctx context.Context, botID, fileID string) ([]byte, error) {
	f, err := l.get(ctx, botID, fileID)
	if err != nil {
		return nil, err
	}
	if f.Status == model.FileUploadPending || f.Status == model.FileUploadFailed {
		return nil, model.Errorf(model.ErrInvalidPayload, "fileId: file %s has no content (status %s)", quote(fileID), f.Status)
	}
	return l.blobs.Get(ctx, botID, fileID)
}
