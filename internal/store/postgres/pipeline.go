package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/parley-bots/parley/internal/store"
)

// Round trips, not statements, bound a transaction on PostgreSQL: between
// two statements its backend waits for Parley ("idle in transaction"),
// holding the rows it locked. The connector below wraps pgx's database/sql
// connections so that a transaction sends fewer of them:
//
//   - BEGIN is sent with the transaction's first statement, not on its own;
//   - in a transaction whose context is store.WithPipeline (the chat
//     pipeline's writes), Exec statements are queued and sent together, in
//     one pgx batch, with the next statement that needs an answer: a query,
//     a RowsAffected, or the COMMIT;
//   - there, an Exec marked store.WithReturnedRow is a query whose row is
//     scanned when its batch returns, and one marked store.WithRequiredRow
//     fails the transaction in the server when it finds no row: so a write
//     of the chat pipeline (a user's message, a turn's completion, with
//     the numbers of their signals and the lease's fence) goes out with
//     its COMMIT in one round trip, and holds the conversation's row lock
//     for no round trip to Parley.
//
// A queued statement's error is returned by the call that sent it (and by
// every later call of the transaction, which PostgreSQL has aborted): the
// transaction still commits all or nothing, only the error surfaces a call
// later. Outside transactions, statements run as pgx runs them.

type pipeConnector struct{ driver.Connector }

func (c pipeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pipeConn{Conn: dc.(*stdlib.Conn)}, nil
}

// pipeConn is one connection; database/sql uses it from one goroutine at a
// time.
type pipeConn struct {
	*stdlib.Conn
	inTx  bool
	txCtx context.Context // BeginTx's, for COMMIT and ROLLBACK as in stdlib
	begun bool            // BEGIN sent
	queue []queued        // Exec statements not sent yet
	err   error           // the first failure of the transaction
}

type queued struct {
	sql      string
	args     []any
	res      *pipeResult
	required error // store.RequiredRow: the statement's error when it found no row (and failed in the server)
	dest     []any // store.ReturnedRow: where the statement's row is scanned
}

// pipeResult is a queued statement's result, known once it was sent.
type pipeResult struct {
	c    *pipeConn
	ctx  context.Context
	sent bool
	n    int64
	err  error
}

func (r *pipeResult) LastInsertId() (int64, error) {
	return 0, errors.New("postgres: LastInsertId is not supported")
}

func (r *pipeResult) RowsAffected() (int64, error) {
	if !r.sent {
		if err := r.c.flush(r.ctx, false); err != nil && r.err == nil {
			return 0, err
		}
	}
	return r.n, r.err
}

func (c *pipeConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *pipeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if opts.Isolation != driver.IsolationLevel(0) || opts.ReadOnly {
		return c.Conn.BeginTx(ctx, opts) // BEGIN with options, sent now
	}
	if c.Conn.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	c.inTx, c.txCtx, c.begun, c.queue, c.err = true, ctx, false, nil, nil
	return pipeTx{c}, nil
}

func (c *pipeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if !c.inTx {
		return c.Conn.ExecContext(ctx, query, args)
	}
	if c.err != nil {
		return nil, c.err
	}
	if len(args) == 0 { // pgx runs these with the simple protocol: DDL, several statements in one
		if err := c.flush(ctx, false); err != nil {
			return nil, err
		}
		return c.Conn.ExecContext(ctx, query, args)
	}
	r := &pipeResult{c: c, ctx: ctx}
	c.queue = append(c.queue, queued{sql: query, args: values(args), res: r,
		required: store.RequiredRow(ctx), dest: store.ReturnedRow(ctx)})
	if store.Pipelined(ctx) {
		return r, nil
	}
	if err := c.flush(ctx, false); err != nil {
		return nil, err
	}
	return r, nil
}

func (c *pipeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if !c.inTx {
		return c.Conn.QueryContext(ctx, query, args)
	}
	if c.err != nil {
		return nil, c.err
	}
	if !store.Pipelined(ctx) || len(args) == 0 || (c.begun && len(c.queue) == 0) {
		if err := c.flush(ctx, false); err != nil {
			return nil, err
		}
		return c.Conn.QueryContext(ctx, query, args)
	}
	// The query goes out with what is queued: one round trip.
	br, err := c.send(ctx, func(b *pgx.Batch) { b.Queue(query, values(args)...) })
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	rows, err := br.Query()
	more := err == nil && rows.Next() // as stdlib does: the query's error is the call's
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		_ = br.Close()
		c.err = err
		return nil, err
	}
	return newBatchRows(c.Conn.Conn().TypeMap(), rows, br, more), nil
}

