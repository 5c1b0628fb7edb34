package snapshots

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// CheckReport is what Check found. The database is sound when Problems is empty.
type CheckReport struct {
	Revisions uint64   `json:"revisions"`
	Branches  int      `json:"branches"`
	Snapshots int      `json:"snapshots"`
	Nodes     int      `json:"nodes"`      // distinct nodes reachable from some revision
	NodeBytes int64    `json:"node_bytes"` // their canonical size
	Problems  []string `json:"problems"`
}

// maxProblems bounds the report; a badly damaged file would otherwise list every node.
const maxProblems = 100

// Check verifies the whole database: every revision record (consecutive numbers, parents that exist and come before,
// strictly increasing times, a root that decodes), every node reachable from every revision (present, hash-checked,
// and structurally consistent with its parent), every branch (its head exists and is the newest revision made on it)
// and every snapshot (its revision exists) — the invariants of docs/security.md §2.4. It reads the catalog in short
// transactions, so that other processes keep working. progress, if not nil, is called after each revision.
func (db *DB) Check(ctx context.Context, progress func(done, total uint64)) (*CheckReport, error) {
	rep := &CheckReport{Problems: []string{}}
	problem := func(format string, args ...any) {
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
		}
	}
	var branches []store.BranchRecord
	var labels []store.LabelRecord
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		if rep.Revisions, err = c.LastRevision(); err != nil {
			return err
		}
		if branches, err = c.Branches(); err != nil {
			return err
		}
		labels, err = c.Labels()
		return err
	})
	if err != nil {
		return nil, err
	}
	rep.Branches, rep.Snapshots = len(branches), len(labels)

	// A forest without a cache, so that every node is read from the store and its hash verified.
	cold := revision.New(db.be, &revision.Options{CacheBytes: -1})
	seen := map[store.Hash]bool{}
	skip := func(h store.Hash) bool { return seen[h] }
	newest := map[string]uint64{} // branch name → newest revision made on it
	exists := map[uint64]bool{}
	var prev store.RevisionRecord
	const chunk = 512
	for start := uint64(1); start <= rep.Revisions; start += chunk {
		var recs []store.RevisionRecord
		err := db.be.View(ctx, func(c store.CatalogReader) error {
			for n := start; n < start+chunk && n <= rep.Revisions; n++ {
				rec, err := c.Revision(n)
				if errors.Is(err, store.ErrNotFound) && n < rep.Revisions {
					continue // removed by garbage collection: a problem only if something refers to it
				}
				if err != nil {
					problem("revision %d: %v", n, err)
					continue
				}
				recs = append(recs, rec)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			n := rec.Number
			if prev.Number != 0 && !rec.Time.After(prev.Time) {
				problem("revision %d (%s) is not later than revision %d (%s)", n, rec.Time, prev.Number, prev.Time)
			}
			for _, p := range rec.Parents {
				if p == 0 || p >= n {
					problem("revision %d has parent %d, which does not come before it", n, p)
				} else if !exists[p] {
					problem("revision %d has parent %d, which does not exist", n, p)
				}
			}
			exists[n] = true
			if n > 1 && len(rec.Parents) == 0 {
				problem("revision %d has no parent", n)
			}
			root, err := revision.ValueFromEncoding(string(rec.Root))
			if err != nil {
				problem("revision %d: root: %v", n, err)
			} else if root.Kind() != revision.Object {
				problem("revision %d: root is a %s, not an object", n, root.Kind())
			} else if err := cold.Walk(ctx, root, skip, func(v revision.NodeVisit) error {
				seen[v.Hash] = true
				rep.Nodes++
				rep.NodeBytes += int64(v.Bytes)
				return nil
			}); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if errors.Is(err, store.ErrNodeMissing) && db.revisionGone(ctx, n) {
					// Collected while the check ran (garbage collection deletes a revision's record before its
					// nodes): garbage, not damage. Found in review.
					delete(exists, n)
					continue
				}
				problem("revision %d: %v", n, err)
			}
			newest[rec.Branch] = max(newest[rec.Branch], n)
			prev = rec
			if progress != nil {
				progress(n, rep.Revisions)
			}
		}
	}
	// Branches and snapshots deleted while the check ran (their revisions then collected) are not damage: only those
	// still there as they were read are held to their revisions.
	var nowBranches []store.BranchRecord
	var nowLabels []store.LabelRecord
	if err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		if nowBranches, err = c.Branches(); err != nil {
			return err
		}
		nowLabels, err = c.Labels()
		return err
	}); err != nil {
		return nil, err
	}
	branches = slices.DeleteFunc(branches, func(b store.BranchRecord) bool {
		return !slices.ContainsFunc(nowBranches, func(x store.BranchRecord) bool { return x.ID == b.ID && x.Head == b.Head })
	})
	labels = slices.DeleteFunc(labels, func(l store.LabelRecord) bool {
		return !slices.ContainsFunc(nowLabels, func(x store.LabelRecord) bool { return x.Name == l.Name && x.Revision == l.Revision })
	})
	for _, b := range branches {
		switch {
		case b.Head == 0 || b.Head > rep.Revisions || !exists[b.Head]:
			problem("branch %s: head %d does not exist", b.Name, b.Head)
		case newest[b.Name] > b.Head:
			// A branch deleted and made again under the same name has older revisions of that name: only newer
			// ones than its creation count. Checked against the revision's time.
			var rec store.RevisionRecord
			_ = db.be.View(ctx, func(c store.CatalogReader) error { rec, _ = c.Revision(newest[b.Name]); return nil })
			if !rec.Time.Before(b.Created) {
				problem("branch %s: head is revision %d, but revision %d was made on it later", b.Name, b.Head, newest[b.Name])
			}
		}
	}
	for _, l := range labels {
		if !exists[l.Revision] {
			problem("snapshot %s: revision %d does not exist", l.Name, l.Revision)
		}
	}
	return rep, nil
}

// revisionGone reports whether revision n's record is no longer in the catalog.
func (db *DB) revisionGone(ctx context.Context, n uint64) bool {
	gone := false
	_ = db.be.View(ctx, func(c store.CatalogReader) error {
		_, err := c.Revision(n)
		gone = errors.Is(err, store.ErrNotFound)
		return nil
	})
	return gone
}
