package gate

import (
	"context"
	"io"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// The calls that are not agent tools: a streamed import, dropping a database, garbage collection and the integrity
// check. The command line makes them as the operator (Operator), through the same policy, scope and audit as every
// other call.

// Import makes a resource the document read from r, streamed (memory stays bounded whatever its size), as one
// revision on ch.Branch, under the policy. A stream cannot wait for a confirmation: where the policy asks, the
// import is refused with CONFIRMATION_REQUIRED and nothing is written.
func (v *View) Import(ctx context.Context, resource string, r io.Reader, opts snapshots.ImportOptions, ch Change) (*snapshots.Result, error) {
	if err := v.a.g.checkAudit(); err != nil {
		return nil, err
	}
	ch.Op, ch.Resource = OpPut, resource
	if err := v.checkChange(ctx, ch); err != nil {
		return nil, err
	}
	class := ClassWrite
	if v.a.p.Protects(ch.Branch) {
		class = ClassProtected
	}
	switch v.a.decide(class) {
	case Allow:
	case Ask, Approve: // a plan, which a stream cannot wait for (found in review: Approve fell through to a commit)
		return nil, &Error{code: CodeConfirmationRequired, Err: ErrConfirmationRequired,
			Msg: "an import on branch " + branchOr(ch.Branch) + " needs a person's confirmation, and a stream cannot wait for one; nothing was written"}
	default:
		recordDecision(ctx, Deny)
		return nil, denied("import on branch " + branchOr(ch.Branch))
	}
	recordDecision(ctx, Allow)
	res, err := v.db.Import(ctx, resource, r, opts, v.writeOptions(ch))
	if err != nil {
		return nil, v.writeErr(ctx, err)
	}
	recordRevision(ctx, res)
	return res, nil
}

// Lookup is the value at a pointer inside a resource at a state; a hidden resource is missing.
func (v *View) Lookup(ctx context.Context, st snapshots.State, resource string, ptr revision.Pointer) (revision.Value, error) {
	val, err := v.Get(ctx, st, resource)
	if err != nil || len(ptr) == 0 {
		return val, err
	}
	return v.db.Forest().Get(ctx, val, ptr)
}

// DropDatabase deletes a database and its whole history (class admin).
func (a *Actor) DropDatabase(ctx context.Context, name string) error {
	if err := a.g.checkAudit(); err != nil {
		return err
	}
	recordDatabase(ctx, name)
	if a.limited() && !a.dbPermitted(name) {
		return a.missingDatabase(ctx, name)
	}
	if a.decide(ClassAdmin) != Allow {
		recordDecision(ctx, Deny)
		return denied("dropping a database")
	}
	recordDecision(ctx, Allow)
	return a.dbErr(ctx, a.g.dir.Drop(ctx, name))
}

// GC removes the revisions and nodes nothing reaches any more (class admin).
func (v *View) GC(ctx context.Context, opts *snapshots.GCOptions) (*snapshots.GCReport, error) {
	if err := v.a.g.checkAudit(); err != nil {
		return nil, err
	}
	if v.a.decide(ClassAdmin) != Allow || v.a.limited() {
		recordDecision(ctx, Deny)
		return nil, denied("garbage collection")
	}
	recordDecision(ctx, Allow)
	return v.db.GC(ctx, opts)
}

// Check verifies every revision, node hash, branch and snapshot of the database (the operator's: it reads what
// any scope would hide).
func (v *View) Check(ctx context.Context, progress func(done, total uint64)) (*snapshots.CheckReport, error) {
	if !v.a.p.Operator {
		return nil, denied("checking a whole database")
	}
	return v.db.Check(ctx, progress)
}

// SetSchema sets the JSON Schema that guards a resource (snapshots.DB.SetSchema: refused while any branch head
// breaks it). Schemas are the operator's configuration: no agent sets one.
func (v *View) SetSchema(ctx context.Context, resource string, text []byte) (snapshots.SchemaRecord, error) {
	if err := v.schemaChange(ctx, "setting a schema"); err != nil {
		return snapshots.SchemaRecord{}, err
	}
	return v.db.SetSchema(ctx, resource, text, v.a.p.Name)
}

// RemoveSchema removes a resource's schema (the operator's, as SetSchema).
func (v *View) RemoveSchema(ctx context.Context, resource string) (snapshots.SchemaRecord, error) {
	if err := v.schemaChange(ctx, "removing a schema"); err != nil {
		return snapshots.SchemaRecord{}, err
	}
	return v.db.RemoveSchema(ctx, resource, v.a.p.Name)
}

func (v *View) schemaChange(ctx context.Context, what string) error {
	if err := v.a.g.checkAudit(); err != nil {
		return err
	}
	if !v.a.p.Operator {
		recordDecision(ctx, Deny)
		return denied(what)
	}
	recordDecision(ctx, Allow)
	return nil
}
