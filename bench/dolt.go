package bench

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" database/sql driver
)

// The Dolt peers, written against dolt 0.40.4 (the one Dolt the Go module proxy serves; .ci/build-dolt builds it).
// What that version lacks shapes the drivers:
//   - no JSON_SET, JSON_TABLE or JSON_LENGTH: a commit of the JSON column sends the whole new document, and diff and
//     jq over it run in the client (as for git). Per-element JSON_EXTRACT over a sequence of indexes had not finished
//     after two minutes at N = 10,000: one call costs about what reading the whole document does (≈ 60 ms).
//   - no DOLT_TAG procedure and no dolt_tags table: a snapshot is `dolt tag` run in the database's directory (a
//     process start per tag; the server sees the tag, since refs live in the shared storage manifest).
//   - DOLT_BRANCH cannot start a branch at a commit: a branch is an INSERT into dolt_branches.
//   - DOLT_DIFF takes literal revisions only, so the driver keeps each revision's commit hash.
//
// Durability is Dolt's default: a commit is on disk when DOLT_COMMIT returns, but 0.40.4's storage writes table files
// and the manifest to a temporary file and renames it, with no fsync, so it survives a crash of the server, not
// necessarily of the machine (the other peers fsync).

// detectDolt serves detect for "dolt" and "dolt-rows": both share one server per suite run.
func detectDolt(name string) (func() system, func() error, string) {
	bin, err := lookPath("dolt")
	if err != nil {
		return nil, nil, "dolt not found on PATH"
	}
	srv := shareDoltServer(bin)
	if name == "dolt-rows" {
		return func() system { return &doltRowsSystem{doltBase{srv: srv}} }, srv.release, ""
	}
	return func() system { return &doltDocSystem{doltBase: doltBase{srv: srv}} }, srv.release, ""
}

// doltServer is a `dolt sql-server` in the suite's directory, on loopback only, serving every database made under
// its --multi-db-dir; each run creates a database (a Dolt repository) of its own. Dolt's global configuration goes
// to DOLT_ROOT_PATH inside the server's directory, not to $HOME. It is started by the first open and stopped when
// the last user of it releases it (detect hands out one release per system).
type doltServer struct {
	bin   string
	mu    sync.Mutex
	users int    // guarded by doltMu
	dir   string // home (DOLT_ROOT_PATH), dbs (the databases), server.log
	port  int
	cmd   *exec.Cmd
	done  chan struct{} // closed when the server process has exited
	runs  int
}

var (
	doltMu     sync.Mutex
	doltShared *doltServer
)

// shareDoltServer returns the server the Dolt systems of a suite run share: Run detects all its systems before it
// opens any, and releases them all at its end. (Runs in one process at the same time would share it too, with
// databases of different names, in the directory of the Run that started it.)
func shareDoltServer(bin string) *doltServer {
	doltMu.Lock()
	defer doltMu.Unlock()
	if doltShared == nil || doltShared.bin != bin {
		doltShared = &doltServer{bin: bin}
	}
	doltShared.users++
	return doltShared
}

// release is the stop func detect returns: the last release stops the server.
func (s *doltServer) release() error {
	doltMu.Lock()
	s.users--
	last := s.users <= 0
	if last && doltShared == s {
		doltShared = nil
	}
	doltMu.Unlock()
	if !last {
		return nil
	}
	return s.stop()
}

func (s *doltServer) env() []string {
	return append(os.Environ(), "DOLT_ROOT_PATH="+filepath.Join(s.dir, "home"), "LC_ALL=C")
}

// cli runs the dolt command line in dir.
func (s *doltServer) cli(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Dir = dir
	cmd.Env = s.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dolt %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// start configures Dolt's user (commits need one) and starts the server (once), waiting until it takes connections.
func (s *doltServer) start(ctx context.Context, root string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.done:
			return fmt.Errorf("dolt sql-server has exited: %s", s.logTail())
		default:
			return nil
		}
	}
	dir, err := os.MkdirTemp(root, "dolt-server-")
	if err != nil {
		return err
	}
	s.dir = dir
	dbs := filepath.Join(dir, "dbs")
	if err := os.MkdirAll(dbs, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"user.name", "bench"}, {"user.email", "bench@example.com"}, {"metrics.disabled", "true"}} {
		if err := s.cli(ctx, dir, "config", "--global", "--add", kv[0], kv[1]); err != nil {
			return err
		}
	}
	if s.port, err = freePort(); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	// Not CommandContext: the server outlives the open that starts it; stop ends it.
	cmd := exec.Command(s.bin, "sql-server", "-H", "127.0.0.1", "-P", strconv.Itoa(s.port), "--multi-db-dir", dbs, "-l", "warning")
	cmd.Dir = dbs
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("dolt sql-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
	return s.waitReady(ctx)
}

