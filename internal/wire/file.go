package wire

import "github.com/parley-bots/parley/internal/model"

// File is the Files API File.
type File struct {
	ID                 string            `json:"id"`
	BotID              string            `json:"botId"`
	Key                string            `json:"key"`
	URL                string            `json:"url"`
	UploadURL          string            `json:"uploadUrl"`
	Size               *int64            `json:"size"`
	ContentType        string            `json:"contentType"`
	Tags               map[string]string `json:"tags"`
	CreatedAt          string            `json:"createdAt"`
	UpdatedAt          string            `json:"updatedAt"`
	AccessPolicies     []string          `json:"accessPolicies"`
	Index              bool              `json:"index"`
	Status             string            `json:"status"`
	FailedStatusReason string            `json:"failedStatusReason,omitempty"`
	ExpiresAt          string            `json:"expiresAt,omitempty"`
}

// NewFile renders a file with its download and upload URLs.
func NewFile(f *model.File, url, uploadURL string) File {
	v := File{ID: f.ID, BotID: f.BotID, Key: f.Key, ContentType: f.ContentType, Tags: f.Tags,
		CreatedAt: model.FormatTime(f.CreatedAt), UpdatedAt: model.FormatTime(f.UpdatedAt),
		AccessPolicies: f.AccessPolicies, Index: f.Index, Status: f.Status, FailedStatusReason: f.FailedReason,
		URL: url, UploadURL: uploadURL}
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	if v.AccessPolicies == nil {
		v.AccessPolicies = []string{}
	}
	if f.Status == model.FileUploadCompleted || f.Size > 0 {
		size := f.Size
		v.Size = &size
	}
	if !f.ExpiresAt.IsZero() {
		v.ExpiresAt = model.FormatTime(f.ExpiresAt)
	}
	return v
}
