package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strata-db/strata/internal/pgserver"
)

// findPostgres finds initdb, pg_ctl, postgres and psql (see pgserver.FindBins).
func findPostgres() (pgserver.Bins, string) {
	b, err := pgserver.FindBins()
	if err != nil {
		return b, err.Error()
	}
	if b.Psql == "" {
		return b, "psql not found"
	}
	return b, ""
}

// pgServer is a PostgreSQL server made with initdb in the suite's directory (package pgserver: loopback only, as
// the postgres user when we are root), with fsync and synchronous_commit on (the defaults); one per Run, stopped at
// its end. Each run uses a new database in it.
type pgServer struct {
	bins pgserver.Bins
	srv  *pgserver.Server
	runs int
}

// pgSystem is PostgreSQL: a jsonb history table in a database of its own; psql is the client.
type pgSystem struct {
	srv     *pgServer
	db      string
	sh      *shell
	writers shellPool // (j): more psql sessions
}

// start makes and starts the server (once), in a directory under root that the server can read files beside.
func (s *pgServer) start(ctx context.Context, root string) error {
	if s.srv != nil {
		return nil
	}
	srv, err := pgserver.Start(ctx, root, &pgserver.Options{User: "bench", Bins: &s.bins,
		Settings: []string{"fsync=on", "synchronous_commit=on", "full_page_writes=on", "shared_buffers=256MB", "max_wal_size=4GB"}})
	if err != nil {
		return err
	}
	s.srv = srv
	return nil
}

func (s *pgServer) stop() error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Stop()
	s.srv = nil
	return err
}

func (s *pgServer) psql(db string) (*shell, error) {
	cmd := exec.Command(s.bins.Psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=0", "-h", "127.0.0.1", "-p", strconv.Itoa(s.srv.Port), "-U", s.srv.User, "-d", db)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "LC_ALL=C")
	return startShell(cmd, `\echo `+endMark, func(l string) bool {
		return strings.HasPrefix(l, "ERROR:") || strings.HasPrefix(l, "psql:") || strings.HasPrefix(l, "FATAL:")
	})
}

func (s *pgSystem) open(ctx context.Context, dir string) error {
	if err := s.srv.start(ctx, filepath.Dir(dir)); err != nil {
		return err
	}
	s.srv.runs++
	s.db = fmt.Sprintf("bench%d", s.srv.runs)
	s.writers.open = func() (*shell, error) { return s.srv.psql(s.db) }
	admin, err := s.srv.psql("postgres")
	if err != nil {
		return err
	}
	_, err = admin.exec("CREATE DATABASE "+s.db+";", nil)
	admin.close()
	if err != nil {
		return err
	}
	if s.sh, err = s.srv.psql(s.db); err != nil {
		return err
	}
	_, err = s.sh.exec(`CREATE TABLE history(rev int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE labels(name text PRIMARY KEY, rev int NOT NULL);
CREATE TABLE branches(name text PRIMARY KEY, rev int NOT NULL);`, nil)
	return err
}

func (s *pgSystem) load(_ context.Context, d *doc) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO history VALUES(0, pg_read_file(%s)::jsonb);", sqlString(d.file)), nil)
	return err
}

func (s *pgSystem) commit(_ context.Context, k, i, score int) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO history SELECT %d, jsonb_set(doc, '{%d,score}', '%d') FROM history WHERE rev = %d;", k, i, score, k-1), nil)
	return err
}

// diskBytes is the history table's size with its TOAST and indexes (the server's catalog and WAL are left out).
func (s *pgSystem) diskBytes(context.Context) (int64, error) {
	line, err := s.sh.one("SELECT pg_total_relation_size('history') + pg_total_relation_size('labels') + pg_total_relation_size('branches');")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(line), 10, 64)
}

func (s *pgSystem) snapshot(_ context.Context, name string, k int) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO labels SELECT %s, rev FROM history WHERE rev = %d;", sqlString(name), k), nil)
	return err
}

func (s *pgSystem) branch(_ context.Context, name string, k int) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO branches SELECT %s, rev FROM history WHERE rev = %d;", sqlString(name), k), nil)
	return err
}

func (s *pgSystem) readElement(_ context.Context, k, i int) ([]byte, error) {
	line, err := s.sh.one(fmt.Sprintf("SELECT doc->%d FROM history WHERE rev = %d;", i, k))
	return []byte(line), err
}

func (s *pgSystem) diff(_ context.Context, a, b int) (int, error) {
	return s.sh.count(fmt.Sprintf(`SELECT count(*) FROM (
SELECT * FROM jsonb_array_elements((SELECT doc FROM history WHERE rev = %d)) WITH ORDINALITY
EXCEPT ALL SELECT * FROM jsonb_array_elements((SELECT doc FROM history WHERE rev = %d)) WITH ORDINALITY) AS d;`, b, a))
}

func (s *pgSystem) export(_ context.Context, k int, w io.Writer) error {
	_, err := s.sh.exec(fmt.Sprintf("SELECT doc FROM history WHERE rev = %d;", k), w)
	return err
}

func (s *pgSystem) jq(_ context.Context, k int) (int, error) {
	return s.sh.count(fmt.Sprintf("SELECT count(*) FROM history, jsonb_array_elements(history.doc) AS e WHERE history.rev = %d AND (e->>'score')::int > 90;", k))
}

// concurrentCommit makes one more revision from its own session. The next revision number is the newest plus one,
// so a transaction-scoped advisory lock lets one writer compute it at a time; PostgreSQL flushes the WAL of commits
// that arrive together in one go.
func (s *pgSystem) concurrentCommit(_ context.Context, i, score int) error {
	return s.writers.exec(fmt.Sprintf("BEGIN; SELECT pg_advisory_xact_lock(7); INSERT INTO history SELECT rev+1, jsonb_set(doc, '{%d,score}', '%d') FROM history WHERE rev = (SELECT max(rev) FROM history); COMMIT;", i, score))
}

func (s *pgSystem) prepareConcurrent(_ context.Context, writers int) error {
	return s.writers.warm(writers)
}

func (s *pgSystem) close() error {
	if s.sh == nil {
		return nil
	}
	s.writers.close()
	s.sh.close()
	admin, err := s.srv.psql("postgres")
	if err != nil {
		return err
	}
	defer admin.close()
	_, err = admin.exec("DROP DATABASE "+s.db+";", nil)
	return err
}

// freePort returns a loopback port that was free a moment ago (for servers the suite starts).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
