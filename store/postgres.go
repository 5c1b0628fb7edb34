package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The PostgreSQL backend (docs/storage.md §9). Many Strata databases live in one PostgreSQL database (in the schema its
// search_path selects), in a handful of tables keyed by a database id:
//
//	strata_schema     the schema version (one row)
//	strata_databases  id, name, creation time, last revision, next id, node count, stored bytes of nodes and of
//	                  revision records, commit count: the row every
//	                  write of the database locks first (SELECT … FOR UPDATE), so that the writers of one database,
//	                  in any number of processes, take turns, and revision numbers stay gap-free
//	strata_nodes      (db, hash) → the node's stored form (codec byte + S2 block, as in a format-2 bbolt file);
//	                  put-if-absent
//	strata_revs       (db, n) → revision record (sealed JSON, as in bbolt)
//	strata_branches   (db, name) → branch record
//	strata_labels     (db, name) → label record
//	strata_headlog    (db, branch id, time in ns) → revision: each branch's head log
//	strata_idem       (db, key) → revision
//	strata_kv         (db, bucket, key) → value: plans, approvals, GC state
//	strata_audit      seq → the audit log's line (package audit, audit/postgres.go): one log per installation
//	strata_audit_head the last record's seq and hash (one row), the lock appenders take in turn
//
// Names and keys are bytea, so that they order bytewise (as in bbolt) whatever the server's collation. Everything
// here is plain SQL that CockroachDB and YugabyteDB also run, except LISTEN/NOTIFY (used only when the server is
// PostgreSQL itself; elsewhere Watch polls) and the storage setting of strata_nodes.data (skipped elsewhere): see
// docs/postgres.md.

// ErrUnavailable is wrapped by errors of a backend whose storage cannot be reached right now: the connection dropped,
// the server is restarting or refuses connections. The call had no effect, except for a commit whose connection was
// lost while it was being committed: its outcome is unknown (the error says so), and the caller retries it with its
// idempotency key. The backend reconnects by itself; later calls succeed once the server is back.
var ErrUnavailable = errors.New("storage is unavailable")

// ErrExists is returned when creating a database whose name is taken.
var ErrExists = errors.New("database already exists")

// ErrDropped is returned by calls on a database that was dropped (by this process or another) after it was opened.
var ErrDropped = errors.New("database was dropped")

// PostgresSchema is the version of the PostgreSQL schema this build reads and writes. OpenPostgres migrates older
// schemas forward and refuses newer ones.
const PostgresSchema = 2

// notifyChannel is the LISTEN/NOTIFY channel commits are announced on; the payload is "DATABASE-ID REVISION".
const notifyChannel = "strata_commits"

// PostgresOptions tunes OpenPostgres. The zero value gives the defaults.
type PostgresOptions struct {
	// MaxConns bounds the pool (default: pgxpool's, the larger of 4 and the number of CPUs; the URL's
	// pool_max_conns parameter also sets it).
	MaxConns int32
	// PollInterval is how often Watch polls while it cannot listen for notifications (the listening connection
	// dropped, or the server has no LISTEN/NOTIFY), and a tenth as often while it can (default 500 ms).
	PollInterval time.Duration
	// CommitTimeout bounds a COMMIT once sent (default 30 s). It cannot be cancelled: cancelling it would make its
	// outcome unknown. A COMMIT that times out is reported as unavailable, outcome unknown.
	CommitTimeout time.Duration
	// ConnectTimeout bounds opening a connection when the URL sets none (default 10 s).
	ConnectTimeout time.Duration
	// OnCommit, when set, is told about every write transaction committed (or that failed to commit): the
	// duration of the round trip that carries its writes and COMMIT. OnRoundTrip, when set, hears the duration of
	// every round trip to the server: each query, batch and COPY. Both are called synchronously: they must be
	// quick.
	OnCommit    func(CommitStats)
	OnRoundTrip func(time.Duration)
}

// Postgres is one PostgreSQL database holding Strata databases, with a pool of connections to it. Its methods are
// safe for concurrent use.
type Postgres struct {
	pool   *pgxpool.Pool
	cfg    *pgxpool.Config
	opts   PostgresOptions
	where  string // "PostgreSQL at HOST:PORT, database DB" for messages: never the password
	loc    string // postgres://USER@HOST:PORT/DB, the URL without password or parameters
	pw     string // the password, to scrub from messages that might echo it
	notify bool   // the server has LISTEN/NOTIFY
	closed atomic.Bool
	hub    *pgHub
}

// LooksLikeURL reports whether a data location is a URL (SCHEME://…) rather than a directory.
func LooksLikeURL(s string) bool { return urlLike.MatchString(s) }

var urlLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// IsPostgresURL reports whether a data location is a postgres:// or postgresql:// URL.
func IsPostgresURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// OpenPostgres connects to the PostgreSQL database at rawURL and migrates its Strata schema forward. Every
// connection parameter (TLS included) comes from the URL or the standard PG* environment variables. Errors name the
// host and database, never the password: they wrap ErrUnavailable when the server cannot be reached, ErrFormat when
// its schema is newer than this build's.
func OpenPostgres(ctx context.Context, rawURL string, opts *PostgresOptions) (*Postgres, error) {
	var o PostgresOptions
	if opts != nil {
		o = *opts
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.CommitTimeout <= 0 {
		o.CommitTimeout = 30 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	pw := urlPassword(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx's message quotes the URL with its password masked.
		return nil, fmt.Errorf("invalid PostgreSQL URL: %s", scrub(err.Error(), pw))
	}
	if cfg.ConnConfig.Password != "" {
		pw = cfg.ConnConfig.Password
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if o.OnRoundTrip != nil {
		cfg.ConnConfig.Tracer = &pgTracer{onRoundTrip: o.OnRoundTrip}
	}
	host := cfg.ConnConfig.Host
	if strings.HasPrefix(host, "/") {
		host += " (socket)"
	} else {
		host = net.JoinHostPort(host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	}
	p := &Postgres{cfg: cfg, opts: o, pw: pw,
		where: fmt.Sprintf("PostgreSQL at %s, database %s", host, cfg.ConnConfig.Database),
		loc:   (&url.URL{Scheme: "postgres", User: url.User(cfg.ConnConfig.User), Host: host, Path: "/" + cfg.ConnConfig.Database}).String()}
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") {
		p.loc = fmt.Sprintf("postgres://%s@/%s?host=%s", cfg.ConnConfig.User, cfg.ConnConfig.Database, cfg.ConnConfig.Host)
	}
	p.hub = newPGHub(p)
	if p.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, p.fail(ctx, "connecting", err)
	}
	if err := p.pool.Ping(ctx); err != nil {
		p.pool.Close()
		return nil, p.openError(ctx, err)
	}
	if err := p.migrate(ctx); err != nil {
		p.pool.Close()
		return nil, err
	}
	return p, nil
}

// Location returns the URL of the database without password or parameters, for messages and listings.
func (p *Postgres) Location() string { return p.loc }

// Pool is the connection pool, for what keeps its own tables in the same schema (the audit log: audit/postgres.go).
// It is closed by Close.
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }

// Close closes the pool and the notification listener. Backends opened from p stop working.
func (p *Postgres) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	p.hub.stop()
	p.pool.Close()
	return nil
}

// openError explains why the first connection failed.
func (p *Postgres) openError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("connecting to %s: %w", p.where, cerr)
	}
	hint := "check that the server is running and that the URL's host and port are right"
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "3D000":
			hint = "create the database (createdb " + p.cfg.ConnConfig.Database + ") or fix the URL"
		case strings.HasPrefix(pe.Code, "28"):
			hint = "check the user and password (in the URL, PGPASSWORD or ~/.pgpass)"
		}
	}
	msg := fmt.Sprintf("cannot connect to %s as user %s: %s; %s", p.where, p.cfg.ConnConfig.User, scrub(err.Error(), p.pw), hint)
	if isUnavailable(err) {
		return &unavailableError{msg: ErrUnavailable.Error() + ": " + msg, err: err}
	}
	return &wrappedError{msg: msg, err: err}
}

