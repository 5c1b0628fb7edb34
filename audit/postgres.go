package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The audit log of a data location in PostgreSQL (docs/postgres.md) is a table, not a file: the same records, the
// same chain, each line exactly as the file would hold it, so that Verify and Read check and read it unchanged.
//
//	strata_audit       seq bigint PRIMARY KEY, line text: one row per record
//	strata_audit_head  one row: the last record's seq and hash
//
// Both are made by the Strata schema's migrations (store/postgres.go, schema version 2). Every process on the URL
// appends to the one log. An append is one transaction that first locks the head row (SELECT … FOR UPDATE; plain SQL
// that CockroachDB and YugabyteDB run too), so that appenders in any number of processes take turns and the chain
// stays linear; the primary key on seq refuses a second record with the same number should the lock ever fail to
// serialise them. A record is acknowledged once PostgreSQL has committed it (fsynced, with the server's default
// synchronous_commit). There are no torn lines: a record is in the table whole, or not at all.
//
// The head row also lets VerifyPostgres find what the file's chain alone cannot: records deleted from the end.

// pgTable is the table behind a Log opened with OpenPostgres.
type pgTable struct {
	pool  *pgxpool.Pool
	where string
}

// pgTimeout bounds one append or check: a server that does not answer in that long is unavailable, and the call
// the record describes is refused (fail closed).
const pgTimeout = 15 * time.Second

// OpenPostgres returns the audit log kept in the strata_audit table of the PostgreSQL database that pool connects
// to (in the schema its search_path selects); location names it in messages (a URL without password). The pool
// stays its owner's: Close does not close it. It fails if the table is not there (the schema was not made by
// store.OpenPostgres, or is older than version 2). key, when set, keys the chain as Options.Key does a file's (the
// table does not rotate: Options.MaxBytes has no meaning for it).
func OpenPostgres(ctx context.Context, pool *pgxpool.Pool, location string, key *Key) (*Log, error) {
	t := &pgTable{pool: pool, where: location}
	var seq int64
	if err := pool.QueryRow(ctx, `SELECT seq FROM strata_audit_head WHERE id = 1`).Scan(&seq); err != nil {
		return nil, t.fail("opening", err)
	}
	l := &Log{path: location + " (table strata_audit)", now: time.Now, table: t, key: key}
	// As a file's: a keyed chain is opened only with its key (a *KeyError otherwise).
	if lastKeyID, err := t.check(); err != nil {
		return nil, err
	} else if err := l.keyCheck(lastKeyID); err != nil {
		return nil, err
	}
	return l, nil
}

func (t *pgTable) fail(doing string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		err = errors.New("the table strata_audit_head has no row: the schema is damaged")
	}
	return fmt.Errorf("audit: %s the audit log in %s: %w", doing, t.where, err)
}

// append writes rec after the last record, under the head row's lock. seal completes its chain.
func (t *pgTable) append(rec Record, seal func(Record, uint64, string, string) (Record, []byte, error)) (Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	conn, err := t.pool.Acquire(ctx)
	if err != nil {
		return rec, t.fail("appending to", err)
	}
	defer conn.Release()
	// BEGIN and the lock in one round trip; the record, the head and COMMIT in another.
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	// The last record's line too: its key id says whether the chain is keyed (Log.seal refuses to extend a keyed
	// chain without its key).
	b.Queue(`SELECT h.seq, h.hash, coalesce((SELECT a.line FROM strata_audit a WHERE a.seq = h.seq), '')
		FROM strata_audit_head h WHERE h.id = 1 FOR UPDATE OF h`)
	var seq int64
	var prev, lastLine string
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&seq, &prev, &lastLine)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	rollback := func() {
		if pc := conn.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
			if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
				_ = conn.Conn().Close(ctx)
			}
		}
	}
	if err != nil {
		rollback()
		return rec, t.fail("appending to", err)
	}
	var last Record
	if lastLine != "" {
		if err := last.UnmarshalJSON([]byte(lastLine)); err != nil {
			rollback()
			return rec, t.fail("appending to", fmt.Errorf("its last record (seq %d) is not a record: %w", seq, err))
		}
	}
	rec, line, err := seal(rec, uint64(seq), prev, last.KeyID)
	if err != nil {
		rollback()
		return rec, err
	}
	b = &pgx.Batch{}
	b.Queue("INSERT INTO strata_audit (seq, line) VALUES ($1, $2)", int64(rec.Seq), string(line))
	b.Queue("UPDATE strata_audit_head SET seq = $1, hash = $2 WHERE id = 1", int64(rec.Seq), rec.Hash)
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	for i := 0; i < b.Len() && err == nil; i++ {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("the append was rolled back (%s)", tag)
	}
	if err != nil {
		rollback()
		return rec, t.fail("appending to", err)
	}
	return rec, nil
}

