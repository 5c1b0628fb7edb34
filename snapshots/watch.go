package snapshots

import (
	"context"

	"github.com/strata-db/strata/store"
)

// Watch returns a channel that receives the database's newest revision number after every commit that changes it
// (by this process or any other), until ctx ends or the database closes, when its storage announces commits
// (store.Watcher: PostgreSQL, by LISTEN/NOTIFY with a polling fallback). ok is false when it does not (the bbolt
// backends): callers then poll, as reads always see other processes' commits.
func (db *DB) Watch(ctx context.Context) (ch <-chan uint64, ok bool, err error) {
	w, ok := db.be.(store.Watcher)
	if !ok {
		return nil, false, nil
	}
	ch, err = w.Watch(ctx)
	return ch, err == nil, err
}
