package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresDB is one Strata database in PostgreSQL: a Backend, NodeLister and Watcher. Several PostgresDBs on the same
// database, in one process or many, behave as one: every write transaction first locks the database's row, so their
// commits take turns, each sees the others' (READ COMMITTED after the lock), and branch heads checked inside a
// transaction cannot move before it commits. Reads run in REPEATABLE READ, READ ONLY transactions: one consistent
// snapshot each.
//
// Errors from an unreachable server wrap ErrUnavailable; the pool reconnects by itself, so later calls succeed once
// the server is back (there is no fail-stop: PostgreSQL, not Strata, owns durability here).
type PostgresDB struct {
	p      *Postgres
	id     int64
	name   string
	closed atomic.Bool
	// gone is set once a call found the database dropped (Dropped): a directory then opens the name anew.
	gone atomic.Bool
}

var (
	_ Backend    = (*PostgresDB)(nil)
	_ NodeLister = (*PostgresDB)(nil)
)

// Name returns the database's name.
func (d *PostgresDB) Name() string { return d.name }

// Close releases the database (the pool is the Postgres's) and ends its watches.
func (d *PostgresDB) Close() error {
	if d.closed.CompareAndSwap(false, true) {
		d.p.hub.dropDB(d)
	}
	return nil
}

func (d *PostgresDB) usable() error {
	if d.closed.Load() || d.p.closed.Load() {
		return fmt.Errorf("%w: database %q in %s", ErrClosed, d.name, d.p.where)
	}
	return nil
}

// Dropped reports whether a call on this database found it dropped (by this process or another): the name may
// have been created again since, as another database, which opening it again finds.
func (d *PostgresDB) Dropped() bool { return d.gone.Load() }

func (d *PostgresDB) dropped() error {
	d.gone.Store(true)
	return fmt.Errorf("%w: %q is no longer in %s (another process dropped it); open it again if it was re-created", ErrDropped, d.name, d.p.where)
}

// pgStmt is a write a transaction has not sent yet.
type pgStmt struct {
	sql  string
	args []any
	// check, if set, is told the statement's command tag (a read transaction's check that the database is still
	// there, sent with BEGIN).
	check func(pgconn.CommandTag) error
}

// pgCat is a transaction on one connection. Writes are queued and sent with the next read, or with the COMMIT, in
// one round trip: a commit of a small revision costs two round trips (BEGIN and the lock; the writes and COMMIT)
// plus the reads its caller makes.
type pgCat struct {
	ctx     context.Context
	d       *PostgresDB
	conn    *pgxpool.Conn
	pending []pgStmt
	inTx    bool // BEGIN has been sent

	write          bool
	wrote          bool
	last, nextID   uint64 // as the locked row says, and as this transaction leaves them
	dNodes, dBytes int64  // node count and stored bytes added (or, negative, removed)
	dRevBytes      int64  // revision record bytes added or removed
	commits        int64  // the database's commit counter before this transaction
}

func (c *pgCat) fail(doing string, err error) error { return c.d.p.fail(c.ctx, doing, err) }

// query sends the pending writes and a query in one round trip and calls each for every row. Rows are read to the
// end before query returns, so each may not issue queries of its own on the connection.
func (c *pgCat) query(doing, sql string, args []any, each func(pgx.Rows) error) error {
	if len(c.pending) == 0 {
		rows, err := c.conn.Query(c.ctx, sql, args...)
		if err != nil {
			return c.fail(doing, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return c.fail(doing, rows.Err())
	}
	b := &pgx.Batch{}
	for _, s := range c.pending {
		b.Queue(s.sql, s.args...)
	}
	b.Queue(sql, args...)
	sent := c.pending
	c.pending = nil
	br := c.conn.SendBatch(c.ctx, b)
	defer br.Close()
	for _, s := range sent {
		tag, err := br.Exec()
		if err != nil {
			return c.fail("writing", err)
		}
		if s.check != nil {
			if err := s.check(tag); err != nil {
				return err
			}
		}
	}
	c.inTx = true
	rows, err := br.Query()
	if err != nil {
		return c.fail(doing, err)
	}
	for rows.Next() {
		if err := each(rows); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c.fail(doing, err)
	}
	return c.fail(doing, br.Close())
}

func (c *pgCat) queue(sql string, args ...any) {
	c.wrote = true
	c.pending = append(c.pending, pgStmt{sql: sql, args: args})
}

// one reads one column of at most one row; ok is false when there is none.
func one[T any](c *pgCat, doing, sql string, args ...any) (v T, ok bool, err error) {
	err = c.query(doing, sql, args, func(r pgx.Rows) error {
		ok = true
		return r.Scan(&v)
	})
	return v, ok, err
}

// rollback ends the transaction without effect; a connection that cannot is closed (the pool then drops it).
func (c *pgCat) rollback() {
	pc := c.conn.Conn().PgConn()
	if pc.IsClosed() || pc.TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = c.conn.Conn().Close(ctx)
	}
}

// acquire takes a connection from the pool.
func (d *PostgresDB) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := d.p.pool.Acquire(ctx)
	if err != nil {
		return nil, d.p.fail(ctx, "connecting", err)
	}
	return conn, nil
}

