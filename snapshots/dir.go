package snapshots

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/nofollow"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// DefaultCacheBytes is the size of a directory's shared cache of decoded nodes (DirOptions.CacheBytes): a
// Forest's default.
const DefaultCacheBytes = revision.DefaultCacheBytes

// Ext is the file extension of a database in a data directory.
const Ext = ".strata"

// DirOptions configures a data directory. The zero value is usable.
type DirOptions struct {
	DB     Options
	Shared store.SharedOptions
	// Backend opens the storage of a database file; tests substitute it. Defaults to store.Shared, the bbolt backend
	// that lets several processes use the directory at once.
	Backend func(path string, create bool) (store.Backend, error)
	// Postgres tunes the connection when the data location is a PostgreSQL URL (see dir_postgres.go).
	Postgres store.PostgresOptions
	// CacheBytes bounds the cache of decoded nodes that every database of the directory shares: one budget however
	// many databases there are (default 256 MiB; negative: none). DB.Forest, when set, is used instead.
	CacheBytes int64
}

// Dir is a data directory: one file per database, or a PostgreSQL database holding them (a data location that is a
// postgres:// URL). It keeps each database it opened open until Close, so that every caller in the process shares
// one writer per database.
type Dir struct {
	path string
	opts DirOptions
	mu   sync.Mutex
	dbs  map[string]*DB
	pg   *store.Postgres // the databases are in PostgreSQL
}

// OpenDir opens (and creates, if missing) a data directory. A path that looks like a URL (SCHEME://…) is never taken
// for a directory: a postgres:// or postgresql:// URL keeps the databases in that PostgreSQL database; any other
// scheme is refused.
func OpenDir(path string, opts *DirOptions) (*Dir, error) {
	var o DirOptions
	if opts != nil {
		o = *opts
	}
	if o.DB.Forest == nil {
		// One cache of decoded nodes for every database: one budget, however many there are.
		size := o.CacheBytes
		if size == 0 {
			size = DefaultCacheBytes
		}
		o.DB.Forest = &revision.Options{Cache: revision.NewNodeCache(size)}
	}
	if store.LooksLikeURL(path) {
		return openPostgresDir(path, o)
	}
	if o.Backend == nil {
		so := o.Shared
		o.Backend = func(p string, create bool) (store.Backend, error) {
			so := so
			if create {
				// The name is taken by whoever makes the file: of two processes creating one database at once,
				// one gets ErrExists (found in review: both said "created", one working in the other's database).
				f, err := nofollow.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
				if errors.Is(err, fs.ErrExist) {
					return nil, store.ErrExists
				}
				if err != nil {
					return nil, err
				}
				f.Close()
				be, err := store.OpenShared(p, &so)
				if err != nil {
					os.Remove(p) // still empty: nothing was made
				}
				return be, err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil, err
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				return nil, fmt.Errorf("database file %s %w", p, store.ErrSymlink)
			}
			// A file being created is empty until its creator's bbolt has written its first pages: wait a moment.
			for wait := 0; fi.Size() == 0 && wait < 100; wait++ {
				time.Sleep(10 * time.Millisecond)
				if fi, err = os.Lstat(p); err != nil {
					return nil, err
				}
			}
			if fi.Size() == 0 {
				// bbolt would make a new, empty database in it: the history would be silently gone.
				return nil, fmt.Errorf("%w: %s is empty: the database was truncated (or its creation was interrupted): restore it from a backup, or delete it and create the database again", store.ErrBadFile, p)
			}
			so.MustExist = true // a drop between here and the open must not make the name anew
			return store.OpenShared(p, &so)
		}
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", path, err)
	}
	return &Dir{path: path, opts: o, dbs: map[string]*DB{}}, nil
}

// Path returns the directory (for PostgreSQL, its URL without password or parameters).
func (d *Dir) Path() string { return d.path }

func (d *Dir) file(name string) string { return filepath.Join(d.path, name+Ext) }