// check reports whether a record could be appended now: the server answers and the head row is there; and the
// key id of the last record, for Log.Check to see that the log's key fits the chain.
func (t *pgTable) check() (lastKeyID string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	var line string
	if err := t.pool.QueryRow(ctx, `SELECT coalesce((SELECT a.line FROM strata_audit a WHERE a.seq = h.seq), '')
		FROM strata_audit_head h WHERE h.id = 1`).Scan(&line); err != nil {
		return "", t.fail("checking", err)
	}
	if line == "" {
		return "", nil
	}
	var last Record
	if err := last.UnmarshalJSON([]byte(line)); err != nil {
		return "", t.fail("checking", fmt.Errorf("its last record is not a record: %w", err))
	}
	return last.KeyID, nil
}

// pgPage is how many lines ReadPostgres reads per query.
const pgPage = 1000

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ReadPostgres returns the audit log kept in PostgreSQL as the file would hold it: each record's line and '\n', in
// seq order, read a page at a time as the reader is read. Read and Verify take it as they take the file.
func ReadPostgres(ctx context.Context, pool *pgxpool.Pool) io.ReadCloser {
	return &pgLines{ctx: ctx, q: pool, upTo: 1<<63 - 1}
}

type pgLines struct {
	ctx   context.Context
	q     querier
	after int64 // the seq of the last row read
	upTo  int64 // the last seq to read
	buf   bytes.Buffer
	last  string // the last line handed out
	done  bool
	err   error
}

func (r *pgLines) Read(p []byte) (int, error) {
	for r.buf.Len() == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		r.err = r.page()
	}
	return r.buf.Read(p)
}

func (r *pgLines) page() error {
	rows, err := r.q.Query(r.ctx, `SELECT seq, line FROM strata_audit WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3`, r.after, r.upTo, pgPage)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	n := 0
	for rows.Next() {
		var line string
		if err := rows.Scan(&r.after, &line); err != nil {
			rows.Close()
			return fmt.Errorf("reading the audit log: %w", err)
		}
		r.buf.WriteString(line)
		r.buf.WriteByte('\n')
		r.last = line
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	r.done = n < pgPage
	return nil
}

func (r *pgLines) Close() error { return nil }

// VerifyPostgres verifies the audit log kept in PostgreSQL as Verify does the file, in one consistent snapshot of
// it, and also checks the head row: records deleted from the end of the table, which the chain alone cannot show,
// are found because the head still names the last record appended, and rows after the head (inserted without an
// append) are found too. It returns the number of records that check out; a *VerifyError names the first bad line
// (its seq).
//
// key verifies a keyed chain as VerifyWith does (nil: unkeyed).
func VerifyPostgres(ctx context.Context, pool *pgxpool.Pool, key *Key) (int, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("reading the audit log: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var headSeq, maxSeq int64
	var headHash string
	if err := tx.QueryRow(ctx, `SELECT seq, hash, (SELECT coalesce(max(seq), 0) FROM strata_audit) FROM strata_audit_head WHERE id = 1`).
		Scan(&headSeq, &headHash, &maxSeq); err != nil {
		return 0, fmt.Errorf("reading the audit log's head: %w", err)
	}
	lines := &pgLines{ctx: ctx, q: tx, upTo: headSeq}
	n, err := VerifyWith(lines, key)
	if err != nil {
		return n, err
	}
	switch {
	case int64(n) < headSeq:
		return n, &VerifyError{Line: n + 1, Problem: fmt.Sprintf("missing: the head row says the log has %d records, and the table ends at %d: "+
			"the last %d record(s) were deleted", headSeq, n, headSeq-int64(n))}
	case maxSeq > headSeq:
		return n, &VerifyError{Line: int(headSeq) + 1, Problem: fmt.Sprintf("the table has records up to seq %d after the last one appended (%d): they were inserted behind the log's back",
			maxSeq, headSeq)}
	case headSeq > 0:
		var last Record
		if err := json.Unmarshal([]byte(lines.last), &last); err != nil || last.Hash != headHash {
			return n - 1, &VerifyError{Line: n, Problem: "the last record is not the one the head row names: it was replaced"}
		}
	}
	return n, nil
}