// waitReady polls the port until the server answers a query, or fails with the server's log if it exits.
func (s *doltServer) waitReady(ctx context.Context) error {
	db, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("dolt sql-server exited at start: %s", s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dolt sql-server on port %d not ready after 60 s: %v: %s", s.port, err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *doltServer) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	b = bytes.TrimSpace(b)
	if len(b) > 500 {
		b = b[len(b)-500:]
	}
	return string(b)
}

// dsn names a database on the server. interpolateParams keeps each statement to one round trip (no server-side
// prepare), and the packet limit lets a whole document through.
func (s *doltServer) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?interpolateParams=true&maxAllowedPacket=1073741824", s.port, db)
}

func (s *doltServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// stop ends the server: SIGTERM, then SIGKILL if it has not exited after 30 s.
func (s *doltServer) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping dolt sql-server: %w", err)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("dolt sql-server did not stop on SIGTERM within 30 s; killed")
	}
}

// newDatabase creates a fresh database (a Dolt repository in the server's directory) and returns its name and path.
func (s *doltServer) newDatabase(ctx context.Context) (string, string, error) {
	s.mu.Lock()
	s.runs++
	name := fmt.Sprintf("bench%d", s.runs)
	s.mu.Unlock()
	admin, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		return "", "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", fmt.Errorf("CREATE DATABASE %s: %w", name, err)
	}
	return name, filepath.Join(s.dir, "dbs", name), nil
}

func (s *doltServer) dropDatabase(name string) error {
	admin, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.Exec("DROP DATABASE " + name); err != nil {
		return fmt.Errorf("DROP DATABASE %s: %w", name, err)
	}
	return nil
}

// ---------------------------------------------------------------------------------------------------------------

// doltBase is what the two Dolt layouts share: a database of their own, one pinned connection (a Dolt session is
// per connection), and revs[k], revision k's commit hash (AS OF, DOLT_DIFF, tags and branches name commits).
type doltBase struct {
	srv  *doltServer
	name string // the database
	path string // its repository directory
	db   *sql.DB
	conn *sql.Conn
	revs []string
}

func (s *doltBase) openDB(ctx context.Context, dir, schema string) error {
	if err := s.srv.start(ctx, filepath.Dir(dir)); err != nil {
		return err
	}
	var err error
	if s.name, s.path, err = s.srv.newDatabase(ctx); err != nil {
		return err
	}
	if s.db, err = sql.Open("mysql", s.srv.dsn(s.name)); err != nil {
		return err
	}
	if s.conn, err = s.db.Conn(ctx); err != nil {
		return fmt.Errorf("connect to %s: %w", s.name, err)
	}
	return s.exec(ctx, schema)
}

func (s *doltBase) exec(ctx context.Context, q string, args ...any) error {
	if _, err := s.conn.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("%.80s: %w", q, err)
	}
	return nil
}

// commitAll makes a Dolt commit of every change in the working set and records its hash as the next revision.
func (s *doltBase) commitAll(ctx context.Context, msg string) error {
	h, err := doltCommit(ctx, s.conn, msg)
	if err != nil {
		return err
	}
	s.revs = append(s.revs, h)
	return nil
}

// doltCommit runs DOLT_COMMIT on a connection and returns the new commit's hash.
func doltCommit(ctx context.Context, conn *sql.Conn, msg string) (string, error) {
	var h string
	if err := conn.QueryRowContext(ctx, "CALL DOLT_COMMIT('-a', '-m', ?)", msg).Scan(&h); err != nil {
		return "", fmt.Errorf("DOLT_COMMIT: %w", err)
	}
	return h, nil
}

// rev is revision k's commit, quoted for AS OF and DOLT_DIFF (which take literals only).
func (s *doltBase) rev(k int) (string, error) {
	if k < 0 || k >= len(s.revs) {
		return "", fmt.Errorf("revision %d: %w (have %d)", k, errNotFound, len(s.revs))
	}
	return sqlString(s.revs[k]), nil
}

