package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Plans (docs/design.md §4): a change that needs a person's confirmation is computed without committing and kept as a
// plan in the database's catalog. A plan is bound to its principal, the exact change and the head it was computed
// on; it expires; it applies at most once, and only while nothing it changes has moved on its branch (package gate
// rebases it otherwise). The
// marker that it was applied is written in the transaction of the revision it commits (docs/security.md §2.4).

// Plan states.
const (
	PlanPending  = "pending"  // waits for a confirmation
	PlanApproved = "approved" // a person approved it out of band; the agent may apply it
	PlanRejected = "rejected" // a person refused it; it never applies
	PlanApplied  = "applied"  // committed as Revision
)

var (
	// ErrPlanChanged: the state a plan was computed on is no longer the head; the plan stays as it is.
	ErrPlanChanged = errors.New("plan changed")
	// ErrPlanExpired: the plan waited longer than its time to live.
	ErrPlanExpired = errors.New("plan expired")
)

const plansBucket = "plans"

// Plan is a change waiting for a confirmation.
type Plan struct {
	ID              string            `json:"id"`
	Principal       string            `json:"principal"`             // who asked for it: only they may apply it
	Op              string            `json:"op"`                    // the kind of change: put, patch, promote, delete_branch, …
	Change          json.RawMessage   `json:"change,omitempty"`      // the change itself, as its maker (package gate) replays it
	Branch          string            `json:"branch,omitempty"`      // the branch it changes
	Target          string            `json:"target,omitempty"`      // a branch or snapshot it deletes
	Base            uint64            `json:"base"`                  // the head it was computed on (or the revision the deleted name pointed to)
	Root            []byte            `json:"root,omitempty"`        // the root its revision must have
	OutOfBand       bool              `json:"out_of_band,omitempty"` // only a person's approval out of band applies it, not a client's confirmation
	Summary         string            `json:"summary"`
	Counts          revision.Counts   `json:"counts"`
	Preview         []revision.DiffOp `json:"preview,omitempty"`          // the first operations of its diff, for a person to review
	PreviewComplete bool              `json:"preview_complete,omitempty"` // Preview holds every operation
	Resources       []string          `json:"resources,omitempty"`        // every resource it writes (a plan older than this field has none)
	Removes         []string          `json:"removes"`                    // paths whose values it removes
	Overwrites      []string          `json:"overwrites"`                 // paths whose values it replaces
	Created         time.Time         `json:"created"`
	Expires         time.Time         `json:"expires"`
	State           string            `json:"state"`
	DecidedBy       string            `json:"decided_by,omitempty"`
	Decided         time.Time         `json:"decided,omitzero"`
	Reason          string            `json:"reason,omitempty"`
	Revision        uint64            `json:"revision,omitempty"` // the revision it was applied as
}

// Expired reports whether the plan can no longer be applied at time now.
func (p Plan) Expired(now time.Time) bool {
	return !now.Before(p.Expires) && p.State != PlanApplied && p.State != PlanRejected
}

// StateAt is the plan's state as shown at time now: a pending or approved plan past its expiry is "expired".
func (p Plan) StateAt(now time.Time) string {
	if p.Expired(now) {
		return "expired"
	}
	return p.State
}

// settled is when the plan stopped waiting: its decision, or its expiry.
func (p Plan) settled() time.Time {
	if p.Decided.After(p.Expires) {
		return p.Decided
	}
	return p.Expires
}

// planNotFound is the error for an unknown plan id, or one the caller may not see.
func planNotFound(id string) error {
	return &NotFoundError{What: "plan", Name: id, Hint: "plan ids are exact; the plans of a database can be listed"}
}

// keepPlans is how long a finished or expired plan stays listed.
const keepPlans = 24 * time.Hour

// SavePlan stores a new plan (its ID must be fresh), dropping plans that finished or expired more than a day ago.
func (db *DB) SavePlan(ctx context.Context, p Plan) error {
	if p.ID == "" || p.State != PlanPending {
		return invalid("a new plan needs an id and the state pending")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		if _, ok, err := tx.Get(plansBucket, p.ID); err != nil {
			return nil, err
		} else if ok {
			return nil, fmt.Errorf("%w: plan %s exists", ErrConflict, p.ID)
		}
		var stale []string
		if err := tx.Scan(plansBucket, func(k string, v []byte) bool {
			var old Plan
			if json.Unmarshal(v, &old) == nil && now.Sub(old.settled()) > keepPlans {
				stale = append(stale, k)
			}
			return true
		}); err != nil {
			return nil, err
		}
		for _, k := range stale {
			if err := tx.Delete(plansBucket, k); err != nil {
				return nil, err
			}
		}
		return nil, tx.Put(plansBucket, p.ID, b)
	})
	if err == nil {
		db.planEvent(PlanPending)
	}
	return err
}

