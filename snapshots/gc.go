package snapshots

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

const (
	gcBucket   = "gc"
	gcEpochKey = "epoch" // bumped by every sweep batch; commits planned before a batch start over
	// droppedBucket records each branch and snapshot deleted, and the revision it named, so that the grace window
	// counts from when a revision stopped being named, not from when it was made: a reader that opened a branch an
	// hour old keeps its tree for the grace window after the branch is deleted (found in review: it lost it at once).
	// Key: the deletion time (big-endian nanoseconds, hex) NUL kind NUL name; value: the revision number.
	droppedBucket = "gc-dropped"
)

// recordDropped notes, in the deleting transaction, that a branch or snapshot naming rev was deleted at now.
func recordDropped(tx store.CatalogTx, now time.Time, kind, name string, rev uint64) error {
	key := fmt.Sprintf("%016x\x00%s\x00%s", uint64(now.UnixNano()), kind, name)
	return tx.Put(droppedBucket, key, []byte(strconv.FormatUint(rev, 10)))
}

// droppedSince lists the revisions named by branches and snapshots deleted after cutoff, and the keys of the
// records of those deleted at or before it (expired).
func droppedSince(c store.CatalogReader, cutoff time.Time) (revs []uint64, expired []string, err error) {
	err = c.Scan(droppedBucket, func(k string, v []byte) bool {
		ns, err := strconv.ParseUint(k[:min(16, len(k))], 16, 64)
		if err != nil {
			expired = append(expired, k) // not a record of ours: drop it
			return true
		}
		if !time.Unix(0, int64(ns)).After(cutoff) {
			expired = append(expired, k)
			return true
		}
		if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			revs = append(revs, n)
		}
		return true
	})
	return revs, expired, err
}

// GCOptions tunes garbage collection. The zero value gives the defaults.
type GCOptions struct {
	// Grace keeps every revision made within this long, and its ancestors (default 1 hour): a reader may still be
	// on its way to it, and an idempotent retry may still come. It also keeps the nodes of every import in progress
	// whose lease was renewed within this long (a live import renews it at least every 10 s); an older lease is
	// ended and its nodes collected.
	// A revision stops being "made within" the window only once the grace has passed since the last branch or
	// snapshot naming it was deleted, so that a reader of a deleted branch keeps its tree that long.
	Grace time.Duration
	// Batch is how many nodes one sweep transaction deletes (default 1,000), so that commits are never held up long.
	Batch int
	// Progress, if not nil, is told how far each phase is.
	Progress func(phase string, done, total int)
}

// GCReport says what garbage collection kept and removed.
type GCReport struct {
	KeptRevisions    int   `json:"kept_revisions"`
	RemovedRevisions int   `json:"removed_revisions"`
	MarkedNodes      int   `json:"marked_nodes"`
	RemovedNodes     int   `json:"removed_nodes"`
	RemovedBytes     int64 `json:"removed_bytes"`
	Batches          int   `json:"batches"`
}