func (s *doltBase) diskBytes(context.Context) (int64, error) { return dirSize(s.path) }

// snapshot tags revision k's commit with the dolt CLI: 0.40.4 has no SQL way to make a tag.
func (s *doltBase) snapshot(ctx context.Context, name string, k int) error {
	if k < 0 || k >= len(s.revs) {
		return fmt.Errorf("revision %d: %w", k, errNotFound)
	}
	return s.srv.cli(ctx, s.path, "tag", name, s.revs[k])
}

func (s *doltBase) branch(ctx context.Context, name string, k int) error {
	if k < 0 || k >= len(s.revs) {
		return fmt.Errorf("revision %d: %w", k, errNotFound)
	}
	return s.exec(ctx, "INSERT INTO dolt_branches(name, hash) VALUES(?, ?)", name, s.revs[k])
}

// queryOne runs a query whose answer is one value.
// queryAt is queryOne at revision k: q names the revision's commit as {rev} (in AS OF {rev}).
func (s *doltBase) queryAt(ctx context.Context, k int, dst any, q string, args ...any) error {
	r, err := s.rev(k)
	if err != nil {
		return err
	}
	return s.queryOne(ctx, dst, strings.ReplaceAll(q, "{rev}", r), args...)
}

func (s *doltBase) queryOne(ctx context.Context, dst any, q string, args ...any) error {
	if err := s.conn.QueryRowContext(ctx, q, args...).Scan(dst); err != nil {
		return fmt.Errorf("%.100s: %w", q, err)
	}
	return nil
}

func (s *doltBase) close() error {
	if s.db == nil {
		return nil
	}
	if s.conn != nil {
		s.conn.Close()
	}
	s.db.Close()
	return s.srv.dropDatabase(s.name)
}

// ---------------------------------------------------------------------------------------------------------------

// doltDocSystem is Dolt with the whole document in one JSON column of a one-row table. Like git it keeps the
// elements in the client: without JSON_SET, a commit sends the whole new document.
type doltDocSystem struct {
	doltBase
	elems [][]byte
}

func (s *doltDocSystem) open(ctx context.Context, dir string) error {
	return s.openDB(ctx, dir, "CREATE TABLE doc(id INT PRIMARY KEY, doc JSON NOT NULL)")
}

func (s *doltDocSystem) load(ctx context.Context, d *doc) error {
	s.elems = make([][]byte, len(d.elems))
	copy(s.elems, d.elems)
	if err := s.exec(ctx, "INSERT INTO doc VALUES(0, ?)", d.json); err != nil {
		return err
	}
	return s.commitAll(ctx, "load")
}

func (s *doltDocSystem) commit(ctx context.Context, k, i, score int) error {
	s.elems[i] = element(i, score)
	if err := s.exec(ctx, "UPDATE doc SET doc = ? WHERE id = 0", joinElems(s.elems, false)); err != nil {
		return err
	}
	return s.commitAll(ctx, fmt.Sprintf("revision %d", k))
}

// docAt returns the whole document at revision k, as Dolt prints it.
func (s *doltDocSystem) docAt(ctx context.Context, k int) ([]byte, error) {
	var b []byte
	err := s.queryAt(ctx, k, &b, "SELECT doc FROM doc AS OF {rev} WHERE id = 0")
	return b, err
}

func (s *doltDocSystem) readElement(ctx context.Context, k, i int) ([]byte, error) {
	var b []byte
	err := s.queryAt(ctx, k, &b, fmt.Sprintf("SELECT JSON_EXTRACT(doc, '$[%d]') FROM doc AS OF {rev} WHERE id = 0", i))
	if err == nil && b == nil {
		err = fmt.Errorf("element %d at revision %d: %w", i, k, errNotFound)
	}
	return b, err
}

// diff fetches both documents and compares them element by element in the client (0.40.4 cannot split a JSON
// array into rows).
func (s *doltDocSystem) diff(ctx context.Context, a, b int) (int, error) {
	x, err := s.docAt(ctx, a)
	if err != nil {
		return 0, err
	}
	y, err := s.docAt(ctx, b)
	if err != nil {
		return 0, err
	}
	return diffElems(x, y)
}