// View implements Backend: fn reads one consistent snapshot (a REPEATABLE READ, READ ONLY transaction, begun with
// fn's first read in the same round trip).
func (d *PostgresDB) View(ctx context.Context, fn func(CatalogReader) error) error {
	if err := d.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := d.acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// BEGIN goes with fn's first read, and so does a look at the database's row, which the snapshot then holds: a
	// database another server dropped (and perhaps created again, under another id) is ErrDropped, not a catalog
	// that seems empty ("branch main not found"; found in review).
	c := &pgCat{ctx: ctx, d: d, conn: conn, pending: []pgStmt{{sql: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"},
		{sql: "SELECT 1 FROM strata_databases WHERE id = $1", args: []any{d.id}, check: func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() == 0 {
				return d.dropped()
			}
			return nil
		}}}}
	if err := fn(c); err != nil {
		c.rollback()
		return err
	}
	if !c.inTx {
		return nil
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		c.rollback()
		return c.fail("ending a read", err)
	}
	return nil
}

// begin starts a write transaction and locks the database's row, in one round trip. A connection that turns out
// to be dead (the server restarted since it was last used) is replaced, twice at most: nothing was done yet.
func (d *PostgresDB) begin(ctx context.Context) (*pgCat, error) {
	for attempt := 0; ; attempt++ {
		conn, err := d.acquire(ctx)
		if err != nil {
			return nil, err
		}
		c := &pgCat{ctx: ctx, d: d, conn: conn, write: true}
		b := &pgx.Batch{}
		b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
		b.Queue("SELECT last_rev, next_id, commits FROM strata_databases WHERE id = $1 FOR UPDATE", d.id)
		br := conn.SendBatch(ctx, b)
		var last, next int64
		_, err = br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&last, &next, &c.commits)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		c.inTx = true
		if err == nil {
			c.last, c.nextID = uint64(last), uint64(next)
			return c, nil
		}
		c.rollback()
		conn.Release()
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, d.dropped()
		}
		err = d.p.fail(ctx, "beginning a write", err)
		if !errors.Is(err, ErrUnavailable) || attempt == 2 {
			return nil, err
		}
	}
}

// NodeCodec implements Backend: S2, because several servers share one database, and during an upgrade an older one
// could not read zstd nodes.
func (d *PostgresDB) NodeCodec() Codec { return CodecS2 }

// Update implements Backend: fn's writes, nodes included, commit in one PostgreSQL transaction, or not at all.
// A commit whose connection is lost while COMMIT is under way returns an error wrapping ErrUnavailable that says its
// outcome is unknown: it may have been made. It never returns nil for a commit that was not made.
func (d *PostgresDB) Update(ctx context.Context, fn func(CatalogTx) error) error {
	return d.update(ctx, func(c *pgCat) error { return fn(c) })
}

func (d *PostgresDB) update(ctx context.Context, fn func(*pgCat) error) error {
	if err := d.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := d.begin(ctx)
	if err != nil {
		return err
	}
	defer c.conn.Release()
	if err := fn(c); err != nil {
		c.rollback()
		return err
	}
	if !c.wrote {
		c.rollback() // nothing to commit
		return nil
	}
	if on := d.p.opts.OnCommit; on != nil {
		t0 := time.Now()
		err := c.commit()
		on(CommitStats{Duration: time.Since(t0), Failed: err != nil})
		return err
	}
	return c.commit()
}