func getPlan(c store.CatalogReader, id string) (Plan, error) {
	v, ok, err := c.Get(plansBucket, id)
	if err != nil {
		return Plan{}, err
	}
	if !ok {
		return Plan{}, planNotFound(id)
	}
	var p Plan
	if err := json.Unmarshal(v, &p); err != nil {
		return Plan{}, fmt.Errorf("plan %s: %w", id, store.ErrCorruptNode)
	}
	return p, nil
}

// GetPlan reads a plan.
func (db *DB) GetPlan(ctx context.Context, id string) (Plan, error) {
	var p Plan
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		p, err = getPlan(c, id)
		return err
	})
	return p, err
}

// Plans lists the plans waiting and those settled in the last day, oldest first. (Older ones are dropped when a
// plan is next saved; until then they are not listed either: found in review.)
func (db *DB) Plans(ctx context.Context) ([]Plan, error) {
	ps := []Plan{}
	now := db.now()
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		return c.Scan(plansBucket, func(_ string, v []byte) bool {
			var p Plan
			if json.Unmarshal(v, &p) == nil && now.Sub(p.settled()) <= keepPlans {
				ps = append(ps, p)
			}
			return true
		})
	})
	slices.SortFunc(ps, func(a, b Plan) int { return a.Created.Compare(b.Created) })
	return ps, err
}

// DecidePlan records a person's decision on a pending plan: approve lets its principal apply it; reject ends it,
// with the reason its principal is told.
func (db *DB) DecidePlan(ctx context.Context, id string, approve bool, by, reason string) (Plan, error) {
	v, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		p, err := getPlan(tx, id)
		if err != nil {
			return nil, err
		}
		switch {
		case p.State != PlanPending:
			return nil, fmt.Errorf("%w: plan %s is already %s", ErrConflict, id, p.State)
		case p.Expired(db.now()):
			return nil, fmt.Errorf("%w: plan %s expired at %s; the agent must plan the change again", ErrPlanExpired, id, p.Expires.Format(time.RFC3339))
		}
		p.State, p.DecidedBy, p.Decided, p.Reason = PlanRejected, by, db.now().UTC(), reason
		if approve {
			p.State = PlanApproved
		}
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		return p, tx.Put(plansBucket, id, b)
	})
	if err != nil {
		return Plan{}, err
	}
	p := v.(Plan)
	db.planEvent(p.State)
	return p, nil
}

// RejectPlan ends a plan its principal's user declined when asked to confirm it.
func (db *DB) RejectPlan(ctx context.Context, id, by, reason string) (Plan, error) {
	return db.DecidePlan(ctx, id, false, by, reason)
}

// CheckPlan reports whether a plan can be applied now by principal: it exists and is theirs (else not found), is
// not finished and has not expired.
func CheckPlan(p Plan, principal string, now time.Time) error {
	switch {
	case p.Principal != principal:
		return planNotFound(p.ID)
	case p.State == PlanApplied:
		return fmt.Errorf("%w: plan %s was already applied, as revision %d; a plan applies once", ErrConflict, p.ID, p.Revision)
	case p.State == PlanRejected:
		return fmt.Errorf("%w: plan %s was rejected", ErrConflict, p.ID)
	case p.Expired(now):
		return fmt.Errorf("%w: plan %s expired at %s; plan the change again", ErrPlanExpired, p.ID, p.Expires.Format(time.RFC3339))
	}
	return nil
}

// consume marks a plan applied inside the transaction that commits it, after checking again, under the
// transaction, that it may be: of two concurrent applies, exactly one commits. confirmedBy, when not empty, is who
// confirmed a pending plan (through the client); otherwise the plan must have been approved.
func (db *DB) consume(tx store.CatalogTx, id, principal, confirmedBy string, rev uint64, root []byte) error {
	return db.consumeAt(tx, id, principal, confirmedBy, rev, root, true)
}