func (s *doltDocSystem) export(ctx context.Context, k int, w io.Writer) error {
	b, err := s.docAt(ctx, k)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// jq fetches the document and runs gojq on it (0.40.4 has no JSON_TABLE to count in SQL).
func (s *doltDocSystem) jq(ctx context.Context, k int) (int, error) {
	b, err := s.docAt(ctx, k)
	if err != nil {
		return 0, err
	}
	return gojqCount(ctx, b)
}

func (s *doltDocSystem) jqLiteral(ctx context.Context, k, i int) ([]byte, error) {
	var b []byte
	err := s.queryAt(ctx, k, &b, fmt.Sprintf("SELECT JSON_EXTRACT(doc, '$[%d].name') FROM doc AS OF {rev} WHERE id = 0", i))
	return b, err
}

// The JSON layout is no concurrentCommitter: every commit rewrites the one row, so concurrent sessions' SQL
// transactions conflict by construction.

// ---------------------------------------------------------------------------------------------------------------

// doltRowsSystem is Dolt the relational way: a row per element. Elements come back as JSON built in the client from
// the columns, in the document's key order.
//
// It is no concurrentCommitter either: in 0.40.4, 8 sessions each doing UPDATE + DOLT_COMMIT on one branch saw 99
// of 128 commits fail with "dataset head is not ancestor of commit"; a figure would measure the retries.
type doltRowsSystem struct{ doltBase }

const doltRowsSchema = `CREATE TABLE elems(id INT PRIMARY KEY, name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL,
tags JSON NOT NULL, score INT NOT NULL, active BOOLEAN NOT NULL)`

// doltRowsColumns are the columns of an element. tags is cast to text on the server: sending a JSON value over the
// wire as such made an export of 10,000 rows take 370 ms rather than 45 ms. (The cast is safe for small values only:
// CAST of the JSON layout's whole document crashes the 0.40.4 server.)
const doltRowsColumns = "id, name, email, CAST(tags AS CHAR), score, active"

func (s *doltRowsSystem) open(ctx context.Context, dir string) error {
	return s.openDB(ctx, dir, doltRowsSchema)
}

// doltElement is one element as the rows layout stores it.
type doltElement struct {
	ID     int             `json:"id"`
	Name   string          `json:"name"`
	Email  string          `json:"email"`
	Tags   json.RawMessage `json:"tags"`
	Score  int             `json:"score"`
	Active bool            `json:"active"`
}

// doltLoadChunk is how many rows one LOAD DATA statement takes. The cost per row grows with the statement: at
// N = 1,000,000 one statement took 225 s (and 8 GB of server memory), statements of 25,000 rows 135 s.
const doltLoadChunk = 25_000

// load shreds the elements into tab-separated files of doltLoadChunk rows and has the server read each with LOAD
// DATA INFILE: at N = 100,000 that took 11.7 s where multi-row INSERTs of 5,000 rows took 16.4 s. The file sits in
// the server's directory (the server runs here, as us) and is removed afterwards.
func (s *doltRowsSystem) load(ctx context.Context, d *doc) error {
	f, err := os.CreateTemp(s.srv.dir, "load-*.tsv")
	if err != nil {
		return err
	}
	f.Close()
	defer os.Remove(f.Name())
	for lo := 0; lo < len(d.elems); lo += doltLoadChunk {
		hi := min(lo+doltLoadChunk, len(d.elems))
		if err := writeLoadFile(f.Name(), d.elems[lo:hi], lo); err != nil {
			return err
		}
		if err := s.exec(ctx, fmt.Sprintf(`LOAD DATA INFILE %s INTO TABLE elems FIELDS TERMINATED BY '\t' LINES TERMINATED BY '\n'`, sqlString(f.Name()))); err != nil {
			return fmt.Errorf("rows %d to %d: %w", lo, hi, err)
		}
	}
	var n int
	if err := s.queryOne(ctx, &n, "SELECT COUNT(*) FROM elems"); err != nil {
		return err
	}
	if n != len(d.elems) {
		return fmt.Errorf("LOAD DATA stored %d rows, want %d", n, len(d.elems))
	}
	return s.commitAll(ctx, "load")
}

// writeLoadFile writes elems (the first is element first) to path as LOAD DATA's default format: tab-separated
// columns, a line per row.
func writeLoadFile(path string, elems [][]byte, first int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for j, raw := range elems {
		var e doltElement
		if err := json.Unmarshal(raw, &e); err != nil {
			f.Close()
			return fmt.Errorf("element %d: %w", first+j, err)
		}
		if strings.ContainsAny(e.Name+e.Email+string(e.Tags), "\t\n\\") {
			f.Close()
			return fmt.Errorf("element %d: a tab, newline or backslash does not fit the load file", first+j)
		}
		active := 0
		if e.Active {
			active = 1
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%d\n", e.ID, e.Name, e.Email, e.Tags, e.Score, active)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (s *doltRowsSystem) commit(ctx context.Context, k, i, score int) error {
	if err := s.exec(ctx, "UPDATE elems SET score = ? WHERE id = ?", score, i); err != nil {
		return err
	}
	return s.commitAll(ctx, fmt.Sprintf("revision %d", k))
}

// scanElement reads a row of doltRowsColumns.
func scanElement(sc interface{ Scan(...any) error }) (doltElement, error) {
	var e doltElement
	var tags []byte
	err := sc.Scan(&e.ID, &e.Name, &e.Email, &tags, &e.Score, &e.Active)
	e.Tags = tags
	return e, err
}

// appendElement writes an element as JSON in the document's key order.
func appendElement(b []byte, e doltElement) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(e.ID), 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, e.Name)
	b = append(b, `,"email":`...)
	b = appendJSONString(b, e.Email)
	b = append(b, `,"tags":`...)
	b = append(b, e.Tags...)
	b = append(b, `,"score":`...)
	b = strconv.AppendInt(b, int64(e.Score), 10)
	b = append(b, `,"active":`...)
	b = strconv.AppendBool(b, e.Active)
	return append(b, '}')
}

// appendJSONString quotes s as a JSON string: directly when it is plain ASCII, else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func (s *doltRowsSystem) readElement(ctx context.Context, k, i int) ([]byte, error) {
	r, err := s.rev(k)
	if err != nil {
		return nil, err
	}
	e, err := scanElement(s.conn.QueryRowContext(ctx, "SELECT "+doltRowsColumns+" FROM elems AS OF "+r+" WHERE id = ?", i))
	if err != nil {
		return nil, fmt.Errorf("element %d at revision %d: %w", i, k, err)
	}
	return appendElement(nil, e), nil
}

