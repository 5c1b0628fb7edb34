package mcp

import (
	"context"
	"errors"

	"github.com/strata-db/strata/snapshots"
)

// The scope on the write side (scope.go has the reads): a write names only permitted databases and resources
// (checkScope), starts only from visible revisions (checkRevisionArgs), changes only permitted resources
// (checkTouched, for revert and promote, which change whole states), and its errors suggest only permitted names
// (scopeWriteErr).

// revisionArgs are the arguments of write tools that name a revision by number.
var revisionArgs = []string{"revision", "from_revision"}

// checkRevisionArgs answers a revision number the scope hides (one that changed only hidden resources) exactly as
// a revision that does not exist.
func (c *call) checkRevisionArgs(ctx context.Context) error {
	if !c.s.limited() || !c.t.write {
		return nil
	}
	for _, name := range revisionArgs {
		if _, ok := c.t.param(name); !ok || !c.a.has(name) {
			continue
		}
		db, err := c.db(ctx)
		if err != nil {
			return c.s.scopeErr(err)
		}
		n := c.a.uint(name)
		st, err := db.Resolve(ctx, snapshots.Ref{Revision: n})
		if err == nil && !c.s.revisionVisible(st.Rev) {
			return c.missingRevision(ctx, n)
		}
	}
	return nil
}

// checkTouched refuses a write that would change a resource the scope hides: r is its dry run.
func (c *call) checkTouched(r *snapshots.Result) error {
	if r != nil && c.hiddenAmong(r.Resources) {
		return denied(c.t.name + " of a state that differs outside your scope")
	}
	return nil
}

// scopeWriteErr keeps hidden names out of a write's error: a missing name's suggestions are permitted names only.
func (c *call) scopeWriteErr(err error) error {
	var nf *snapshots.NotFoundError
	if err == nil || !c.s.limited() || !errors.As(err, &nf) {
		return err
	}
	switch nf.What {
	case "database":
		return c.s.scopeErr(err)
	case "resource":
		cp := *nf
		cp.DidYouMean = c.s.permittedOnly(nf.DidYouMean)
		if len(cp.DidYouMean) == 0 {
			cp.DidYouMean = nil
		}
		return &cp
	}
	return err
}