// commit sends the pending writes, the database row's new counters, the announcement (NOTIFY) and COMMIT in one
// round trip.
func (c *pgCat) commit() error {
	d := c.d
	b := &pgx.Batch{}
	for _, s := range c.pending {
		b.Queue(s.sql, s.args...)
	}
	c.pending = nil
	b.Queue("UPDATE strata_databases SET last_rev = $2, next_id = $3, nodes = nodes + $4, node_bytes = node_bytes + $5, rev_bytes = rev_bytes + $6, commits = $7 WHERE id = $1",
		d.id, int64(c.last), int64(c.nextID), c.dNodes, c.dBytes, c.dRevBytes, c.commits+1)
	if d.p.notify {
		b.Queue("SELECT pg_notify($1, $2)", notifyChannel, notice(d.id, c.commits+1, c.last))
	}
	// The last point where the call can still be abandoned with no effect: from here on, cancelling would leave
	// the outcome unknown.
	if err := c.ctx.Err(); err != nil {
		c.rollback()
		return err
	}
	b.Queue("COMMIT")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), d.p.opts.CommitTimeout)
	defer cancel()
	br := c.conn.SendBatch(ctx, b)
	var err error
	for i := 0; i < b.Len()-1 && err == nil; i++ {
		_, err = br.Exec()
	}
	var tag string
	atCommit := err == nil // an error from here on is COMMIT's own, or the connection's
	if err == nil {
		var t pgconn.CommandTag
		if t, err = br.Exec(); err == nil {
			tag = t.String()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		failed := d.p.fail(ctx, "committing", err)
		if ambiguous(err, atCommit) {
			// The connection failed while the commit was on its way: PostgreSQL may have made it.
			return &unavailableError{err: err, msg: fmt.Sprintf("%s: %s: the connection was lost while committing to database %q, so "+
				"the commit may or may not have been made: %s (retry with the same idempotency key when the server is back; strata reconnects by itself)",
				ErrUnavailable, d.p.where, d.name, scrub(err.Error(), d.p.pw))}
		}
		c.rollback()
		return failed
	}
	if tag != "COMMIT" {
		c.rollback()
		return fmt.Errorf("%s: database %q: the commit was rolled back (%s)", d.p.where, d.name, tag)
	}
	return nil
}

// ambiguous reports whether a commit that failed with err may nonetheless have been made: the connection failed
// (or the server ended the session: it may do so after writing the commit record) before COMMIT's answer arrived.
// An error PostgreSQL reported for a statement before COMMIT means it was not made, and so does one it reported for
// COMMIT itself (atCommit), unless the server ended the session or crashed with it (FATAL or PANIC: an fsync that
// failed after the commit record was written is a PANIC, and recovery may replay that record; found in review).
func ambiguous(err error, atCommit bool) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") ||
			atCommit && (pe.Severity == "FATAL" || pe.Severity == "PANIC")
	}
	return true
}

// GetNodes implements NodeReader: one query per 1,000 distinct hashes, each node decoded and checked against its
// hash.
func (d *PostgresDB) GetNodes(ctx context.Context, hashes []Hash) ([][]byte, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(hashes) == 0 {
		return [][]byte{}, nil
	}
	conn, err := d.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	c := &pgCat{ctx: ctx, d: d, conn: conn}
	return c.GetNodes(hashes)
}

// PutNodes implements NodeWriter, in one transaction (it locks the database's row, as commits do).
func (d *PostgresDB) PutNodes(ctx context.Context, nodes []Node) (PutStats, error) {
	if err := d.usable(); err != nil {
		return PutStats{}, err
	}
	if err := ctx.Err(); err != nil {
		return PutStats{}, err
	}
	if len(nodes) == 0 {
		return PutStats{}, nil
	}
	// Hash and compress before the transaction, so that the row lock is held only for the inserts.
	stored, err := encodeNodes(ctx, nodes, d.NodeCodec())
	if err != nil {
		return PutStats{}, err
	}
	var st PutStats
	err = d.update(ctx, func(c *pgCat) error {
		var err error
		st, err = c.putEncoded(nodes, stored)
		return err
	})
	if err != nil {
		return PutStats{}, err
	}
	return st, nil
}

