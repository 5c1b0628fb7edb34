package main

import (
	"errors"
	"io/fs"
	"net/url"
	"os"

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
// tune, when set, adjusts the options (a server's shared node cache and its metrics' hooks).
func (g *globalOptions) openLocation(loc string, create bool, cacheBytes int64, tune func(*snapshots.DirOptions)) (*snapshots.Dir, error) {
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
	if tune != nil {
		tune(opts)
	}
	return snapshots.OpenDir(loc, opts)
}
