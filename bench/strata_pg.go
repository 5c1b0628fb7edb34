package bench

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/strata-db/strata/snapshots"
)

// strata-pg is Strata with its data location in PostgreSQL (docs/postgres.md): the same library, workload and
// figures as strata, on a server started as the postgres peer's is (pgServer: initdb in the suite's directory,
// loopback, fsync and synchronous_commit on), one new database per run.

// newStrataLocation makes a new database on the server (starting it first) and returns its URL.
func (s *pgServer) newStrataLocation(ctx context.Context, dir string) (string, error) {
	if err := s.start(ctx, filepath.Dir(dir)); err != nil {
		return "", err
	}
	s.runs++
	name := fmt.Sprintf("strata%d", s.runs)
	conn, err := pgx.Connect(ctx, s.srv.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return s.srv.URL(name), nil
}

// pgStrataBytes is what the Strata tables occupy, with their TOAST and indexes (the server's catalog and WAL left
// out, as for the postgres peer).
func pgStrataBytes(ctx context.Context, d *snapshots.Dir) (int64, error) {
	var n int64
	err := d.Postgres().Pool().QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE c.relkind = 'r' AND c.relname LIKE 'strata\_%' AND ns.nspname = current_schema()`).Scan(&n)
	return n, err
}
