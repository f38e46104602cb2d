package store

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// Tables stores a bot's tables, their rows (JSON documents) and jobs.
// Filters (model.Cond) are compiled to parameterized SQL per engine.
type Tables interface {
	Create(ctx context.Context, t *model.Table) error
	// Get finds a table of botID by id or name.
	Get(ctx context.Context, botID, idOrName string) (*model.Table, error)
	List(ctx context.Context, botID string, tags map[string]string) ([]*model.Table, error)
	Update(ctx context.Context, t *model.Table) error
	Delete(ctx context.Context, botID, id string) error
	CountRows(ctx context.Context, tableID string) (int, error)

	// InsertRows assigns ids (per table, from 1) and stores the rows.
	InsertRows(ctx context.Context, tableID string, data []map[string]any) ([]*model.TableRow, error)
	GetRow(ctx context.Context, tableID string, id int64) (*model.TableRow, error)
	// ReplaceRow stores a row's new data (NotFound if it does not exist).
	ReplaceRow(ctx context.Context, tableID string, r *model.TableRow) error
	// DeleteRows deletes the rows with ids, or matching q.Filter (nil: all).
	DeleteRows(ctx context.Context, tableID string, ids []int64, q *model.TableQuery) (int, error)
	// FindRows returns up to q.Limit rows (q.Group empty).
	FindRows(ctx context.Context, tableID string, q *model.TableQuery) ([]*model.TableRow, error)
	// GroupRows returns one object per group of q.Group.
	GroupRows(ctx context.Context, tableID string, q *model.TableQuery) ([]map[string]any, error)

	PutJob(ctx context.Context, j *model.TableJob) error
	GetJob(ctx context.Context, botID, id string) (*model.TableJob, error)
	ListJobs(ctx context.Context, tableID string) ([]*model.TableJob, error)
}
