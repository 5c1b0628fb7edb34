package gate

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// Plans and confirmation (docs/design.md §4). A plan is confirmed by the client's user (the front end asks, and
// passes who answered to ApplyPlan), or approved out of band by a person (a reviewer, or the operator at the
// command line) with DecidePlan. An agent never approves its own plan: DecidePlan refuses the plan's own principal.
// Applying a plan replays its Change on the plan's base, marks the plan applied in the revision's transaction, and
// commits only the state it previewed.

// newPlanID draws a plan id: 128 random bits.
func newPlanID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "plan-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// planVisible reports whether the principal's scope shows everything a plan touches: its resource, every resource
// it writes, and every path of its preview. A plan that reaches a hidden resource is not listed, and cannot be found
// or decided.
func (v *View) planVisible(p snapshots.Plan) bool {
	if !v.a.limited() {
		return true
	}
	var ch Change
	if len(p.Change) > 0 && json.Unmarshal(p.Change, &ch) == nil && ch.Resource != "" && !v.a.resPermitted(ch.Resource) {
		return false
	}
	for _, r := range p.Resources {
		if !v.a.resPermitted(r) {
			return false
		}
	}
	if p.Resources == nil && len(p.Root) > 0 && ch.Resource == "" && !p.PreviewComplete {
		// A plan made before plans named their resources, writing any resource (a revert, a promote), whose
		// preview was cut: what it writes past the preview cannot be checked against the scope.
		return false
	}
	for _, o := range p.Preview {
		for _, path := range []string{o.Path, o.From} {
			if ptr, err := revision.ParsePointer(path); err == nil && len(ptr) > 0 && !v.a.resPermitted(ptr[0]) {
				return false
			}
		}
	}
	for _, path := range append(append([]string{}, p.Removes...), p.Overwrites...) {
		if ptr, err := revision.ParsePointer(path); err == nil && len(ptr) > 0 && !v.a.resPermitted(ptr[0]) {
			return false
		}
	}
	return true
}

// MyPlans lists the plans the principal made in the database, oldest first.
func (v *View) MyPlans(ctx context.Context) ([]snapshots.Plan, error) {
	all, err := v.db.Plans(ctx)
	if err != nil {
		return nil, err
	}
	var mine []snapshots.Plan
	for _, p := range all {
		// Under the scope the principal has now: one narrowed since the plan was made hides it (found in review:
		// the agent's own plan page still showed the values of a resource its scope had come to hide).
		if p.Principal == v.a.p.Name && v.planVisible(p) {
			mine = append(mine, p)
		}
	}
	return mine, nil
}