// diff counts the rows DOLT_DIFF finds between the two commits.
func (s *doltRowsSystem) diff(ctx context.Context, a, b int) (int, error) {
	ra, err := s.rev(a)
	if err != nil {
		return 0, err
	}
	rb, err := s.rev(b)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.queryOne(ctx, &n, fmt.Sprintf("SELECT COUNT(*) FROM DOLT_DIFF('elems', %s, %s)", ra, rb))
	return n, err
}

// export streams the rows in id order and writes them as one JSON array.
func (s *doltRowsSystem) export(ctx context.Context, k int, w io.Writer) error {
	r, err := s.rev(k)
	if err != nil {
		return err
	}
	rows, err := s.conn.QueryContext(ctx, "SELECT "+doltRowsColumns+" FROM elems AS OF "+r+" ORDER BY id")
	if err != nil {
		return fmt.Errorf("export at revision %d: %w", k, err)
	}
	defer rows.Close()
	bw := bufio.NewWriterSize(w, 1<<20)
	buf := []byte{'['}
	for first := true; rows.Next(); first = false {
		e, err := scanElement(rows)
		if err != nil {
			return err
		}
		if !first {
			buf = append(buf, ',')
		}
		buf = appendElement(buf, e)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export at revision %d: %w", k, err)
	}
	buf = append(buf, ']')
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

func (s *doltRowsSystem) jq(ctx context.Context, k int) (int, error) {
	var n int
	err := s.queryAt(ctx, k, &n, "SELECT COUNT(*) FROM elems AS OF {rev} WHERE score > 90")
	return n, err
}

func (s *doltRowsSystem) jqLiteral(ctx context.Context, k, i int) ([]byte, error) {
	var name string
	if err := s.queryAt(ctx, k, &name, "SELECT name FROM elems AS OF {rev} WHERE id = ?", i); err != nil {
		return nil, err
	}
	return appendJSONString(nil, name), nil
}
