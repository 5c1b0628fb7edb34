package mcp

import (
	"context"
	"errors"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// Protected branches (DESIGN.md §4), until the guardrails package brings policies and plans:
//
//   - mode off: no write tool exists;
//   - mode branches: nothing that changes a protected branch commits (CONFIRMATION_REQUIRED);
//   - mode on: a change to a protected branch commits when it only adds (a put of a new resource, an insert into an
//     array or of a new member, a patch of such adds and tests); one that removes or overwrites data does not
//     (CONFIRMATION_REQUIRED);
//   - in both modes, deleting a protected branch, or a branch or snapshot someone else created, does not.
//
// TODO(guardrails): this file is the one place in this package that decides who may do what. It moves to the
// guardrails package (classes, policies, plans with confirmation) and CONFIRMATION_REQUIRED then carries a plan_id
// and a preview instead of only refusing.

// confirmationRequired is the refusal of a change that needs a confirmed plan.
func confirmationRequired(what string) error {
	e := newError(codeConfirmationRequired, "%s needs a confirmed plan, and plans are not available on this server yet; nothing was written", what)
	e.Hint = "make the change on a branch of your own instead (create_branch, then write with branch set to it), show it with diff, and ask a person to promote it"
	return e
}

// refuseProtected refuses a change to a protected branch that the mode does not let through. destructive says
// whether the change removes or overwrites data.
func (c *call) refuseProtected(branch string, destructive bool) error {
	branch = branchOr(branch)
	if !c.s.cfg.protected(branch) || (c.s.cfg.Writes == WritesOn && !destructive) {
		return nil
	}
	if c.s.cfg.Writes == WritesOn {
		return confirmationRequired("removing or overwriting data on protected branch " + branch)
	}
	return confirmationRequired("changing protected branch " + branch)
}

// commitChecked carries out a write on a branch whose effect depends on the data: when the branch is protected and
// the mode lets additive changes through, overwrites decides, against the head the write will be made on, whether it
// would remove or overwrite data. The head is pinned (expected_head), so that a commit that slipped in between the
// check and the write is noticed and the check made again.
//
// A refused write that carries an idempotency_key still goes to the library, with a guard that fails the commit:
// if the key names an earlier write, its result is returned (a retry of a put that created a resource must not turn
// into a refusal because the resource now exists); otherwise nothing is written.
func (c *call) commitChecked(ctx context.Context, db *snapshots.DB, w snapshots.WriteOptions,
	overwrites func(st snapshots.State) (bool, error), commit func(w snapshots.WriteOptions) (*snapshots.Result, error)) (*snapshots.Result, error) {
	branch := branchOr(w.Branch)
	if !c.s.cfg.protected(branch) {
		return commit(w)
	}
	refuse := func(err error) (*snapshots.Result, error) {
		if w.IdempotencyKey == "" {
			return nil, err
		}
		w.InTx = func(store.CatalogTx, store.RevisionRecord) error { return err }
		return commit(w)
	}
	if c.s.cfg.Writes != WritesOn {
		return refuse(c.refuseProtected(branch, true))
	}
	callerHead := w.ExpectedHead
	for attempt := 0; attempt < 5; attempt++ {
		st, err := db.Resolve(ctx, snapshots.Ref{Branch: branch})
		if err != nil {
			return nil, err
		}
		if callerHead != 0 && callerHead != st.Rev.Number {
			return commit(w) // the library refuses with CONFLICT, naming the head (or replays)
		}
		d, err := overwrites(st)
		if err != nil {
			return nil, err
		}
		if d {
			return refuse(c.refuseProtected(branch, true))
		}
		pinned := w
		pinned.ExpectedHead = st.Rev.Number
		res, err := commit(pinned)
		var ce *snapshots.ConflictError
		if callerHead == 0 && errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
			continue // the branch moved since the check: check again on its new head
		}
		return res, err
	}
	return nil, newError(codeConflict, "branch %s kept moving while this write was being checked; nothing was written", branch).
		withHint("retry")
}

// exists reports whether a value is at ptr inside a resource at a state. Paths that cannot resolve count as absent:
// the write itself will then report what is wrong.
func exists(ctx context.Context, db *snapshots.DB, st snapshots.State, res string, ptr revision.Pointer) (revision.Value, bool, error) {
	v, _, err := db.Get(ctx, snapshots.Ref{Revision: st.Rev.Number}, res, ptr)
	switch {
	case err == nil:
		return v, true, nil
	case errors.Is(err, snapshots.ErrNotFound), errors.Is(err, revision.ErrNotFound),
		errors.Is(err, revision.ErrInvalidPath), errors.Is(err, snapshots.ErrInvalidArgument):
		return v, false, nil
	}
	return v, false, err
}

// addOverwrites reports whether an RFC 6902 add (or copy) at ptr would overwrite data: at the whole resource when it
// exists, or at an existing member of an object. Adding into an array inserts, which overwrites nothing.
func addOverwrites(ctx context.Context, db *snapshots.DB, st snapshots.State, res string, ptr revision.Pointer) (bool, error) {
	if len(ptr) == 0 {
		_, ok, err := exists(ctx, db, st, res, nil)
		return ok, err
	}
	parent, ok, err := exists(ctx, db, st, res, ptr[:len(ptr)-1])
	if err != nil || !ok || parent.Kind() != revision.Object {
		return false, err
	}
	_, ok, err = exists(ctx, db, st, res, ptr)
	return ok, err
}

// patchOverwrites reports whether a patch would remove or overwrite data.
func patchOverwrites(ctx context.Context, db *snapshots.DB, st snapshots.State, res string, ops []revision.Operation) (bool, error) {
	for _, op := range ops {
		switch op.Op {
		case "remove", "replace", "move":
			return true, nil
		case "add", "copy":
			ptr, err := revision.ParsePointer(op.Path)
			if err != nil {
				continue // the patch will be refused for it
			}
			if d, err := addOverwrites(ctx, db, st, res, ptr); d || err != nil {
				return d, err
			}
		}
	}
	return false, nil
}

// creatorCheck refuses deleting a branch or snapshot that another principal created.
func (c *call) creatorCheck(kind, name, creator string) error {
	if creator != "" && creator != c.s.cfg.Principal {
		return confirmationRequired("deleting " + kind + " " + name + ", which another principal created,")
	}
	return nil
}