// GC removes what nothing can reach any more: revisions outside every branch's ancestry, every snapshot's ancestry
// and the grace window (typically the work of deleted branches), and nodes no kept revision reaches (those, and the
// leftovers of failed imports). The newest revision is always kept, so numbers are never reused.
//
// Marking reads the catalog and the trees in short transactions while commits go on. Sweeping deletes in small
// batches through the database's writer, each in its own transaction that first marks whatever was committed (or
// branched, or labelled) since marking began, so a commit that re-uses an old node (a revert) keeps it. Each batch
// bumps an epoch that commits check, so a change planned on nodes a batch then removed starts over.
func (db *DB) GC(ctx context.Context, opts *GCOptions) (*GCReport, error) {
	var o GCOptions
	if opts != nil {
		o = *opts
	}
	if o.Grace <= 0 {
		o.Grace = time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	lister, ok := db.be.(store.NodeLister)
	if !ok {
		return nil, fmt.Errorf("%w: this storage backend cannot list its nodes for garbage collection", ErrInvalidArgument)
	}
	progress := func(phase string, done, total int) {
		if o.Progress != nil {
			o.Progress(phase, done, total)
		}
	}
	rep := &GCReport{}
	m := &marker{db: db, keep: map[uint64]bool{}, seen: map[store.Hash]bool{}, lists: map[string]bool{}}

	// Mark: the revisions to keep, then every node they reach.
	cutoff := db.now().Add(-o.Grace)
	err := db.be.View(ctx, func(c store.CatalogReader) error { return m.keepRoots(c, cutoff) })
	if err != nil {
		return nil, err
	}
	if err := m.markNodes(ctx, db.forest, progress); err != nil {
		return nil, err
	}

	// Remove the revision records nothing keeps, before any of their nodes: a revision that can still be named (a
	// revert to it, a branch or snapshot made at it, between two batches of the sweep) must still be whole. Once its
	// record is gone, naming it is refused as naming a missing revision is; until then, each batch's catch-up keeps
	// whatever names it. (Found in review: the records went last, and a branch made at a half-swept revision
	// pointed at missing nodes.)
	_, err = db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		if err := m.catchUp(ctx, tx, cutoff); err != nil {
			return nil, err
		}
		last, err := tx.LastRevision()
		if err != nil {
			return nil, err
		}
		if _, expired, err := droppedSince(tx, cutoff); err != nil {
			return nil, err
		} else {
			for _, k := range expired {
				if err := tx.Delete(droppedBucket, k); err != nil {
					return nil, err
				}
			}
		}
		for n := uint64(1); n < last; n++ {
			if m.keep[n] {
				continue
			}
			if _, err := tx.Revision(n); err != nil {
				continue // already gone
			}
			if err := tx.DeleteRevision(n); err != nil {
				return nil, err
			}
			rep.RemovedRevisions++
		}
		return nil, bumpEpoch(tx)
	})
	if err != nil {
		return nil, err
	}

	// Sweep nodes in batches.
	var after *store.Hash
	for {
		hs, err := lister.NodeHashes(ctx, after, 4*o.Batch)
		if err != nil {
			return nil, err
		}
		if len(hs) == 0 {
			break
		}
		after = &hs[len(hs)-1]
		var cand []store.Hash
		for _, h := range hs {
			if !m.seen[h] {
				cand = append(cand, h)
			}
		}
		for len(cand) > 0 {
			n := min(len(cand), o.Batch)
			batch := cand[:n]
			cand = cand[n:]
			_, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
				if err := m.catchUp(ctx, tx, cutoff); err != nil {
					return nil, err
				}
				var del []store.Hash
				for _, h := range batch {
					if !m.seen[h] {
						del = append(del, h)
					}
				}
				k, bytes, err := tx.DeleteNodes(del)
				if err != nil {
					return nil, err
				}
				rep.RemovedNodes += k
				rep.RemovedBytes += bytes
				rep.Batches++
				return nil, bumpEpoch(tx)
			})
			if err != nil {
				return nil, err
			}
			progress("sweep", rep.RemovedNodes, 0)
		}
	}

	rep.KeptRevisions, rep.MarkedNodes = len(m.keep), len(m.seen)
	return rep, nil
}

func bumpEpoch(tx store.CatalogTx) error {
	e, _, err := tx.Get(gcBucket, gcEpochKey)
	if err != nil {
		return err
	}
	n, _ := strconv.ParseUint(string(e), 10, 64)
	return tx.Put(gcBucket, gcEpochKey, []byte(strconv.FormatUint(n+1, 10)))
}

// marker holds what garbage collection keeps: revision numbers, and the nodes their roots reach.
type marker struct {
	db      *DB
	keep    map[uint64]bool
	pending []store.RevisionRecord // kept revisions whose trees are not marked yet
	seen    map[store.Hash]bool
	upTo    uint64          // every revision up to this one has been considered
	lists   map[string]bool // the node lists of imports in progress already marked (keepImports)
}