// NodeHashes implements NodeLister.
func (d *PostgresDB) NodeHashes(ctx context.Context, after *Hash, limit int) ([]Hash, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	from := []byte{}
	if after != nil {
		from = after[:]
	}
	conn, err := d.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	c := &pgCat{ctx: ctx, d: d, conn: conn}
	var out []Hash
	err = c.query("listing nodes", "SELECT hash FROM strata_nodes WHERE db = $1 AND hash > $2 ORDER BY hash LIMIT $3",
		[]any{d.id, from, limit}, func(r pgx.Rows) error {
			var b []byte
			if err := r.Scan(&b); err != nil {
				return err
			}
			var h Hash
			if len(b) != len(h) {
				return fmt.Errorf("%w: a node key of %d bytes in database %q", ErrCorruptNode, len(b), d.name)
			}
			copy(h[:], b)
			out = append(out, h)
			return nil
		})
	return out, err
}

// PostgresStats describes a database in PostgreSQL.
type PostgresStats struct {
	Nodes         int64 // nodes stored
	NodeBytes     int64 // their stored (compressed) bytes
	RevisionBytes int64 // the revision records' bytes (small values live in them, inline in the root)
}

// Bytes is what the database's content occupies, before PostgreSQL's own overhead (row headers, indexes, WAL).
func (s PostgresStats) Bytes() int64 { return s.NodeBytes + s.RevisionBytes }

// Stats returns the node count and stored bytes, kept up to date by every write.
func (d *PostgresDB) Stats(ctx context.Context) (PostgresStats, error) {
	if err := d.usable(); err != nil {
		return PostgresStats{}, err
	}
	var st PostgresStats
	err := d.p.pool.QueryRow(ctx, "SELECT nodes, node_bytes, rev_bytes FROM strata_databases WHERE id = $1", d.id).Scan(&st.Nodes, &st.NodeBytes, &st.RevisionBytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, d.dropped()
	}
	return st, d.p.fail(ctx, "reading statistics", err)
}

// The catalog.

func (c *pgCat) Revision(n uint64) (RevisionRecord, error) {
	raw, ok, err := one[[]byte](c, "reading a revision", "SELECT rec FROM strata_revs WHERE db = $1 AND n = $2", c.d.id, int64(n))
	if err != nil {
		return RevisionRecord{}, err
	}
	if !ok {
		return RevisionRecord{}, ErrNotFound
	}
	r, err := decodeJSON[RevisionRecord](revKey(n), raw)
	if err != nil {
		return r, err
	}
	if r.Number != n {
		return r, fmt.Errorf("%w: the record stored as revision %d says it is revision %d", ErrCorruptNode, n, r.Number)
	}
	return r, nil
}

func revKey(n uint64) []byte { return []byte("revision " + strconv.FormatUint(n, 10)) }

func (c *pgCat) LastRevision() (uint64, error) {
	if c.write {
		return c.last, nil
	}
	return c.counter("the last revision", "last_rev")
}

// counter reads one of the database row's counters (column, a constant) in a read transaction; a write
// transaction keeps its own copies, locked at its start.
func (c *pgCat) counter(what, column string) (uint64, error) {
	v, ok, err := one[int64](c, "reading "+what, "SELECT "+column+" FROM strata_databases WHERE id = $1", c.d.id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, c.d.dropped()
	}
	return uint64(v), nil
}

// pgPage is how many rows a listing reads per query: a caller that stops early does not pay for the rest.
const pgPage = 128

func (c *pgCat) Revisions(from uint64, fn func(RevisionRecord) bool) error {
	for next := int64(min(from, 1<<63-1)); next > 0; {
		var page []RevisionRecord
		err := c.query("listing revisions", "SELECT n, rec FROM strata_revs WHERE db = $1 AND n <= $2 ORDER BY n DESC LIMIT $3",
			[]any{c.d.id, next, pgPage}, func(r pgx.Rows) error {
				var n int64
				var raw []byte
				if err := r.Scan(&n, &raw); err != nil {
					return err
				}
				rec, err := decodeJSON[RevisionRecord](revKey(uint64(n)), raw)
				if err != nil {
					return err
				}
				page = append(page, rec)
				next = n - 1
				return nil
			})
		if err != nil {
			return err
		}
		for _, r := range page {
			if !fn(r) {
				return nil
			}
		}
		if len(page) < pgPage {
			return nil
		}
	}
	return nil
}