// consumeAt is consume; checkRoot false skips the comparison with the previewed root (a plan rebased onto a head
// that moved commits another root, which its applier checked lands exactly the previewed change).
func (db *DB) consumeAt(tx store.CatalogTx, id, principal, confirmedBy string, rev uint64, root []byte, checkRoot bool) error {
	p, err := getPlan(tx, id)
	if err != nil {
		return err
	}
	if err := CheckPlan(p, principal, db.now()); err != nil {
		return err
	}
	if p.State != PlanApproved && confirmedBy == "" {
		return fmt.Errorf("%w: plan %s has not been confirmed", ErrConflict, id)
	}
	if checkRoot && p.Root != nil && !bytes.Equal(p.Root, root) {
		return fmt.Errorf("%w: applying plan %s now would commit a different state than it previewed", ErrPlanChanged, id)
	}
	if p.State == PlanPending {
		p.DecidedBy, p.Decided = confirmedBy, db.now().UTC()
	}
	p.State, p.Revision = PlanApplied, rev
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := tx.Put(plansBucket, id, b); err != nil {
		return err
	}
	db.consumed.Add(1)
	return nil
}

// ConsumePlan is the WriteOptions.InTx of a write that applies a plan: it marks the plan applied in the revision's
// transaction, or fails the write (nothing is committed) when the plan may not apply or the revision's root is not
// the one the plan previewed.
func (db *DB) ConsumePlan(id, principal, confirmedBy string) func(store.CatalogTx, store.RevisionRecord) error {
	return func(tx store.CatalogTx, rec store.RevisionRecord) error {
		return db.consume(tx, id, principal, confirmedBy, rec.Number, rec.Root)
	}
}

// ConsumeRebasedPlan is ConsumePlan for a plan applied on a head that moved since it was made: the revision's root
// is not the previewed one (other changes came in), so the caller pins the root it checked (ExpectRoot) and this
// marks the plan applied without comparing roots.
func (db *DB) ConsumeRebasedPlan(id, principal, confirmedBy string) func(store.CatalogTx, store.RevisionRecord) error {
	return func(tx store.CatalogTx, rec store.RevisionRecord) error {
		return db.consumeAt(tx, id, principal, confirmedBy, rec.Number, rec.Root, false)
	}
}

// ExpectRoot is a WriteOptions.InTx that fails the write (nothing is committed) unless its revision's root is the
// given one: a write checked on a dry run commits exactly what was checked, or nothing (ErrPlanChanged).
func ExpectRoot(root []byte) func(store.CatalogTx, store.RevisionRecord) error {
	return func(_ store.CatalogTx, rec store.RevisionRecord) error {
		if !bytes.Equal(rec.Root, root) {
			return fmt.Errorf("%w: the write would commit another state than the one checked", ErrPlanChanged)
		}
		return nil
	}
}

// BothInTx runs two InTx hooks in turn (either may be nil).
func BothInTx(a, b func(store.CatalogTx, store.RevisionRecord) error) func(store.CatalogTx, store.RevisionRecord) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(tx store.CatalogTx, rec store.RevisionRecord) error {
		if err := a(tx, rec); err != nil {
			return err
		}
		return b(tx, rec)
	}
}

// DeleteBranchForPlan deletes a branch as a plan previewed it: only if its head is still base, and with the plan
// marked applied in the same transaction.
func (db *DB) DeleteBranchForPlan(ctx context.Context, name string, base uint64, planID, principal, confirmedBy string) (store.BranchRecord, error) {
	return db.deleteBranchIf(ctx, name, fmt.Errorf("%w: branch %s no longer exists", ErrPlanChanged, name),
		func(tx store.CatalogTx, b store.BranchRecord) error {
			if b.Head != base {
				return fmt.Errorf("%w: branch %s is at revision %d now, not %d as planned", ErrPlanChanged, name, b.Head, base)
			}
			return db.consume(tx, planID, principal, confirmedBy, 0, nil)
		})
}

// DeleteSnapshotForPlan deletes a snapshot as a plan previewed it: only if it still names revision base, and with
// the plan marked applied in the same transaction.
func (db *DB) DeleteSnapshotForPlan(ctx context.Context, name string, base uint64, planID, principal, confirmedBy string) (store.LabelRecord, error) {
	return db.deleteLabelIf(ctx, name, fmt.Errorf("%w: snapshot %s no longer exists", ErrPlanChanged, name),
		func(tx store.CatalogTx, l store.LabelRecord) error {
			if l.Revision != base {
				return fmt.Errorf("%w: snapshot %s names revision %d now, not %d as planned", ErrPlanChanged, name, l.Revision, base)
			}
			return db.consume(tx, planID, principal, confirmedBy, 0, nil)
		})
}

// Now is the database's clock (Options.Now): plans expire by it.
func (db *DB) Now() time.Time { return db.now() }