// keepRoots finds the revisions to keep: the ancestry of every branch head and every snapshot, every revision made
// after cutoff (with its ancestry), and the newest revision.
func (m *marker) keepRoots(c store.CatalogReader, cutoff time.Time) error {
	last, err := c.LastRevision()
	if err != nil {
		return err
	}
	var starts []uint64
	bs, err := c.Branches()
	if err != nil {
		return err
	}
	for _, b := range bs {
		starts = append(starts, b.Head)
	}
	ls, err := c.Labels()
	if err != nil {
		return err
	}
	for _, l := range ls {
		starts = append(starts, l.Revision)
	}
	dropped, _, err := droppedSince(c, cutoff)
	if err != nil {
		return err
	}
	starts = append(starts, dropped...)
	starts = append(starts, last)
	err = c.Revisions(last, func(r store.RevisionRecord) bool {
		if r.Number <= m.upTo || !r.Time.After(cutoff) {
			return false
		}
		starts = append(starts, r.Number)
		return true
	})
	if err != nil {
		return err
	}
	m.upTo = last
	return m.keepAncestry(c, starts)
}

func (m *marker) keepAncestry(c store.CatalogReader, starts []uint64) error {
	stack := starts
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == 0 || m.keep[n] {
			continue
		}
		rec, err := c.Revision(n)
		if err != nil {
			return fmt.Errorf("revision %d, kept by a branch, snapshot or descendant: %w", n, err)
		}
		m.keep[n] = true
		m.pending = append(m.pending, rec)
		stack = append(stack, rec.Parents...)
	}
	return nil
}

// markNodes marks the nodes of every kept revision not marked yet.
func (m *marker) markNodes(ctx context.Context, f *revision.Forest, progress func(string, int, int)) error {
	total := len(m.pending)
	for i, rec := range m.pending {
		root, err := revision.ValueFromEncoding(string(rec.Root))
		if err != nil {
			return fmt.Errorf("revision %d: %w", rec.Number, err)
		}
		if err := f.Walk(ctx, root, func(h store.Hash) bool { return m.seen[h] }, func(v revision.NodeVisit) error {
			m.seen[v.Hash] = true
			return nil
		}); err != nil {
			return fmt.Errorf("marking revision %d: %w", rec.Number, err)
		}
		progress("mark", i+1, total)
	}
	m.pending = m.pending[:0]
	return nil
}

// catchUp, inside a sweep transaction, keeps and marks what appeared since marking began: new revisions, branches
// or snapshots made on old revisions, and the nodes imports in progress have written (keepImports).
func (m *marker) catchUp(ctx context.Context, tx store.CatalogTx, cutoff time.Time) error {
	if err := m.keepImports(tx, cutoff); err != nil {
		return err
	}
	last, err := tx.LastRevision()
	if err != nil {
		return err
	}
	var starts []uint64
	for n := m.upTo + 1; n <= last; n++ {
		starts = append(starts, n)
	}
	m.upTo = last
	bs, err := tx.Branches()
	if err != nil {
		return err
	}
	for _, b := range bs {
		starts = append(starts, b.Head)
	}
	ls, err := tx.Labels()
	if err != nil {
		return err
	}
	for _, l := range ls {
		starts = append(starts, l.Revision)
	}
	dropped, _, err := droppedSince(tx, cutoff) // deleted since marking began, too
	if err != nil {
		return err
	}
	starts = append(starts, dropped...)
	if err := m.keepAncestry(tx, starts); err != nil {
		return err
	}
	// Read the new trees through the transaction itself: the file is ours until it commits.
	return m.markNodes(ctx, m.db.forest.WithStore(txNodes{tx}), func(string, int, int) {})
}

// txNodes reads nodes through a catalog transaction.
type txNodes struct{ tx store.CatalogTx }

func (t txNodes) GetNodes(_ context.Context, hs []store.Hash) ([][]byte, error) {
	return t.tx.GetNodes(hs)
}
func (t txNodes) PutNodes(context.Context, []store.Node) (store.PutStats, error) {
	return store.PutStats{}, fmt.Errorf("read-only view")
}