func getRecord[T any](c *pgCat, table, name string) (T, error) {
	raw, ok, err := one[[]byte](c, "reading "+table, "SELECT rec FROM "+table+" WHERE db = $1 AND name = $2", c.d.id, []byte(name))
	if err != nil {
		var v T
		return v, err
	}
	if !ok {
		var v T
		return v, ErrNotFound
	}
	return decodeJSON[T]([]byte(name), raw)
}

func listRecords[T any](c *pgCat, table string) ([]T, error) {
	out := []T{}
	err := c.query("listing "+table, "SELECT name, rec FROM "+table+" WHERE db = $1 ORDER BY name", []any{c.d.id}, func(r pgx.Rows) error {
		var name, raw []byte
		if err := r.Scan(&name, &raw); err != nil {
			return err
		}
		v, err := decodeJSON[T](name, raw)
		out = append(out, v)
		return err
	})
	return out, err
}

func (c *pgCat) Branch(name string) (BranchRecord, error) {
	return getRecord[BranchRecord](c, "strata_branches", name)
}

func (c *pgCat) Branches() ([]BranchRecord, error) {
	return listRecords[BranchRecord](c, "strata_branches")
}

func (c *pgCat) Label(name string) (LabelRecord, error) {
	return getRecord[LabelRecord](c, "strata_labels", name)
}

func (c *pgCat) Labels() ([]LabelRecord, error) { return listRecords[LabelRecord](c, "strata_labels") }

func (c *pgCat) HeadAt(id uint64, at time.Time) (uint64, bool, error) {
	rev, ok, err := one[int64](c, "reading the head log",
		"SELECT rev FROM strata_headlog WHERE db = $1 AND branch = $2 AND t <= $3 ORDER BY t DESC LIMIT 1", c.d.id, int64(id), unixNano(at))
	return uint64(rev), ok, err
}

func (c *pgCat) Idempotent(key string) (uint64, bool, error) {
	rev, ok, err := one[int64](c, "reading an idempotency key", "SELECT rev FROM strata_idem WHERE db = $1 AND key = $2", c.d.id, []byte(key))
	return uint64(rev), ok, err
}

func (c *pgCat) Get(bucket, key string) ([]byte, bool, error) {
	raw, ok, err := one[[]byte](c, "reading "+bucket, "SELECT val FROM strata_kv WHERE db = $1 AND bucket = $2 AND key = $3",
		c.d.id, []byte(bucket), []byte(key))
	if err != nil || !ok {
		return nil, false, err
	}
	body, err := unseal([]byte(key), raw)
	return body, err == nil, err
}

func (c *pgCat) Scan(bucket string, fn func(string, []byte) bool) error {
	after := []byte{}
	for {
		type kv struct {
			k string
			v []byte
		}
		var page []kv
		err := c.query("listing "+bucket, "SELECT key, val FROM strata_kv WHERE db = $1 AND bucket = $2 AND key > $3 ORDER BY key LIMIT $4",
			[]any{c.d.id, []byte(bucket), after, pgPage}, func(r pgx.Rows) error {
				var k, raw []byte
				if err := r.Scan(&k, &raw); err != nil {
					return err
				}
				body, err := unseal(k, raw)
				if err != nil {
					return err
				}
				page = append(page, kv{string(k), body})
				after = k
				return nil
			})
		if err != nil {
			return err
		}
		for _, e := range page {
			if !fn(e.k, e.v) {
				return nil
			}
		}
		if len(page) < pgPage {
			return nil
		}
	}
}

// pgNodesPerQuery bounds the hashes of one read; pgBytesPerInsert the node bytes of one insert.
const (
	pgNodesPerQuery  = 1000
	pgBytesPerInsert = 8 << 20
)