// urlPassword returns the password a URL carries (userinfo or password parameter), if any.
func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if pw, ok := u.User.Password(); ok {
		return pw
	}
	return u.Query().Get("password")
}

// scrub removes a password from a message, in case a driver or server echoed it.
func scrub(msg, pw string) string {
	if len(pw) < 3 {
		return msg
	}
	return strings.ReplaceAll(msg, pw, "xxxxx")
}

// unavailableError is a call that failed because the storage could not be reached.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string { return e.msg }
func (e *unavailableError) Unwrap() []error {
	return []error{ErrUnavailable, e.err}
}

// fail turns a driver error into the error a caller sees: the caller's own cancellation as ctx.Err(), an
// unreachable server as ErrUnavailable, anything else (a bug, a damaged schema) as is, with where it happened.
func (p *Postgres) fail(ctx context.Context, doing string, err error) error {
	if err == nil {
		return nil
	}
	if p.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, p.where)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %s: %w", p.where, doing, cerr)
	}
	msg := scrub(err.Error(), p.pw)
	if isUnavailable(err) {
		return &unavailableError{msg: fmt.Sprintf("%s: %s: %s: %s (%s)", ErrUnavailable, p.where, doing, msg, retryHint), err: err}
	}
	return &wrappedError{msg: fmt.Sprintf("%s: %s: %s", p.where, doing, msg), err: err}
}

