package snapshots

import (
	"context"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Preview is what a write would commit, computed on the branch head without committing (WriteOptions.DryRun): the
// base it was computed on and the new root. Its nodes live only in the preview, which reads them together with the
// database's own.
type Preview struct {
	Base    State          // the branch head the write was computed on
	Root    revision.Value // the root the write would commit
	Parents []uint64       // extra parents (a merge)
	forest  *revision.Forest
}

// Diff compares the base with the previewed root (paths begin with the resource name).
func (p *Preview) Diff(ctx context.Context, opts *revision.DiffOptions) (*revision.DiffResult, error) {
	return p.forest.Diff(ctx, p.Base.Root, p.Root, opts)
}

// Resources lists every resource the write changes, in name order (however many operations its diff would have).
func (p *Preview) Resources(ctx context.Context) ([]string, error) {
	return p.forest.ChangedMembers(ctx, p.Base.Root, p.Root)
}

// RootEncoding is the previewed root as stored in a revision record: a plan compares it with what its apply commits.
func (p *Preview) RootEncoding() string { return p.Root.Encoding() }

// dryRun computes a write the way the writer would, on the durable head of its branch, and keeps the result.
func (db *DB) dryRun(ctx context.Context, w WriteOptions, fn changeFunc) (*Result, error) {
	var (
		head    store.RevisionRecord
		branch  store.BranchRecord
		replay  *Result
		schemas *schemaSet
	)
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		if schemas, err = db.loadSchemas(c); err != nil {
			return err
		}
		if k := w.IdempotencyKey; k != "" {
			if replay, err = replayOf(c, k); err != nil || replay != nil {
				return err
			}
		}
		b, err := c.Branch(w.branch())
		if err != nil {
			return notFoundRef(c, "branch", w.branch(), err)
		}
		branch = b
		head, err = c.Revision(b.Head)
		return err
	})
	if err != nil {
		return nil, err
	}
	if replay != nil {
		return replay, nil
	}
	if w.ExpectedHead != 0 && w.ExpectedHead != branch.Head {
		return nil, &ConflictError{Branch: branch.Name, Head: branch.Head, Expected: w.ExpectedHead}
	}
	root, err := revision.ValueFromEncoding(string(head.Root))
	if err != nil {
		return nil, err
	}
	ov := &overlay{base: db.be, nodes: map[store.Hash][]byte{}}
	f := db.forest.WithStore(ov)
	base := State{Rev: head, Root: root, Branch: branch.Name}
	change, extra, err := fn(ctx, f, base)
	if err != nil {
		return nil, err
	}
	res := &Result{Branch: branch.Name, Parent: head.Number, Revision: head.Number, Time: head.Time, Resources: []string{}}
	if change.Root == root && len(extra) == 0 {
		return res.unchanged(), nil
	}
	if _, err := ov.PutNodes(ctx, change.Nodes); err != nil {
		return nil, err
	}
	if res.Resources, err = f.ChangedMembers(ctx, root, change.Root); err != nil {
		return nil, err
	}
	// A plan whose result would be invalid is refused when it is made.
	if _, err := db.checkWrite(ctx, f, schemas, branch.Name, root, change.Root, res.Resources); err != nil {
		return nil, err
	}
	res.Revision = 0
	res.NewNodes = len(change.Nodes)
	for _, n := range change.Nodes {
		res.NewBytes += int64(len(n.Data))
	}
	res.Preview = &Preview{Base: base, Root: change.Root, Parents: extra, forest: f}
	return res, nil
}
