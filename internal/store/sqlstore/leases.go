package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

// ---- leases

type leases struct{ s *Store }

// Acquire is Take without the details.
func (r leases) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	_, ok, err := r.Take(ctx, name, holder, ttl)
	return ok, err
}

// Take reads the lease, then writes it conditionally on what it read (its
// epoch and expiry): of two nodes racing for an expired lease, one update
// matches no row and that node is refused. A takeover or a take after a
// release starts a new epoch; a renewal keeps it.
//
// A new row starts at the clock's microseconds, not at 1: a lease whose
// row Prune deleted starts again above every epoch it had (they count
// up by one per take from an older clock reading), so a stale holder's
// fence never matches the new row.
//
// A Take runs to its end once begun (for takeTimeout at most), whatever
// ctx says. Given up midway, its write could still commit: the driver's
// cancel request is ignored by a PostgreSQL backend that has not started
// the statement yet, which it then runs. The lease would be held by a
// node that believes it was refused, until it expires; a stopping node
// would hand over nothing (seen once in TestFailoverLoop's SIGTERM, the
// survivor waiting out the TTL). A caller whose ctx ended releases what
// it was given.
func (r leases) Take(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), takeTimeout)
	defer cancel()
	now := time.Now()
	until := now.Add(ttl).UnixMilli()
	var cur string
	var epoch, expires int64
	err := r.s.queryRow(ctx, `SELECT holder, epoch, expires_at FROM leases WHERE name = ?`, name).Scan(&cur, &epoch, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		first := now.UnixMicro()
		res, err := r.s.exec(ctx, `INSERT INTO leases (name, holder, expires_at, epoch) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO NOTHING`, name, holder, until, first)
		if n, err := affected(res, err); err != nil || n == 0 {
			return store.Lease{}, false, r.s.fail(err, "lease")
		}
		return store.Lease{Epoch: first}, true, nil
	}
	if err != nil {
		return store.Lease{}, false, r.s.fail(err, "lease")
	}
	live := expires > now.UnixMilli()
	switch {
	case live && cur != holder:
		return store.Lease{Holder: cur}, false, nil
	case live: // ours: a renewal
		res, err := r.s.exec(ctx, `UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND epoch = ?`, until, name, holder, epoch)
		n, err := affected(res, err)
		if err != nil || n == 0 {
			return store.Lease{}, false, r.s.fail(err, "lease")
		}
		return store.Lease{Epoch: epoch}, true, nil
	}
	res, err := r.s.exec(ctx, `UPDATE leases SET holder = ?, epoch = epoch + 1, expires_at = ?
		WHERE name = ? AND epoch = ? AND expires_at = ?`, holder, until, name, epoch, expires)
	n, err := affected(res, err)
	if err != nil || n == 0 {
		return store.Lease{}, false, r.s.fail(err, "lease")
	}
	l := store.Lease{Epoch: epoch + 1}
	if expires > 0 && cur != holder { // expired, not released: a takeover
		l.From, l.FromExpired = cur, time.UnixMilli(expires)
	}
	return l, true, nil
}

// takeTimeout bounds a Take, which its caller's ctx does not (Take).
const takeTimeout = 5 * time.Second

// Renew is one conditional UPDATE; a released lease (expires_at 0) is not
// renewed.
func (r leases) Renew(ctx context.Context, name, holder string, epoch int64, ttl time.Duration) (bool, error) {
	res, err := r.s.exec(ctx, `UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND epoch = ? AND expires_at > 0`,
		time.Now().Add(ttl).UnixMilli(), name, holder, epoch)
	n, err := affected(res, err)
	return n > 0, r.s.fail(err, "lease")
}