// wrappedError is an error with a message of its own (scrubbed of any password) over the driver's.
type wrappedError struct {
	msg string
	err error
}

func (e *wrappedError) Error() string { return e.msg }
func (e *wrappedError) Unwrap() error { return e.err }

const retryHint = "retry when it is back; strata reconnects by itself"

// isUnavailable tells a server that cannot be reached or is going away from an error in what was asked.
func isUnavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case strings.HasPrefix(pe.Code, "53"): // insufficient resources: too many connections, disk full, out of memory
			return true
		case strings.HasPrefix(pe.Code, "57P"): // shutting down, crashed, starting up
			return true
		case pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock: nothing was done, retry
			return true
		case pe.Code == "58030": // I/O error on the server
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "closed pool")
}

// The schema, as the statements that take a schema from version i to i+1 (migrations[i]).
var migrations = [][]string{{
	`CREATE TABLE strata_databases (
		id bigint PRIMARY KEY,
		name text NOT NULL UNIQUE,
		created timestamptz NOT NULL,
		last_rev bigint NOT NULL DEFAULT 0,
		next_id bigint NOT NULL DEFAULT 0,
		nodes bigint NOT NULL DEFAULT 0,
		node_bytes bigint NOT NULL DEFAULT 0,
		rev_bytes bigint NOT NULL DEFAULT 0,
		commits bigint NOT NULL DEFAULT 0
	)`,
	`CREATE TABLE strata_nodes (db bigint NOT NULL, hash bytea NOT NULL, data bytea NOT NULL, PRIMARY KEY (db, hash))`,
	`CREATE TABLE strata_revs (db bigint NOT NULL, n bigint NOT NULL, rec bytea NOT NULL, PRIMARY KEY (db, n))`,
	`CREATE TABLE strata_branches (db bigint NOT NULL, name bytea NOT NULL, rec bytea NOT NULL, PRIMARY KEY (db, name))`,
	`CREATE TABLE strata_labels (db bigint NOT NULL, name bytea NOT NULL, rec bytea NOT NULL, PRIMARY KEY (db, name))`,
	`CREATE TABLE strata_headlog (db bigint NOT NULL, branch bigint NOT NULL, t bigint NOT NULL, rev bigint NOT NULL, PRIMARY KEY (db, branch, t))`,
	`CREATE TABLE strata_idem (db bigint NOT NULL, key bytea NOT NULL, rev bigint NOT NULL, PRIMARY KEY (db, key))`,
	`CREATE TABLE strata_kv (db bigint NOT NULL, bucket bytea NOT NULL, key bytea NOT NULL, val bytea NOT NULL, PRIMARY KEY (db, bucket, key))`,
}, {
	// Version 2: the audit log as a table (audit/postgres.go): each line exactly as the file would hold it, and the
	// head row that appenders lock (SELECT … FOR UPDATE) to keep the chain one chain.
	`CREATE TABLE strata_audit (seq bigint PRIMARY KEY, line text NOT NULL)`,
	`CREATE TABLE strata_audit_head (id int PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL, hash text NOT NULL)`,
	`INSERT INTO strata_audit_head (id, seq, hash) VALUES (1, 0, '')`,
}}

// pgOnly are statements of each migration that only PostgreSQL itself runs (and that only tune it): nodes are
// compressed already, so PostgreSQL should not try to compress them again (EXTERNAL: out of line, uncompressed).
var pgOnly = [][]string{{
	`ALTER TABLE strata_nodes ALTER COLUMN data SET STORAGE EXTERNAL`,
}, {}}

// migrate creates or upgrades the schema, in one transaction that holds the schema row's lock, so that processes
// starting together take turns. It refuses a schema newer than this build's.
func (p *Postgres) migrate(ctx context.Context) error {
	var version string
	if err := p.pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return p.fail(ctx, "reading the server version", err)
	}
	pgItself := !strings.Contains(version, "CockroachDB") && !strings.Contains(version, "-YB-")
	p.notify = pgItself
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = p.migrateOnce(ctx, pgItself); err == nil {
			return nil
		}
		var pe *pgconn.PgError
		// Two processes creating strata_schema at once: one of them fails on the catalog's unique index (23505), or
		// finds the table's row type made a moment before (42710, "type strata_schema already exists"), or the
		// table itself (42P07). Again: IF NOT EXISTS then sees it.
		if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42P07" && pe.Code != "42710") {
			break
		}
	}
	if errors.Is(err, ErrFormat) {
		return err
	}
	return p.fail(ctx, "migrating the schema", err)
}

