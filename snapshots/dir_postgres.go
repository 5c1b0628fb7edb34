package snapshots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/strata-db/strata/store"
)

// A Dir whose location is a postgres:// URL keeps its databases in that PostgreSQL database (store.Postgres): the
// same operations, errors and semantics as a directory of files, with several processes on one URL behaving as one
// server. The helpers below are where a Dir's two kinds of storage differ.

// openPostgresDir connects to the PostgreSQL database at a URL (migrating its schema forward).
func openPostgresDir(location string, o DirOptions) (*Dir, error) {
	if !store.IsPostgresURL(location) {
		scheme, _, _ := strings.Cut(location, "://")
		return nil, invalid("the data location is a %s:// URL, and strata keeps data in a directory or in PostgreSQL (postgres://USER@HOST:PORT/DATABASE)", scheme)
	}
	// Connecting (each attempt bounded by the connect timeout) and migrating the schema.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg, err := store.OpenPostgres(ctx, location, &o.Postgres)
	if err != nil {
		return nil, err
	}
	return &Dir{path: pg.Location(), opts: o, dbs: map[string]*DB{}, pg: pg}, nil
}

// createBackend makes the storage of a new database, failing with a ConflictError if the name is taken.
func (d *Dir) createBackend(ctx context.Context, name string) (store.Backend, error) {
	taken := &ConflictError{Msg: fmt.Sprintf("database %q already exists", name)}
	if d.pg != nil {
		be, err := d.pg.Create(ctx, name)
		if errors.Is(err, store.ErrExists) {
			return nil, taken
		}
		if err != nil {
			return nil, err
		}
		return be, nil
	}
	p := d.file(name)
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&os.ModeSymlink != 0 { // a link, dangling or not, would make bbolt create or use its target
			return nil, fmt.Errorf("database file %s %w", p, store.ErrSymlink)
		}
		return nil, taken
	}
	be, err := d.opts.Backend(p, true)
	if errors.Is(err, store.ErrExists) {
		return nil, taken
	}
	return be, err
}

// openBackend opens the storage of an existing database; the error matches os.ErrNotExist or store.ErrNotFound when
// there is none.
func (d *Dir) openBackend(ctx context.Context, name string) (store.Backend, error) {
	if d.pg != nil {
		be, err := d.pg.Open(ctx, name)
		if err != nil {
			return nil, err
		}
		return be, nil
	}
	return d.opts.Backend(d.file(name), false)
}

// dropStorage deletes a database's storage; the error matches os.ErrNotExist or store.ErrNotFound when there is
// none.
func (d *Dir) dropStorage(ctx context.Context, name string) error {
	if d.pg != nil {
		return d.pg.Drop(ctx, name)
	}
	// Once no process holds the file (one that does hands it over), so that none goes on writing to it deleted.
	return store.RemoveShared(d.file(name), d.opts.Shared.Bolt.Timeout)
}

// renameStorage gives a database's storage another name, never replacing one that exists: the error matches
// store.ErrExists or os.ErrExist when to is taken.
func (d *Dir) renameStorage(ctx context.Context, from, to string) error {
	if d.pg != nil {
		return d.pg.Rename(ctx, from, to)
	}
	// A hard link does not replace an existing file, as a rename would.
	if err := os.Link(d.file(from), d.file(to)); err != nil {
		return err
	}
	_ = os.Remove(d.file(from) + "-wait")
	return os.Remove(d.file(from))
}

// Postgres is the PostgreSQL database that holds the databases, or nil for a directory of files.
func (d *Dir) Postgres() *store.Postgres { return d.pg }

// storageBytes is what a database occupies: its file's size, or in PostgreSQL the stored bytes of its nodes and
// revision records (PostgreSQL's own overhead left out).
func (d *Dir) storageBytes(ctx context.Context, name string, db *DB) (int64, error) {
	if pdb, ok := db.be.(*store.PostgresDB); ok {
		st, err := pdb.Stats(ctx)
		return st.Bytes(), err
	}
	if fi, err := os.Stat(d.file(name)); err == nil {
		return fi.Size(), nil
	}
	return 0, nil
}