// Check is an UPDATE that matches only the fence's holder and epoch: it
// takes the row lock (a concurrent Take waits for this transaction, then
// sees its writes) and fails once the lease moved. It changes nothing but,
// with f.Renew, a live or expired lease's expiry (a released one, expiry 0,
// stays released): the row is written either way.
//
// In a pipelined transaction of an engine that can (Dialect.DeferredRows)
// the check goes out with the write's next statements and its COMMIT,
// written to fail in the engine when the lease moved: the engine fails
// the transaction with ErrFenced, and nothing of it commits.
func (r leases) Check(ctx context.Context, f store.Fence) error {
	if f.Take {
		return r.takeFree(ctx, f)
	}
	q := `UPDATE leases SET epoch = epoch WHERE name = ? AND holder = ? AND epoch = ?`
	args := []any{f.Name, f.Holder, f.Epoch}
	if f.Renew > 0 {
		until := time.Now().Add(f.Renew).UnixMilli()
		q = `UPDATE leases SET expires_at = CASE WHEN expires_at > 0 AND expires_at < ? THEN ? ELSE expires_at END
			WHERE name = ? AND holder = ? AND epoch = ?`
		args = append([]any{until, until}, args...)
	}
	return execRequired(ctx, r.s, "lease", store.ErrFenced, q, args...)
}

// takeFree is Check of a Fence that takes the lease (Fence.Take): one
// upsert that writes a row where there is none, and changes a released
// one (expiry 0) to the fence's holder and epoch when that epoch is
// above the row's. Of two writers racing for a free lease, the second's
// upsert waits for the first's row lock, then finds the row held. A Take
// racing with it matches no row once it committed (its UPDATE's epoch
// is gone), or makes it find the row held.
func (r leases) takeFree(ctx context.Context, f store.Fence) error {
	until := time.Now().Add(f.Renew).UnixMilli()
	return execRequired(ctx, r.s, "lease", store.ErrFenced, `INSERT INTO leases (name, holder, expires_at, epoch) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, epoch = excluded.epoch
		WHERE leases.expires_at = 0 AND leases.epoch < excluded.epoch`, f.Name, f.Holder, until, f.Epoch)
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Release expires holder's lease now; the row stays, so that the epoch
// keeps growing.
func (r leases) Release(ctx context.Context, name, holder string) error {
	_, err := r.s.exec(ctx, `UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ?`, name, holder)
	return r.s.fail(err, "lease")
}

// Free reads the lease's expiry (none: no row; 0: released) and epoch.
func (r leases) Free(ctx context.Context, name string) (bool, int64, error) {
	var expires, epoch int64
	err := r.s.queryRow(ctx, `SELECT expires_at, epoch FROM leases WHERE name = ?`, name).Scan(&expires, &epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, r.s.fail(err, "lease")
	}
	return expires == 0, epoch, nil
}

// Prune deletes, in one statement, at most limit leases named prefix...
// that were released or expired before `before` and whose epoch is below
// before's microseconds: every epoch a later Take can start from (its
// clock then, see Take) is above it, as long as the nodes' clocks agree
// within now - before.
func (r leases) Prune(ctx context.Context, prefix string, before time.Time, limit int) (int, error) {
	if prefix == "" || limit <= 0 {
		return 0, nil
	}
	// name >= prefix AND name < prefix with its last byte incremented:
	// the names starting with prefix, a range of the primary key.
	end := []byte(prefix)
	end[len(end)-1]++
	// The conditions are repeated outside the subquery: a row taken
	// meanwhile (by a Take that PostgreSQL lets commit first) is
	// re-checked as it is now, and kept.
	until, below := before.UnixMilli(), before.UnixMicro()
	res, err := r.s.exec(ctx, `DELETE FROM leases WHERE name IN (
		SELECT name FROM leases WHERE name >= ? AND name < ? AND expires_at < ? AND epoch < ? LIMIT ?)
		AND expires_at < ? AND epoch < ?`,
		prefix, string(end), until, below, limit, until, below)
	n, err := affected(res, err)
	return int(n), r.s.fail(err, "lease")
}