// PlansToReview lists the plans of the database a reviewer (or the operator) may decide, oldest first: every plan
// whose changes the scope shows, made by someone else.
func (v *View) PlansToReview(ctx context.Context) ([]snapshots.Plan, error) {
	if !v.a.p.Review && !v.a.p.Operator {
		return nil, denied("reviewing plans")
	}
	all, err := v.db.Plans(ctx)
	if err != nil {
		return nil, err
	}
	var out []snapshots.Plan
	for _, p := range all {
		if v.planVisible(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ReviewPlan returns one plan of the database for a reviewer (or the operator); a plan it may not see is not found.
func (v *View) ReviewPlan(ctx context.Context, id string) (snapshots.Plan, error) {
	if !v.a.p.Review && !v.a.p.Operator {
		return snapshots.Plan{}, denied("reviewing plans")
	}
	p, err := v.db.GetPlan(ctx, id)
	if err == nil && !v.planVisible(p) {
		return snapshots.Plan{}, planNotFound(id)
	}
	return p, err
}

// DecidePlan approves or rejects a pending plan out of band, as a person: only a reviewer or the operator may, and
// never on a plan of their own (an agent cannot approve itself). Rejecting tells the plan's principal the reason.
func (v *View) DecidePlan(ctx context.Context, id string, approve bool, reason string) (snapshots.Plan, error) {
	recordDatabase(ctx, v.name)
	callFrom(ctx).note(func(c *Call) { c.planID = id })
	if err := v.a.g.checkAudit(); err != nil { // a decision changes what may be written: it is recorded, or not made
		return snapshots.Plan{}, err
	}
	p, err := v.ReviewPlan(ctx, id)
	if err != nil {
		return p, err
	}
	if p.Principal == v.a.p.Name && !v.a.p.Operator {
		// The operator at the command line is a person even when an agent runs as the same OS user (over stdio);
		// anyone else deciding their own plan would be an agent approving itself.
		recordDecision(ctx, Deny)
		return p, denied("deciding one's own plan")
	}
	return v.db.DecidePlan(ctx, id, approve, v.a.p.Name, reason)
}

func planNotFound(id string) error {
	return &snapshots.NotFoundError{What: "plan", Name: clipID(id), Hint: "plan ids are exact; list the plans to see them"}
}

func clipID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

// FindPlan looks for one of the principal's plans among the databases it may see. A plan of another principal, or
// one in a hidden database, is not found.
func (a *Actor) FindPlan(ctx context.Context, id string) (*View, snapshots.Plan, error) {
	callFrom(ctx).note(func(c *Call) { c.planID = id })
	if !strings.HasPrefix(id, "plan-") || len(id) > 64 {
		return nil, snapshots.Plan{}, planNotFound(id)
	}
	names, err := a.Databases(ctx)
	if err != nil {
		return nil, snapshots.Plan{}, err
	}
	for _, name := range names { // permitted names only
		db, err := a.g.dir.Open(ctx, name)
		if err != nil {
			continue
		}
		p, err := db.GetPlan(ctx, id)
		if err == nil && p.Principal == a.p.Name {
			recordDatabase(ctx, name)
			return &View{a: a, name: name, db: db}, p, nil
		}
	}
	return nil, snapshots.Plan{}, planNotFound(id)
}

// CheckApply reports whether the principal can apply a plan now: it is theirs, not finished, not expired, and not
// rejected (a rejection is DENIED, with the person's reason in the error's Detail).
func (v *View) CheckApply(p snapshots.Plan) error {
	if err := snapshots.CheckPlan(p, v.a.p.Name, v.db.Now()); err != nil {
		if p.State == snapshots.PlanRejected {
			hint := "the reason is in detail; change your approach, or plan again if the person asks for it"
			if p.Reason == "" {
				hint = "no reason was given: ask the person why, or change your approach" // (a review noted the hint named a detail there was not)
			}
			return &Error{code: CodeDenied, Msg: fmt.Sprintf("plan %s was rejected by %s; nothing was written", p.ID, p.DecidedBy),
				Detail: p.Reason, Hint: hint, Err: ErrDenied}
		}
		return err
	}
	return nil
}

// ApplyPlan commits one of the principal's plans exactly as it was previewed. A pending plan needs confirmedBy: who
// confirmed it through the client (the front end asked the client's user); an approved one needs nothing more.
// It commits only while nothing it changes has changed on its branch since its base (a plan is rebased onto a head
// that moved elsewhere; else PLAN_CHANGED, and the plan stays), before it expires, and once.
func (v *View) ApplyPlan(ctx context.Context, p snapshots.Plan, confirmedBy string) (*Outcome, error) {
	id := p.ID
	p, err := v.db.GetPlan(ctx, id) // as it is now, not as the caller read it
	if err != nil || p.Principal != v.a.p.Name {
		return nil, planNotFound(id)
	}
	if err := v.CheckApply(p); err != nil {
		return nil, err
	}
	outOfBand := v.OutOfBand(ctx, p)
	if p.State == snapshots.PlanPending && (confirmedBy == "" || outOfBand) {
		msg := fmt.Sprintf("plan %s needs a person's confirmation and has none; nothing was written", p.ID)
		if outOfBand {
			msg = fmt.Sprintf("plan %s must be approved by a person out of band (strata approve, the review page); a client's confirmation does not count; nothing was written", p.ID)
		}
		return nil, &Error{code: CodeConfirmationRequired, Err: ErrConfirmationRequired, Msg: msg}
	}
	ch, err := PlanChange(p)
	if err != nil {
		return nil, err
	}
	out, err := v.write(ctx, ch, &applying{plan: p, confirmedBy: confirmedBy})
	var nf *snapshots.NotFoundError
	if errors.As(err, &nf) && nf.What == "branch" {
		// The branch the plan writes, or the one a promote brings in, was deleted since: the change cannot be made as
		// previewed, as a delete_branch plan's cannot once its branch is gone (found in review: this answered
		// NOT_FOUND for a branch the apply_plan call never named).
		err = fmt.Errorf("%w: branch %s, which plan %s needs, no longer exists; nothing was written", snapshots.ErrPlanChanged, nf.Name, p.ID)
	}
	if err == nil && out.Plan != nil {
		return nil, fmt.Errorf("plan %s: the change made a plan again instead of applying it", p.ID)
	}
	return out, v.writeErr(ctx, err)
}

// OutOfBand reports whether only a person's approval out of band applies a plan: it was made under the decision
// approve, or the policy says approve for its class now (the operator tightened it since the plan was made).
func (v *View) OutOfBand(ctx context.Context, p snapshots.Plan) bool {
	if p.OutOfBand {
		return true
	}
	class := ClassWrite
	switch {
	case p.Op == OpDeleteBranch || p.Op == OpDeleteSnapshot:
		// The class its plan was made under: deleting one's own is a write (found in review: every delete plan,
		// having a Target, was taken for a protected one).
		kind := "branch"
		if p.Op == OpDeleteSnapshot {
			kind = "snapshot"
		}
		if c, _, found, err := v.nameClass(ctx, kind, p.Target); err != nil || !found {
			class = ClassProtected
		} else {
			class = c
		}
	case v.a.p.Protects(branchOr(p.Branch)):
		class = ClassProtected
	}
	return v.a.decide(class) == Approve
}

// PlanChange is the change a plan commits.
func PlanChange(p snapshots.Plan) (Change, error) {
	var ch Change
	if err := json.Unmarshal(p.Change, &ch); err != nil || ch.Op != p.Op {
		return Change{}, fmt.Errorf("%w: plan %s holds no change this server can apply; plan the change again", snapshots.ErrPlanChanged, p.ID)
	}
	return ch, nil
}

// DeclinePlan ends one of the principal's pending plans that the client's user declined when asked to confirm it;
// by names who declined ("the user of CLIENT").
func (v *View) DeclinePlan(ctx context.Context, p snapshots.Plan, by string) error {
	if p.Principal != v.a.p.Name {
		return planNotFound(p.ID)
	}
	if err := v.a.g.checkAudit(); err != nil {
		return err
	}
	_, err := v.db.RejectPlan(ctx, p.ID, by, "declined when asked to confirm")
	return err
}