func (p *Postgres) migrateOnce(ctx context.Context, pgItself bool) error {
	if _, err := p.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS strata_schema (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)`); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO strata_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT version FROM strata_schema WHERE id = 1 FOR UPDATE`).Scan(&v); err != nil {
			return err
		}
		if v > PostgresSchema {
			return fmt.Errorf("%w: the Strata schema in %s is version %d, and this build knows versions up to %d: use the strata build that wrote it, or a newer one",
				ErrFormat, p.where, v, PostgresSchema)
		}
		for ; v < PostgresSchema; v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("schema version %d: %w", v+1, err)
				}
			}
			if pgItself {
				for _, stmt := range pgOnly[v] {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return fmt.Errorf("schema version %d: %w", v+1, err)
					}
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE strata_schema SET version = $1 WHERE id = 1`, v+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// Names lists the databases, in name order.
func (p *Postgres) Names(ctx context.Context) ([]string, error) {
	rows, err := p.pool.Query(ctx, `SELECT name FROM strata_databases`)
	if err != nil {
		return nil, p.fail(ctx, "listing databases", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, p.fail(ctx, "listing databases", err)
	}
	sort.Strings(names)
	return names, nil
}

// Create makes a new, empty database (its first revision is the caller's to write). It fails with an error
// wrapping ErrExists if the name is taken.
func (p *Postgres) Create(ctx context.Context, name string) (*PostgresDB, error) {
	for {
		id, err := randomID()
		if err != nil {
			return nil, err
		}
		tag, err := p.pool.Exec(ctx, `INSERT INTO strata_databases (id, name, created) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			id, name, time.Now().UTC())
		if err != nil {
			return nil, p.fail(ctx, "creating database "+strconv.Quote(name), err)
		}
		if tag.RowsAffected() == 1 {
			return &PostgresDB{p: p, id: id, name: name}, nil
		}
		// The name is taken, or (once in 2^63) the id: say which.
		var taken bool
		if err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM strata_databases WHERE name = $1)`, name).Scan(&taken); err != nil {
			return nil, p.fail(ctx, "creating database "+strconv.Quote(name), err)
		}
		if taken {
			return nil, fmt.Errorf("%w: %q in %s", ErrExists, name, p.where)
		}
	}
}

// randomID returns a random positive 63-bit database id: ids never repeat across a drop and a re-create, and are
// unique across schemas in practice (notifications name them).
func randomID() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	id := int64(binary.BigEndian.Uint64(b[:]) >> 1)
	if id == 0 {
		id = 1
	}
	return id, nil
}

// Open opens an existing database; an error wraps ErrNotFound if there is none of that name.
func (p *Postgres) Open(ctx context.Context, name string) (*PostgresDB, error) {
	var id int64
	err := p.pool.QueryRow(ctx, `SELECT id FROM strata_databases WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("database %q: %w in %s", name, ErrNotFound, p.where)
	}
	if err != nil {
		return nil, p.fail(ctx, "opening database "+strconv.Quote(name), err)
	}
	return &PostgresDB{p: p, id: id, name: name}, nil
}

// Rename gives a database a new name, in one statement: an error wraps ErrNotFound if there is none called from,
// ErrExists if to is taken. Backends open on it keep working (they name it by id).
func (p *Postgres) Rename(ctx context.Context, from, to string) error {
	tag, err := p.pool.Exec(ctx, `UPDATE strata_databases SET name = $2 WHERE name = $1`, from, to)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505":
		return fmt.Errorf("%w: %q in %s", ErrExists, to, p.where)
	case err != nil:
		return p.fail(ctx, "renaming database "+strconv.Quote(from), err)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("database %q: %w in %s", from, ErrNotFound, p.where)
	}
	return nil
}

// pgTables are the tables that hold a database's rows, by its id in column db.
var pgTables = []string{"strata_nodes", "strata_revs", "strata_branches", "strata_labels", "strata_headlog", "strata_idem", "strata_kv"}

// Drop deletes a database and everything in it, in one transaction; an error wraps ErrNotFound if there is none of
// that name. Backends still open on it (here or in other processes) fail with ErrDropped.
func (p *Postgres) Drop(ctx context.Context, name string) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `DELETE FROM strata_databases WHERE name = $1 RETURNING id`, name).Scan(&id)
		if err != nil {
			return err
		}
		for _, t := range pgTables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t+` WHERE db = $1`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("database %q: %w in %s", name, ErrNotFound, p.where)
	}
	return p.fail(ctx, "dropping database "+strconv.Quote(name), err)
}

// Writable reports, in one round trip, whether the server is reachable and takes writes (it is not a standby in
// recovery): a readiness probe's question. The error is ErrUnavailable's, or says the server is read-only.
func (p *Postgres) Writable(ctx context.Context) error {
	if p.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var standby bool
	if err := p.pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err != nil {
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, p.where, scrub(err.Error(), p.pw))
	}
	if standby {
		return fmt.Errorf("%s is a standby in recovery: it takes no writes", p.where)
	}
	return nil
}
