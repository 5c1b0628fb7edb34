package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// The data location (--data, env STRATA_DATA) is a directory, or a postgres:// URL whose PostgreSQL database holds
// every database, the audit log included (docs/postgres.md). A value that looks like a URL (SCHEME://…) is never
// taken for a directory; snapshots.OpenDir refuses a scheme other than postgres. Messages never show a URL's
// password: they show the location as locationText makes it.

// locationText shows a data location in messages: a directory as given, a URL without its password or parameters.
func locationText(loc string) string {
	if !store.LooksLikeURL(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "the URL given as the data location (it does not parse)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// openLocation opens a data location. Only create makes a missing directory; otherwise a missing one is reported.
// A PostgreSQL location must exist (createdb); its Strata tables are made on first use.
func (g *globalOptions) openLocation(loc string, create bool, cacheBytes int64) (*snapshots.Dir, error) {
	if !create && !store.LooksLikeURL(loc) {
		if _, err := os.Stat(loc); errors.Is(err, fs.ErrNotExist) {
			return nil, &snapshots.NotFoundError{What: "data directory", Name: loc,
				Hint: "create a database first (strata db create NAME), or point --data or STRATA_DATA at the directory that holds yours"}
		}
	}
	opts := &snapshots.DirOptions{CacheBytes: cacheBytes}
	if g.env.now != nil {
		opts.DB.Now = g.env.now
	}
	return snapshots.OpenDir(loc, opts)
}

// openAuditLog opens the audit log of an open data location: DIR/audit.log, or in PostgreSQL the table
// strata_audit of the same database, through the location's own pool.
func openAuditLog(ctx context.Context, dir *snapshots.Dir) (*audit.Log, error) {
	if pg := dir.Postgres(); pg != nil {
		l, err := audit.OpenPostgres(ctx, pg.Pool(), pg.Location())
		if err != nil {
			return nil, fmt.Errorf("opening the audit log: %w", err)
		}
		return l, nil
	}
	l, err := audit.Open(audit.PathIn(dir.Path()))
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return l, nil
}