// Names lists the databases in the directory, in name order.
func (d *Dir) Names() ([]string, error) {
	if d.pg != nil {
		names, err := d.pg.Names(context.Background())
		// A copy in progress (CopyDatabase) has a name no one may open.
		return slices.DeleteFunc(names, func(n string) bool { return ValidDatabaseName(n) != nil }), err
	}
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, Ext) && ValidDatabaseName(strings.TrimSuffix(n, Ext)) == nil {
			out = append(out, strings.TrimSuffix(n, Ext))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Create makes a new database with branch main. It fails with a ConflictError if the name is taken.
func (d *Dir) Create(ctx context.Context, name, creator string) (*DB, error) {
	if err := ValidDatabaseName(name); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	be, err := d.createBackend(ctx, name)
	if err != nil {
		return nil, err
	}
	o := d.opts.DB
	o.Creator, o.name = creator, name
	db, err := Open(ctx, be, &o)
	if err != nil {
		be.Close()
		return nil, err
	}
	d.dbs[name] = db
	return db, nil
}

// Open returns an existing database.
func (d *Dir) Open(ctx context.Context, name string) (*DB, error) {
	if err := ValidDatabaseName(name); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if db, ok := d.dbs[name]; ok {
		// One that another server dropped (a call on it said so) is opened anew: the name may be another database
		// now. (Found in review: the cache kept answering ErrDropped, whose message says to open it again.)
		if gone, ok := db.be.(interface{ Dropped() bool }); !ok || !gone.Dropped() {
			return db, nil
		}
		db.Close()
		delete(d.dbs, name)
	}
	be, err := d.openBackend(ctx, name)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, store.ErrNotFound) {
		names, _ := d.Names()
		hint := "create it first"
		return nil, &NotFoundError{What: "database", Name: name, DidYouMean: closest(name, names), Hint: hint}
	}
	if err != nil {
		return nil, err
	}
	o := d.opts.DB
	o.name = name
	db, err := Open(ctx, be, &o)
	if err != nil {
		be.Close()
		return nil, err
	}
	d.dbs[name] = db
	return db, nil
}

// Drop closes and deletes a database file. Its history is gone.
func (d *Dir) Drop(ctx context.Context, name string) error {
	if err := ValidDatabaseName(name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if db, ok := d.dbs[name]; ok {
		db.Close()
		delete(d.dbs, name)
	}
	err := d.dropStorage(ctx, name)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, store.ErrNotFound) {
		names, _ := d.Names()
		return &NotFoundError{What: "database", Name: name, DidYouMean: closest(name, names)}
	}
	return err
}

// DatabaseInfo summarises a database.
type DatabaseInfo struct {
	Name      string            `json:"name"`
	FileBytes int64             `json:"file_bytes"`
	Revisions uint64            `json:"revisions"`
	Heads     map[string]uint64 `json:"heads"`
}

// Info summarises one database.
func (d *Dir) Info(ctx context.Context, name string) (DatabaseInfo, error) {
	db, err := d.Open(ctx, name)
	if err != nil {
		return DatabaseInfo{}, err
	}
	info := DatabaseInfo{Name: name, Heads: map[string]uint64{}}
	if info.FileBytes, err = d.storageBytes(ctx, name, db); err != nil {
		return DatabaseInfo{}, err
	}
	err = db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		if info.Revisions, err = c.LastRevision(); err != nil {
			return err
		}
		bs, err := c.Branches()
		for _, b := range bs {
			info.Heads[b.Name] = b.Head
		}
		return err
	})
	return info, err
}

// Close closes every database opened through the directory.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for name, db := range d.dbs {
		if err := db.Close(); err != nil && first == nil {
			first = err
		}
		delete(d.dbs, name)
	}
	if d.pg != nil {
		d.pg.Close()
	}
	return first
}

// RollBackMeta mends database name's file when its newest bbolt meta page is damaged and the one before it is
// intact (store.RollBackMeta): the database then starts from that earlier transaction, and whatever the damaged page
// recorded is dropped. It answers that transaction, and rolled false when the file needed nothing. A database in
// PostgreSQL has no meta pages: refused.
func (d *Dir) RollBackMeta(name string) (txid uint64, rolled bool, err error) {
	if err := ValidDatabaseName(name); err != nil {
		return 0, false, err
	}
	if d.pg != nil {
		return 0, false, invalid("database %s is in PostgreSQL, which has no bbolt meta pages to roll back", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.dbs[name]; ok {
		return 0, false, invalid("database %s is open in this process: roll it back before opening it", name)
	}
	txid, rolled, err = store.RollBackMeta(d.file(name), d.opts.Shared.Bolt.Timeout)
	if errors.Is(err, os.ErrNotExist) {
		names, _ := d.Names()
		return 0, false, &NotFoundError{What: "database", Name: name, DidYouMean: closest(name, names)}
	}
	return txid, rolled, err
}