func (c *pipeConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.inTx {
		if err := c.flush(ctx, false); err != nil {
			return nil, err
		}
	}
	return c.Conn.PrepareContext(ctx, query)
}

func (c *pipeConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// send sends, as one batch, BEGIN if not sent yet, the queued statements
// and what extra queues, and reads the results of all but extra's, which
// the caller reads before closing br. err is the first failure.
func (c *pipeConn) send(ctx context.Context, extra func(*pgx.Batch)) (br pgx.BatchResults, err error) {
	b := &pgx.Batch{}
	begin := !c.begun
	if begin {
		b.Queue("begin")
	}
	queue := c.queue
	c.queue = nil
	for _, q := range queue {
		b.Queue(q.sql, q.args...)
	}
	extra(b)
	br = c.Conn.Conn().SendBatch(ctx, b)
	if begin {
		_, err = br.Exec()
		c.begun = true
	}
	for _, q := range queue {
		tag, qerr := result(br, q)
		q.res.sent, q.res.n, q.res.err = true, tag.RowsAffected(), qerr
		if err == nil {
			err = qerr
		}
	}
	c.err = err
	return br, err
}

// divisionByZero is the SQLSTATE a statement marked store.WithRequiredRow
// fails with when it finds no row.
const divisionByZero = "22012"

// result reads q's result from br: its command tag, and its row into
// q.dest; a statement marked store.WithRequiredRow that found no row (and
// so failed in the server) fails with q.required.
func result(br pgx.BatchResults, q queued) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	var err error
	if q.dest == nil {
		tag, err = br.Exec()
	} else {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			if rows.Next() {
				err = rows.Scan(q.dest...)
			} else if err = rows.Err(); err == nil {
				err = sql.ErrNoRows
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
			tag = rows.CommandTag()
		}
	}
	if pe := (*pgconn.PgError)(nil); q.required != nil && errors.As(err, &pe) && pe.Code == divisionByZero {
		err = q.required
	}
	return tag, err
}

// flush sends what is queued (and BEGIN if not sent yet) and, when commit,
// COMMIT: one round trip.
func (c *pipeConn) flush(ctx context.Context, commit bool) error {
	if c.err != nil {
		return c.err
	}
	if c.begun && len(c.queue) == 0 && !commit {
		return nil
	}
	br, err := c.send(ctx, func(b *pgx.Batch) {
		if commit {
			b.Queue("commit")
		}
	})
	if commit && err == nil {
		tag, cerr := br.Exec()
		switch {
		case cerr != nil:
			err = cerr
		case tag.String() != "COMMIT":
			err = pgx.ErrTxCommitRollback
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	c.err = err
	return err
}

// pipeTx ends the transaction: COMMIT goes out with the statements still
// queued (a failed one, a required row not found included, fails the
// COMMIT in the server); a transaction that sent nothing ends without a
// round trip.
type pipeTx struct{ c *pipeConn }

func (t pipeTx) Commit() error {
	c := t.c
	defer c.end()
	if c.err != nil {
		return c.err
	}
	if !c.begun && len(c.queue) == 0 {
		return nil
	}
	return c.flush(c.txCtx, true)
}

func (t pipeTx) Rollback() error { return t.c.end() }

// end closes the transaction on the server when it is still open there
// (after a ROLLBACK, a failed statement or a failed COMMIT) and resets the
// connection's transaction state.
func (c *pipeConn) end() (err error) {
	pc := c.Conn.Conn()
	if c.begun && !pc.IsClosed() && pc.PgConn().TxStatus() != 'I' {
		if _, err = pc.Exec(c.txCtx, "rollback"); err != nil {
			_ = pc.Close(context.Background()) // database/sql drops it at ResetSession
		}
	}
	for _, q := range c.queue { // never sent: rolled back unsent
		q.res.sent, q.res.err = true, sql.ErrTxDone
	}
	c.inTx, c.txCtx, c.begun, c.queue, c.err = false, nil, false, nil, nil
	return err
}

func values(args []driver.NamedValue) []any {
	v := make([]any, len(args))
	for i, a := range args {
		v[i] = a.Value
	}
	return v
}