func (c *pgCat) GetNodes(hs []Hash) ([][]byte, error) {
	if len(hs) == 0 {
		return [][]byte{}, nil
	}
	found := make(map[Hash][]byte, len(hs))
	var keys [][]byte
	seen := make(map[Hash]bool, len(hs))
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		err := c.query("reading nodes", "SELECT hash, data FROM strata_nodes WHERE db = $1 AND hash = ANY($2)", []any{c.d.id, keys},
			func(r pgx.Rows) error {
				var k, v []byte
				if err := r.Scan(&k, &v); err != nil {
					return err
				}
				var h Hash
				copy(h[:], k)
				found[h] = v
				return nil
			})
		keys = keys[:0]
		return err
	}
	for _, h := range hs {
		if seen[h] {
			continue
		}
		seen[h] = true
		keys = append(keys, bytes.Clone(h[:]))
		if len(keys) == pgNodesPerQuery {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	out := make([][]byte, len(hs))
	for i, h := range hs {
		v, ok := found[h]
		if !ok {
			// Named as a node that does not decode is, for the operator's log (gate.FileFaultHint).
			return nil, fmt.Errorf("database %q in %s: %w", c.d.name, c.d.p.where, &MissingError{Hash: h})
		}
		data, err := decodeStored(h, v)
		if err != nil {
			return nil, fmt.Errorf("database %q in %s: %w", c.d.name, c.d.p.where, err)
		}
		out[i] = data
	}
	return out, nil
}

func (c *pgCat) PutNodes(nodes []Node) (PutStats, error) {
	if len(nodes) == 0 {
		return PutStats{}, nil
	}
	stored, err := encodeNodes(c.ctx, nodes, c.d.NodeCodec())
	if err != nil {
		return PutStats{}, err
	}
	return c.putEncoded(nodes, stored)
}

// putEncoded inserts the nodes not already present (duplicates in nodes count once), in hash order, a few MiB per
// statement, and counts what it added.
func (c *pgCat) putEncoded(nodes []Node, stored [][]byte) (PutStats, error) {
	idx := make([]int, 0, len(nodes))
	seen := make(map[Hash]bool, len(nodes))
	for i, n := range nodes {
		if !seen[n.Hash] {
			seen[n.Hash] = true
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(nodes[a].Hash[:], nodes[b].Hash[:]) })
	byHash := make(map[Hash]int, len(idx))
	for _, i := range idx {
		byHash[nodes[i].Hash] = i
	}
	var st PutStats
	for start := 0; start < len(idx); {
		var keys, vals [][]byte
		size := 0
		end := start
		for ; end < len(idx) && (end == start || size+len(stored[idx[end]]) <= pgBytesPerInsert); end++ {
			i := idx[end]
			keys = append(keys, nodes[i].Hash[:])
			vals = append(vals, stored[i])
			size += len(stored[i])
		}
		start = end
		err := c.query("writing nodes",
			"INSERT INTO strata_nodes (db, hash, data) SELECT $1, h, d FROM unnest($2::bytea[], $3::bytea[]) AS u(h, d) ON CONFLICT DO NOTHING RETURNING hash",
			[]any{c.d.id, keys, vals}, func(r pgx.Rows) error {
				var k []byte
				if err := r.Scan(&k); err != nil {
					return err
				}
				var h Hash
				copy(h[:], k)
				i, ok := byHash[h]
				if !ok {
					return fmt.Errorf("PostgreSQL reported inserting node %s, which was not asked for", h.Short())
				}
				st.Nodes++
				st.RawBytes += int64(len(nodes[i].Data))
				st.StoredBytes += int64(len(stored[i]))
				return nil
			})
		if err != nil {
			return PutStats{}, err
		}
	}
	if st.Nodes > 0 {
		c.wrote = true
		c.dNodes += int64(st.Nodes)
		c.dBytes += st.StoredBytes
	}
	return st, nil
}

func sealJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return seal(raw), nil
}

func (c *pgCat) AddRevision(r RevisionRecord) error {
	if r.Number != c.last+1 {
		return errOutOfOrder(r.Number, c.last)
	}
	return c.putRevision(r)
}

// putRevision queues the insert of a revision record whose number its caller has checked.
func (c *pgCat) putRevision(r RevisionRecord) error {
	raw, err := sealJSON(r)
	if err != nil {
		return err
	}
	c.queue("INSERT INTO strata_revs (db, n, rec) VALUES ($1, $2, $3)", c.d.id, int64(r.Number), raw)
	c.last = r.Number
	c.dRevBytes += int64(len(raw))
	return nil
}

func (c *pgCat) putRecord(table, name string, v any) error {
	raw, err := sealJSON(v)
	if err != nil {
		return err
	}
	c.queue("INSERT INTO "+table+" (db, name, rec) VALUES ($1, $2, $3) ON CONFLICT (db, name) DO UPDATE SET rec = excluded.rec",
		c.d.id, []byte(name), raw)
	return nil
}

func (c *pgCat) PutBranch(b BranchRecord) error { return c.putRecord("strata_branches", b.Name, b) }

func (c *pgCat) DeleteBranch(name string) error {
	c.queue("DELETE FROM strata_branches WHERE db = $1 AND name = $2", c.d.id, []byte(name))
	return nil
}

func (c *pgCat) PutLabel(l LabelRecord) error { return c.putRecord("strata_labels", l.Name, l) }

func (c *pgCat) DeleteLabel(name string) error {
	c.queue("DELETE FROM strata_labels WHERE db = $1 AND name = $2", c.d.id, []byte(name))
	return nil
}

func (c *pgCat) LogHead(id uint64, at time.Time, rev uint64) error {
	c.queue("INSERT INTO strata_headlog (db, branch, t, rev) VALUES ($1, $2, $3, $4) ON CONFLICT (db, branch, t) DO UPDATE SET rev = excluded.rev",
		c.d.id, int64(id), unixNano(at), int64(rev))
	return nil
}

func (c *pgCat) SetIdempotent(key string, rev uint64) error {
	c.queue("INSERT INTO strata_idem (db, key, rev) VALUES ($1, $2, $3) ON CONFLICT (db, key) DO UPDATE SET rev = excluded.rev",
		c.d.id, []byte(key), int64(rev))
	return nil
}

func (c *pgCat) Put(bucket, key string, val []byte) error {
	c.queue("INSERT INTO strata_kv (db, bucket, key, val) VALUES ($1, $2, $3, $4) ON CONFLICT (db, bucket, key) DO UPDATE SET val = excluded.val",
		c.d.id, []byte(bucket), []byte(key), seal(bytes.Clone(val)))
	return nil
}

func (c *pgCat) Delete(bucket, key string) error {
	c.queue("DELETE FROM strata_kv WHERE db = $1 AND bucket = $2 AND key = $3", c.d.id, []byte(bucket), []byte(key))
	return nil
}

func (c *pgCat) NextID() (uint64, error) {
	c.nextID++
	c.wrote = true
	return c.nextID, nil
}

func (c *pgCat) DeleteNodes(hs []Hash) (int, int64, error) {
	if len(hs) == 0 {
		return 0, 0, nil
	}
	n, total := 0, int64(0)
	for start := 0; start < len(hs); start += pgNodesPerQuery {
		var keys [][]byte
		for _, h := range hs[start:min(len(hs), start+pgNodesPerQuery)] {
			keys = append(keys, bytes.Clone(h[:]))
		}
		err := c.query("deleting nodes", "DELETE FROM strata_nodes WHERE db = $1 AND hash = ANY($2) RETURNING octet_length(data)",
			[]any{c.d.id, keys}, func(r pgx.Rows) error {
				var size int64
				if err := r.Scan(&size); err != nil {
					return err
				}
				n++
				total += size
				return nil
			})
		if err != nil {
			return 0, 0, err
		}
	}
	if n > 0 {
		c.wrote = true
		c.dNodes -= int64(n)
		c.dBytes -= total
	}
	return n, total, nil
}

func (c *pgCat) DeleteRevision(n uint64) error {
	if n == 0 || n >= c.last {
		return nil // the newest revision stays, so numbers are never reused
	}
	size, ok, err := one[int64](c, "deleting a revision", "DELETE FROM strata_revs WHERE db = $1 AND n = $2 RETURNING octet_length(rec)", c.d.id, int64(n))
	if err != nil || !ok {
		return err
	}
	c.wrote = true
	c.dRevBytes -= size
	return nil
}
