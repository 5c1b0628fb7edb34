package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// Writes under the policy (docs/design.md §4). Every write has a class — read, write (an unprotected branch),
// protected (a protected branch; deleting a snapshot or branch another principal created), admin (creating a
// database) — and the principal's policy allows it, asks (the write becomes a plan a person confirms) or denies it.
// A plan is computed on a dry run of the write on the branch head and kept in the database with its change, in the
// library's terms (Change), so that applying it commits exactly what was previewed.

// The operations of a Change.
const (
	OpPut            = "put"       // Resource becomes Value
	OpInsert         = "insert"    // RFC 6902 add of Value at Path
	OpUpdate         = "update"    // RFC 6902 replace with Value at Path
	OpDelete         = "delete"    // RFC 6902 remove at Path; the whole resource at ""
	OpPatch          = "patch"     // the RFC 6902 document Patch
	OpTransform      = "transform" // Resource becomes the one output of Program (with Params)
	OpRestore        = "restore"   // the value at Path becomes what it was at From
	OpRevert         = "revert"    // Branch's whole state becomes Target's
	OpPromote        = "promote"   // Source's changes come into Branch
	OpDeleteBranch   = "delete_branch"
	OpDeleteSnapshot = "delete_snapshot"
)

// Change is one write, in the library's terms. It is what a plan keeps: applying the plan makes the same change
// again, on the plan's base, and checks that it commits the previewed state.
type Change struct {
	Op       string          `json:"op"`
	Resource string          `json:"resource,omitempty"`
	Path     string          `json:"path,omitempty"` // a JSON Pointer inside the resource
	Value    json.RawMessage `json:"value,omitempty"`
	Patch    json.RawMessage `json:"patch,omitempty"`   // OpPatch: the RFC 6902 document, as received
	Program  string          `json:"program,omitempty"` // OpTransform
	Params   json.RawMessage `json:"params,omitempty"`  // OpTransform: a JSON object of $name values
	From     *snapshots.Ref  `json:"from,omitempty"`    // OpRestore
	Target   *snapshots.Ref  `json:"target,omitempty"`  // OpRevert
	Source   string          `json:"source,omitempty"`  // OpPromote: the branch brought in
	Name     string          `json:"name,omitempty"`    // OpDeleteBranch, OpDeleteSnapshot

	// Resolve (OpPromote) settles conflicts of the merge: a JSON Pointer from the database root, as the conflicts
	// are reported ("/cat/items/3/price") → snapshots.ResolveBranch or snapshots.ResolveInto.
	Resolve map[string]string `json:"resolve,omitempty"`
	// Keys (OpPromote) names, for arrays at JSON Pointers from the database root, the member that identifies their
	// elements in the merge (over the operator's merge keys; a plan records the keys it merged with).
	Keys map[string]string `json:"keys,omitempty"`

	// Branch is the branch written (default main; for a promote, the branch brought into).
	Branch string `json:"branch,omitempty"`
	// ExpectedHead refuses the write with a conflict unless the branch head is this revision.
	ExpectedHead uint64 `json:"expected_head,omitempty"`
	Message      string `json:"message,omitempty"`
	// IdempotencyKey makes a retried write return the original result instead of committing twice. Keys are the
	// principal's own, per branch.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Tool names the front end's tool or command, recorded with the revision ("put", "cli import").
	Tool string `json:"tool,omitempty"`
}

// Summary says in a few words what the change does (a plan's summary; the answers, the review page show it).
func (ch *Change) Summary() string {
	res := ch.Resource + ch.Path
	switch ch.Op {
	case OpPut:
		return "put " + res
	case OpInsert:
		return "insert at " + res
	case OpUpdate:
		return "update at " + res
	case OpDelete:
		return "delete at " + res
	case OpPatch:
		ops, _ := revision.ParsePatch(ch.Patch)
		return fmt.Sprintf("patch of %s (%d operation(s))", ch.Resource, len(ops))
	case OpTransform:
		return "transform of " + ch.Resource
	case OpRestore:
		return "restore of " + res
	case OpRevert:
		return "revert of " + branchOr(ch.Branch) + " to " + ch.Target.String()
	case OpPromote:
		if len(ch.Resolve) > 0 {
			return fmt.Sprintf("promote %s into %s, settling %d conflict(s)", ch.Source, branchOr(ch.Branch), len(ch.Resolve))
		}
		return fmt.Sprintf("promote %s into %s", ch.Source, branchOr(ch.Branch))
	}
	return ch.Op
}

func branchOr(b string) string {
	if b == "" {
		return snapshots.Main
	}
	return b
}

// Outcome is what a write did: it committed (Result), deleted a name (Branch or Label), or needs a person's
// confirmation and wrote nothing (Plan).
type Outcome struct {
	Result  *snapshots.Result        // the revision committed (or the head, when Unchanged or Replayed)
	Promote *snapshots.PromoteResult // for a promote: how it merged (Result is its Result)
	Branch  *store.BranchRecord      // OpDeleteBranch: the branch deleted
	Label   *store.LabelRecord       // OpDeleteSnapshot: the snapshot deleted
	Plan    *PlanMade                // the change needs a person's confirmation: nothing was written
}

// PlanMade is a plan a write made: the plan as stored, and its preview.
type PlanMade struct {
	Plan snapshots.Plan
	// Preview is the diff the plan would commit, from its base (up to previewOps operations; Truncated past
	// them). nil for a deletion of a name, which changes no document.
	Preview *revision.DiffResult
}

// previewOps bounds the operations a plan's preview computes.
const previewOps = 10_000

// PreviewOps is how many operations a plan's diff counts at most: a plan whose counts add up to it may change more.
const PreviewOps = previewOps

// CountsAtLeast reports whether a plan's counts stopped at PreviewOps: it may change more than they say.
func CountsAtLeast(c revision.Counts) bool { return c.Added+c.Removed+c.Replaced+c.Moved >= PreviewOps }

// planPreviewBytes bounds the operations a plan keeps of its preview (for a person reviewing it, and to check a
// rebased apply against).
const planPreviewBytes = 64 << 10

// maxPlanPaths bounds the removes and overwrites lists a plan keeps.
const maxPlanPaths = 100

// applying is a confirmed plan being carried out: the write it replays commits on the plan's base, consumes the
// plan in its transaction, and must produce the previewed root.
type applying struct {
	plan        snapshots.Plan
	confirmedBy string // who confirmed a pending plan through the client; empty when it was approved out of band
}

// decide is the policy's decision for a class.
func (a *Actor) decide(class string) string { return a.p.Policy.Decision(class) }

// checkAudit refuses writes while the audit log cannot be appended to (fail closed).
func (g *Gate) checkAudit() error {
	if g.audit == nil {
		return nil
	}
	// A record that could not be appended (the disk full, say) keeps writes refused until one is appended again.
	err := g.audit.Check()
	if err == nil && g.auditFailed.Load() {
		err = errors.New("the last audit record could not be appended")
	}
	if err != nil {
		g.log.Error("audit log unusable: refusing writes", "err", err)
		return Errorf(CodeUnavailable, "the audit log cannot be written, so no write runs until it can; nothing was written").
			WithHint("tell the operator: the server's log says why")
	}
	return nil
}

// CreateDatabase makes a new database (class admin: allowed or denied, never a plan).
func (a *Actor) CreateDatabase(ctx context.Context, name string) (*View, error) {
	if err := a.g.checkAudit(); err != nil {
		return nil, err
	}
	if a.decide(ClassAdmin) != Allow {
		return nil, denied("create_database")
	}
	if a.limited() && !a.dbPermitted(name) {
		return nil, a.missingDatabase(ctx, name) // a hidden name answers as a missing one, even here
	}
	db, err := a.g.dir.Create(ctx, name, a.p.Name)
	if err != nil {
		return nil, err
	}
	recordDatabase(ctx, name)
	if st, err := db.Resolve(ctx, snapshots.Ref{}); err == nil {
		recordRevision(ctx, &snapshots.Result{Revision: st.Rev.Number})
	}
	return &View{a: a, name: name, db: db}, nil
}

// CreateBranch makes a branch at a state the principal may see. A new branch changes no data: it is of class write
// whatever its name.
func (v *View) CreateBranch(ctx context.Context, name string, from snapshots.Ref) (store.BranchRecord, error) {
	if err := v.a.g.checkAudit(); err != nil {
		return store.BranchRecord{}, err
	}
	if v.a.decide(ClassWrite) != Allow {
		return store.BranchRecord{}, denied("create_branch")
	}
	if err := v.checkRef(ctx, from); err != nil {
		return store.BranchRecord{}, err
	}
	b, err := v.db.CreateBranch(ctx, name, from, v.a.p.Name)
	if err != nil {
		return b, v.writeErr(ctx, err)
	}
	memo := map[uint64]uint64{} // the state as the principal sees it: a hidden revision's number never shows
	b.Head, b.Base = v.visibleNumber(ctx, b.Head, memo), v.visibleNumber(ctx, b.Base, memo)
	return b, nil
}

// CreateSnapshot names a state the principal may see (class write).
func (v *View) CreateSnapshot(ctx context.Context, name string, at snapshots.Ref, note string) (store.LabelRecord, error) {
	if err := v.a.g.checkAudit(); err != nil {
		return store.LabelRecord{}, err
	}
	if v.a.decide(ClassWrite) != Allow {
		return store.LabelRecord{}, denied("create_snapshot")
	}
	if err := v.checkRef(ctx, at); err != nil {
		return store.LabelRecord{}, err
	}
	l, err := v.db.CreateSnapshot(ctx, name, at, note, v.a.p.Name)
	if err != nil {
		return l, v.writeErr(ctx, err)
	}
	l.Revision = v.visibleNumber(ctx, l.Revision, nil)
	return l, nil
}

// checkRef answers a revision number the scope hides (one that changed only hidden resources) exactly as a
// revision that does not exist.
func (v *View) checkRef(ctx context.Context, ref snapshots.Ref) error {
	if !v.a.limited() || ref.Revision == 0 {
		return nil
	}
	st, err := v.db.Resolve(ctx, snapshots.Ref{Revision: ref.Revision})
	if err == nil && !v.revisionVisible(st.Rev) {
		return v.missingRevision(ctx, ref.Revision)
	}
	return nil
}

// writeErr keeps hidden names out of a write's error: a missing name's suggestions are permitted names only.
func (v *View) writeErr(ctx context.Context, err error) error {
	var nf *snapshots.NotFoundError
	if err == nil || !v.a.limited() || !errors.As(err, &nf) {
		return err
	}
	switch nf.What {
	case "database":
		return v.a.dbErr(ctx, err)
	case "resource":
		cp := *nf
		cp.DidYouMean = v.permittedOnly(nf.DidYouMean)
		if len(cp.DidYouMean) == 0 {
			cp.DidYouMean = nil
		}
		return &cp
	}
	return err
}

// Write makes a change under the principal's policy: it commits, is refused, or becomes a plan.
func (v *View) Write(ctx context.Context, ch Change) (*Outcome, error) {
	expected := ch.ExpectedHead
	if v.a.limited() && expected != 0 {
		// expected_head is the head as the principal sees it: the branch's newest visible revision, which a hidden
		// one may follow (found in review: the head list_branches showed was always refused, and the refusal named
		// the hidden revision). The write is pinned to the real head that stands for it.
		if head, err := v.db.Resolve(ctx, snapshots.Ref{Branch: branchOr(ch.Branch)}); err == nil {
			vis := v.visibleNumber(ctx, head.Rev.Number, nil)
			if vis != expected {
				return nil, &snapshots.ConflictError{Branch: head.Branch, Head: vis, Expected: expected}
			}
			ch.ExpectedHead = head.Rev.Number
		}
	}
	out, err := v.write(ctx, ch, nil)
	err = v.writeErr(ctx, err)
	var ce *snapshots.ConflictError
	if v.a.limited() && errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
		want := expected
		if want == 0 {
			want = v.visibleNumber(ctx, ce.Expected, nil)
		}
		return out, &snapshots.ConflictError{Branch: ce.Branch, Head: v.visibleNumber(ctx, ce.Head, nil), Expected: want}
	}
	return out, err
}

func (v *View) write(ctx context.Context, ch Change, ap *applying) (*Outcome, error) {
	if err := v.a.g.checkAudit(); err != nil {
		return nil, err
	}
	if err := v.checkChange(ctx, ch); err != nil {
		return nil, err
	}
	switch ch.Op {
	case OpDeleteBranch:
		return v.deleteName(ctx, ch, ap, "branch")
	case OpDeleteSnapshot:
		return v.deleteName(ctx, ch, ap, "snapshot")
	}
	if err := v.visibleMessage(ctx, &ch); err != nil {
		return nil, err
	}
	if ap == nil {
		v.withMergeKeys(&ch) // a plan keeps the keys it was made with
	}
	var pr *snapshots.PromoteResult
	do, err := v.doer(ctx, ch, &pr)
	if err != nil {
		return nil, err
	}
	r, plan, err := v.commitUnderPolicy(ctx, ch, ap, do)
	if plan != nil {
		return &Outcome{Plan: plan}, nil
	}
	if ch.Op == OpPromote {
		if herr := v.hiddenConflict(pr, err); herr != nil {
			return nil, herr
		}
	}
	if ch.Op == OpPromote && pr == nil && r != nil {
		pr = &snapshots.PromoteResult{Result: r} // an unchanged or replayed promote
	}
	if err != nil {
		if pr != nil && len(pr.Conflicts) > 0 {
			return &Outcome{Promote: pr}, err
		}
		return nil, err
	}
	recordRevision(ctx, r)
	if v.a.limited() && r != nil {
		// A result names revisions as the principal sees them: an unchanged write answers the branch head, and a
		// commit its parent, either of which may have changed only hidden resources.
		cp := *r
		memo := map[uint64]uint64{}
		cp.Parent = v.visibleNumber(ctx, cp.Parent, memo)
		if cp.Unchanged || cp.Replayed {
			cp.Revision = v.visibleNumber(ctx, cp.Revision, memo)
		}
		r = &cp
		if pr != nil {
			cpr := *pr
			cpr.Result = r
			pr = &cpr
		}
	}
	return &Outcome{Result: r, Promote: pr}, nil
}

// checkChange refuses a change that names something the scope hides: a hidden resource answers as a missing one,
// and a hidden revision number as one that does not exist.
func (v *View) checkChange(ctx context.Context, ch Change) error {
	switch ch.Op {
	case OpPut, OpInsert, OpUpdate, OpDelete, OpPatch, OpTransform, OpRestore, OpRevert, OpPromote, OpDeleteBranch, OpDeleteSnapshot:
	default:
		return fmt.Errorf("%w: unknown change %q", snapshots.ErrInvalidArgument, ch.Op)
	}
	if !v.a.limited() {
		return nil
	}
	if ch.Resource != "" && !v.a.resPermitted(ch.Resource) {
		if err := snapshots.ValidResourceName(ch.Resource); err != nil {
			return err
		}
		return &snapshots.NotFoundError{What: "resource", Name: ch.Resource}
	}
	for _, ref := range []*snapshots.Ref{ch.From, ch.Target} {
		if ref != nil {
			if err := v.checkRef(ctx, *ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// visibleMessage gives a restore or revert of a scoped principal the message the library would write, but naming
// the source as the principal sees it: a hidden revision's number never goes into a message it can read.
func (v *View) visibleMessage(ctx context.Context, ch *Change) error {
	if !v.a.limited() || ch.Message != "" {
		return nil
	}
	switch {
	case ch.Op == OpRestore && ch.From != nil:
		st, err := v.Resolve(ctx, *ch.From)
		if err != nil {
			return err
		}
		ptr, _ := revision.ParsePointer(ch.Path)
		ch.Message = fmt.Sprintf("restore %s%s from %s (revision %d)", ch.Resource, ptr, ch.From, st.Rev.Number)
	case ch.Op == OpRevert && ch.Target != nil:
		st, err := v.Resolve(ctx, *ch.Target)
		if err != nil {
			return err
		}
		ch.Message = fmt.Sprintf("revert to %s (revision %d)", ch.Target, st.Rev.Number)
	}
	return nil
}

// writeOptions are the library's write options for a change.
func (v *View) writeOptions(ch Change) snapshots.WriteOptions {
	w := snapshots.WriteOptions{Branch: ch.Branch, ExpectedHead: ch.ExpectedHead, Message: ch.Message, Author: v.a.p.Name, Tool: ch.Tool}
	if ch.IdempotencyKey != "" {
		// Keys are the caller's own, per branch: two principals that happen to pick the same key do not get each
		// other's results, and a key used again on another branch writes there instead of answering with a revision
		// of the first branch. Neither a principal's nor a branch's name holds a NUL byte, so the key may.
		b := ch.Branch
		if b == "" {
			b = snapshots.Main
		}
		w.IdempotencyKey = "mcp\x00" + v.a.p.Name + "\x00" + b + "\x00" + ch.IdempotencyKey
	}
	return w
}

// doer returns the function that makes a change with given write options (a dry run, or the commit). A promote's
// result is left in *pr.
func (v *View) doer(ctx context.Context, ch Change, pr **snapshots.PromoteResult) (func(w snapshots.WriteOptions) (*snapshots.Result, error), error) {
	db, res := v.db, ch.Resource
	ptr, err := revision.ParsePointer(ch.Path)
	if err != nil {
		return nil, err
	}
	patchOp := func(op string, value json.RawMessage) func(w snapshots.WriteOptions) (*snapshots.Result, error) {
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) {
			return db.Patch(ctx, res, []revision.Operation{{Op: op, Path: ptr.String(), Value: value, HasValue: value != nil}}, w)
		}
	}
	switch ch.Op {
	case OpPut:
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) { return db.Put(ctx, res, ch.Value, w) }, nil
	case OpInsert:
		if len(ptr) == 0 {
			return func(w snapshots.WriteOptions) (*snapshots.Result, error) { return db.Put(ctx, res, ch.Value, w) }, nil
		}
		return patchOp("add", ch.Value), nil
	case OpUpdate:
		return patchOp("replace", ch.Value), nil
	case OpDelete:
		if len(ptr) == 0 {
			return func(w snapshots.WriteOptions) (*snapshots.Result, error) { return db.DeleteResource(ctx, res, w) }, nil
		}
		return patchOp("remove", nil), nil
	case OpPatch:
		ops, err := revision.ParsePatch(ch.Patch)
		if err != nil {
			return nil, err
		}
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) { return db.Patch(ctx, res, ops, w) }, nil
	case OpTransform:
		params, err := paramsOf(ch.Params)
		if err != nil {
			return nil, err
		}
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) {
			return v.a.g.engine.TransformResource(ctx, db, res, ch.Program, params, w)
		}, nil
	case OpRestore:
		if ch.From == nil {
			return nil, fmt.Errorf("%w: a restore needs the state to restore from", snapshots.ErrInvalidArgument)
		}
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) {
			return db.Restore(ctx, res, ptr, *ch.From, w)
		}, nil
	case OpRevert:
		if ch.Target == nil {
			return nil, fmt.Errorf("%w: a revert needs the state to return to", snapshots.ErrInvalidArgument)
		}
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) { return db.Revert(ctx, *ch.Target, w) }, nil
	case OpPromote:
		po, err := promoteOptions(ch)
		if err != nil {
			return nil, err
		}
		return func(w snapshots.WriteOptions) (*snapshots.Result, error) {
			var err error
			*pr, err = db.PromoteWith(ctx, ch.Source, branchOr(ch.Branch), w, po)
			if err != nil {
				return nil, err
			}
			return (*pr).Result, nil
		}, nil
	}
	return nil, fmt.Errorf("%w: unknown change %q", snapshots.ErrInvalidArgument, ch.Op)
}

// paramsOf decodes a transform's parameters: a JSON object whose members keep their exact text.
func paramsOf(raw json.RawMessage) (map[string]any, error) {
	ps := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return ps, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: params must be a JSON object: %v", snapshots.ErrInvalidArgument, err)
	}
	for k, v := range m {
		ps[k] = v
	}
	return ps, nil
}

// commitUnderPolicy carries out every write that commits a revision under the policy: do makes the write with the
// options it is given. It returns the committed result or a plan.
func (v *View) commitUnderPolicy(ctx context.Context, ch Change, ap *applying, do func(w snapshots.WriteOptions) (*snapshots.Result, error)) (*snapshots.Result, *PlanMade, error) {
	w := v.writeOptions(ch)
	branch := branchOr(w.Branch)
	class := ClassWrite
	if v.a.p.Protects(branch) {
		class = ClassProtected
	}
	if v.a.limited() && (ch.Op == OpRevert || ch.Op == OpPromote) {
		// A whole-state change that would break the schema of a resource the scope hides is refused as any change
		// outside the scope is: the schema's answer names the resource and quotes its values.
		inner := do
		do = func(w snapshots.WriteOptions) (*snapshots.Result, error) {
			r, err := inner(w)
			var se *snapshots.SchemaError
			if errors.As(err, &se) && slices.ContainsFunc(append([]string{se.Resource}, se.Touched...), func(n string) bool { return !v.a.resPermitted(n) }) {
				return nil, denied(ch.Op + " of a state that differs outside your scope")
			}
			return r, err
		}
	}
	d := v.a.decide(class)
	if d == Deny { // also for a plan made before the operator's policy changed
		recordDecision(ctx, Deny)
		if class == ClassProtected {
			return nil, nil, denied(fmt.Sprintf("%s on protected branch %s", ch.Op, branch))
		}
		return nil, nil, denied(ch.Op)
	}
	if ap != nil {
		w.ExpectedHead = ap.plan.Base
		// The plan's own key: a key the caller reused since (on another write) must not answer for the plan, and a
		// retried apply replays its own revision.
		w.IdempotencyKey = "plan\x00" + ap.plan.ID
		// A branch that moved since the plan was made: rebase (which checks the scope on its own dry run), for a
		// scoped principal's revert or promote too (found in review: theirs answered PLAN_CHANGED for any commit
		// since, naming revisions the scope hides).
		if head, err := v.db.Resolve(ctx, snapshots.Ref{Branch: branch}); err == nil && head.Rev.Number != ap.plan.Base {
			return v.rebase(ctx, ch, ap, w, head, do)
		}
	}
	if v.a.limited() && (ch.Op == OpRevert || ch.Op == OpPromote) {
		// These change whole states: check, on a dry run, that the change stays within the scope, and commit it on
		// the head it was checked on.
		pw := w
		pw.DryRun = true
		r, err := do(pw)
		if err != nil || r.Preview == nil {
			if ap != nil {
				return r, nil, v.planChanged(ctx, err, ap.plan)
			}
			return r, nil, err
		}
		if r != nil && slices.ContainsFunc(r.Resources, func(n string) bool { return !v.a.resPermitted(n) }) {
			return nil, nil, denied(ch.Op + " of a state that differs outside your scope")
		}
		// Commit exactly what was checked (a promote's source branch may move in between), on the head checked.
		w.ExpectedHead = r.Preview.Base.Rev.Number // the caller's, if it gave one (the dry run checked it)
		w.InTx = snapshots.ExpectRoot([]byte(r.Preview.RootEncoding()))
	}
	if ap != nil {
		w.InTx = snapshots.BothInTx(w.InTx, v.db.ConsumePlan(ap.plan.ID, v.a.p.Name, ap.confirmedBy))
		r, err := do(w)
		if err == nil && r.Replayed {
			// Another apply of this plan committed it (its key is the plan's own): it applies once.
			return nil, nil, fmt.Errorf("%w: plan %s was already applied, as revision %d; a plan applies once", snapshots.ErrConflict, ap.plan.ID, r.Revision)
		}
		return r, nil, v.planChanged(ctx, err, ap.plan)
	}
	if d == Allow {
		recordDecision(ctx, Allow)
		r, err := do(w)
		return r, nil, err
	}
	// Ask: compute the change without committing it.
	callerHead := w.ExpectedHead
	for attempt := 0; attempt < 5; attempt++ {
		pw := w
		pw.DryRun = true
		r, err := do(pw)
		if err != nil || r.Preview == nil {
			return r, nil, err // refused, a replay of an earlier write with this idempotency key, or no change at all
		}
		diff, err := r.Preview.Diff(ctx, &revision.DiffOptions{MaxOps: previewOps, MaxValueBytes: previewValueBytes})
		if err != nil {
			return nil, nil, err
		}
		if class == ClassProtected && v.a.p.Mode == WritesOn && d == Ask && v.a.decide(ClassWrite) == Allow && additive(diff) {
			// Mode on lets a change to a protected branch through when it only adds (not under approve: the operator
			// asked for a person's approval, found in review): commit exactly what was checked,
			// on the head it was checked on. The commit must produce the root checked: a promote's source branch, or
			// a program that reads the clock, could make it something else.
			pinned := w
			pinned.ExpectedHead = r.Preview.Base.Rev.Number
			pinned.InTx = snapshots.BothInTx(w.InTx, snapshots.ExpectRoot([]byte(r.Preview.RootEncoding())))
			res, err := do(pinned)
			var ce *snapshots.ConflictError
			if callerHead == 0 && errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
				continue // the branch moved since the check: check again on its new head
			}
			if errors.Is(err, snapshots.ErrPlanChanged) {
				continue // it would have committed something else: check again
			}
			recordDecision(ctx, Allow)
			return res, nil, err
		}
		resources, err := r.Preview.Resources(ctx)
		if err != nil {
			return nil, nil, err
		}
		p, err := v.savePlan(ctx, ch, snapshots.Plan{Branch: branch, Base: r.Preview.Base.Rev.Number,
			Root: []byte(r.Preview.RootEncoding()), OutOfBand: d == Approve, Resources: resources}, diff)
		return nil, p, err
	}
	return nil, nil, Errorf(CodeConflict, "branch %s kept moving while this write was being checked; nothing was written", branch).
		WithHint("retry")
}

// rebase applies a plan whose branch moved since the plan was made. It commits when nothing the plan changes has
// changed since — no path of its preview, nor any path above or below one — and the change, made again on the new
// head, lands exactly the previewed operations; otherwise it answers PLAN_CHANGED naming what moved. The plan is
// consumed in the revision's transaction, on the head it was checked on.
func (v *View) rebase(ctx context.Context, ch Change, ap *applying, w snapshots.WriteOptions, head snapshots.State,
	do func(w snapshots.WriteOptions) (*snapshots.Result, error)) (*snapshots.Result, *PlanMade, error) {
	p := ap.plan
	changed := func(why string, paths []string) error {
		msg := fmt.Sprintf("branch %s is at revision %d now, not %d as when plan %s was made, and %s; nothing was written",
			head.Branch, v.visibleNumber(ctx, head.Rev.Number, nil), v.visibleNumber(ctx, p.Base, nil), p.ID, why)
		e := &Error{code: CodePlanChanged, Msg: msg, Err: snapshots.ErrPlanChanged,
			Hint: "read what changed there, and plan the change anew if it is still wanted"}
		if len(paths) > 0 {
			// The paths are stored data (member names anyone may have written): they go in detail, which front ends
			// show only where untrusted text is marked as such (found in review: a name with newlines and an
			// instruction reached the result's first line).
			e.Msg += " (the paths that moved are in detail)"
			e.Detail = "paths that moved: " + strings.Join(paths, ", ")
		}
		return e
	}
	if !p.PreviewComplete {
		return nil, nil, changed("the plan is too large to check against what changed since", nil)
	}
	base, err := v.db.Resolve(ctx, snapshots.Ref{Revision: p.Base})
	if errors.Is(err, snapshots.ErrNotFound) {
		// Collected (its branch was deleted and made again, and the grace passed): what changed since cannot be
		// told, so the plan no longer applies (a review's suspicion: this answered NOT_FOUND "revision N").
		return nil, nil, changed("the revision it was made on has since been garbage-collected", nil)
	}
	if err != nil {
		return nil, nil, err
	}
	since, err := v.db.Forest().Diff(ctx, base.Root, head.Root, &revision.DiffOptions{MaxOps: previewOps, MaxValueBytes: previewValueBytes})
	if err != nil {
		return nil, nil, err
	}
	if since.Truncated {
		return nil, nil, changed("too much changed since to check", nil)
	}
	var mine []string
	for _, o := range p.Preview {
		mine = append(mine, o.Path)
		if o.From != "" {
			mine = append(mine, o.From)
		}
	}
	var moved []string
	for _, o := range since.Operations {
		paths := []string{o.Path}
		if o.From != "" {
			paths = append(paths, o.From)
		}
		for _, path := range paths {
			if slices.ContainsFunc(mine, func(m string) bool { return overlaps(m, path) }) && !slices.Contains(moved, path) {
				moved = append(moved, path)
			}
		}
	}
	if len(moved) > 0 {
		if v.a.limited() {
			moved = slices.DeleteFunc(moved, func(path string) bool { return !v.pathPermitted(path) })
		}
		return nil, nil, changed("what the plan changes has changed since", moved)
	}
	// Make the change again on the new head, and check that exactly the approved operations land.
	pw := w
	pw.DryRun, pw.ExpectedHead = true, head.Rev.Number
	r, err := do(pw)
	if err != nil || r == nil || r.Preview == nil {
		if err == nil {
			err = changed("the change now changes nothing", nil)
		}
		if errors.Is(err, revision.ErrTestFailed) {
			// A test op of the patch held on the base and fails on the new head: what the change was made on has
			// changed, though the test changes no path (found in review: this answered CONFLICT).
			err = changed("made again on the new head, a test of its patch no longer holds ("+err.Error()+")", nil)
		}
		if ch.Op == OpPromote && (errors.Is(err, revision.ErrResolution) || isMergeConflict(err)) {
			// The merge on the new head conflicts where the approved one did not, or not where it was resolved.
			err = changed("made again on the new head, the merge would not settle the conflicts it settled", nil)
		}
		return nil, nil, v.planChanged(ctx, err, p)
	}
	again, err := r.Preview.Diff(ctx, &revision.DiffOptions{MaxOps: previewOps, MaxValueBytes: previewValueBytes})
	if err != nil {
		return nil, nil, err
	}
	kept, complete := keepOps(again.Operations, planPreviewBytes) // shaped as the plan keeps its preview
	if !complete || again.Truncated || !sameOps(kept, p.Preview) {
		return nil, nil, changed("made again on the new head, the change would not be the one approved", nil)
	}
	if v.a.limited() && slices.ContainsFunc(r.Resources, func(n string) bool { return !v.a.resPermitted(n) }) {
		return nil, nil, denied(ch.Op + " of a state that differs outside your scope")
	}
	w.ExpectedHead = head.Rev.Number
	w.InTx = snapshots.BothInTx(snapshots.ExpectRoot([]byte(r.Preview.RootEncoding())), v.db.ConsumeRebasedPlan(p.ID, v.a.p.Name, ap.confirmedBy))
	res, err := do(w)
	if err == nil && res.Replayed {
		return nil, nil, fmt.Errorf("%w: plan %s was already applied, as revision %d; a plan applies once", snapshots.ErrConflict, p.ID, res.Revision)
	}
	return res, nil, v.planChanged(ctx, err, p)
}

// overlaps reports whether one JSON Pointer is the other or lies inside it.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") || a == "" || b == ""
}

// sameOps reports whether two lists of diff operations are the same.
func sameOps(a, b []revision.DiffOp) bool {
	return slices.EqualFunc(a, b, func(x, y revision.DiffOp) bool {
		return x.Op == y.Op && x.Path == y.Path && x.From == y.From && bytes.Equal(x.Value, y.Value) && bytes.Equal(x.OldValue, y.OldValue)
	})
}

// pathPermitted reports whether a pointer from the database root is inside a resource the scope shows.
func (v *View) pathPermitted(path string) bool {
	ptr, err := revision.ParsePointer(path)
	return err == nil && (len(ptr) == 0 || v.a.resPermitted(ptr[0]))
}

// additive reports whether a change only adds.
func additive(d *revision.DiffResult) bool {
	return !d.Truncated && d.Counts.Removed == 0 && d.Counts.Replaced == 0 && d.Counts.Moved == 0
}

// planChanged turns the refusal of a plan's write because its branch moved into PLAN_CHANGED.
// The revisions are named as the principal sees them (a hidden one never shows).
func (v *View) planChanged(ctx context.Context, err error, p snapshots.Plan) error {
	if p.Op == OpPromote && (errors.Is(err, revision.ErrResolution) || isMergeConflict(err)) {
		// The branch brought in moved since the plan was made: the merge made again conflicts, or no longer has a
		// conflict the plan resolved. The plan cannot apply as previewed, and apply_plan takes no resolutions
		// (found in review: this answered CONFLICT asking to "settle each path with resolve", or INVALID_ARGUMENT
		// "resolve names ..., which is not in conflict").
		return &Error{code: CodePlanChanged, Err: snapshots.ErrPlanChanged,
			Msg:  fmt.Sprintf("the branch plan %s promotes has moved since the plan was made, and the merge made again would not settle the conflicts it settled; nothing was written", p.ID),
			Hint: "read what changed there, and plan the change anew if it is still wanted"}
	}
	var ce *snapshots.ConflictError
	if errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
		memo := map[uint64]uint64{}
		return fmt.Errorf("%w: branch %s is at revision %d now, not %d as when plan %s was made; nothing was written",
			snapshots.ErrPlanChanged, ce.Branch, v.visibleNumber(ctx, ce.Head, memo), v.visibleNumber(ctx, p.Base, memo), p.ID)
	}
	return err
}

// deleteName deletes the branch or snapshot (kind) ch.Name under the policy: deleting one that another principal
// created, or a protected branch, is of class protected (a plan to confirm, by default); deleting one's own is a
// write, checked again in the deleting transaction.
func (v *View) deleteName(ctx context.Context, ch Change, ap *applying, kind string) (*Outcome, error) {
	name, db := ch.Name, v.db
	result := func(b store.BranchRecord, l store.LabelRecord, err error) (*Outcome, error) {
		if err != nil {
			return nil, err
		}
		if kind == "branch" {
			return &Outcome{Branch: &b}, nil
		}
		return &Outcome{Label: &l}, nil
	}
	del := func(owner string) (*Outcome, error) {
		if kind == "branch" {
			b, err := db.DeleteBranchOf(ctx, name, owner)
			return result(b, store.LabelRecord{}, err)
		}
		l, err := db.DeleteSnapshotOf(ctx, name, owner)
		return result(store.BranchRecord{}, l, err)
	}
	if ap != nil {
		if v.a.decide(ClassProtected) == Deny { // the policy changed since the plan was made
			return nil, denied("delete_" + kind + " of " + name)
		}
		if kind == "branch" {
			b, err := db.DeleteBranchForPlan(ctx, name, ap.plan.Base, ap.plan.ID, v.a.p.Name, ap.confirmedBy)
			return result(b, store.LabelRecord{}, err)
		}
		l, err := db.DeleteSnapshotForPlan(ctx, name, ap.plan.Base, ap.plan.ID, v.a.p.Name, ap.confirmedBy)
		return result(store.BranchRecord{}, l, err)
	}
	class, base, found, err := v.nameClass(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	d := v.a.decide(class)
	switch d {
	case Deny:
		recordDecision(ctx, Deny)
		return nil, denied("delete_" + kind + " of " + name)
	case Allow:
		recordDecision(ctx, Allow)
		// Deleting one's own is checked again where it happens: the name may have been recreated by someone else.
		owner := ""
		if class == ClassWrite {
			owner = v.a.p.Name
		}
		return del(owner)
	}
	if !found || (kind == "branch" && name == snapshots.Main) {
		return del("") // the library says what is wrong
	}
	p, err := v.savePlan(ctx, ch, snapshots.Plan{Target: name, Base: base, OutOfBand: d == Approve,
		Summary: fmt.Sprintf("delete %s %s (at revision %d)", kind, name, v.visibleNumber(ctx, base, nil))}, nil)
	if err != nil {
		return nil, err
	}
	return &Outcome{Plan: p}, nil
}

// nameClass is the class of deleting the branch or snapshot (kind) name: protected for one another principal created
// or a protected branch, write for one's own; base is its head or revision, found false when there is none.
func (v *View) nameClass(ctx context.Context, kind, name string) (class string, base uint64, found bool, err error) {
	class = ClassWrite
	if kind == "branch" {
		bs, err := v.db.Branches(ctx)
		if err != nil {
			return "", 0, false, err
		}
		for _, b := range bs {
			if b.Name == name {
				found, base = true, b.Head
				if b.Creator != v.a.p.Name || v.a.p.Protects(name) {
					class = ClassProtected
				}
			}
		}
		return class, base, found, nil
	}
	ls, err := v.db.Snapshots(ctx)
	if err != nil {
		return "", 0, false, err
	}
	for _, l := range ls {
		if l.Name == name {
			found, base = true, l.Revision
			if l.Creator != v.a.p.Name {
				class = ClassProtected
			}
		}
	}
	return class, base, found, nil
}

// savePlan stores a plan for a change, with its preview d (nil for a plan that changes no document).
func (v *View) savePlan(ctx context.Context, ch Change, p snapshots.Plan, d *revision.DiffResult) (*PlanMade, error) {
	change, err := json.Marshal(ch)
	if err != nil {
		return nil, err
	}
	now := v.db.Now().UTC()
	p.ID, p.Principal, p.Op, p.Change = newPlanID(), v.a.p.Name, ch.Op, change
	if p.Summary == "" {
		p.Summary = ch.Summary()
	}
	p.Created, p.Expires, p.State = now, now.Add(v.a.p.PlanTTL), snapshots.PlanPending
	p.Removes, p.Overwrites = []string{}, []string{}
	if d != nil {
		p.Counts = d.Counts
		for _, o := range d.Operations {
			switch {
			case o.Op == "remove" && len(p.Removes) < maxPlanPaths:
				p.Removes = append(p.Removes, o.Path)
			case o.Op == "move" && len(p.Removes) < maxPlanPaths:
				p.Removes = append(p.Removes, o.From)
			case o.Op == "replace" && len(p.Overwrites) < maxPlanPaths:
				p.Overwrites = append(p.Overwrites, o.Path)
			}
		}
		// The plan keeps the first operations, for a person reviewing it (strata plans DB ID, the review page).
		p.Preview, p.PreviewComplete = keepOps(d.Operations, planPreviewBytes)
		p.PreviewComplete = p.PreviewComplete && !d.Truncated
	}
	if err := v.db.SavePlan(ctx, p); err != nil {
		return nil, err
	}
	recordPlan(ctx, p.ID)
	return &PlanMade{Plan: p, Preview: d}, nil
}

// previewValueBytes bounds a value in a plan's preview: a larger one stands as the diff's marker (with its content
// hash, so that a rebased plan's comparison still tells values apart), never written out.
const previewValueBytes = 1 << 20

// keepOps keeps the first operations while their JSON fits budget bytes; complete reports that all fit. A value too
// big for a quarter of the budget is replaced by an $elided marker, so that one huge value never stops the list. The
// marker carries the value's SHA-256: a plan applied on a branch that moved since is made again and its kept
// operations compared with these (rebase), and a value of the same size but other content must not pass for the
// approved one.
func keepOps(ops []revision.DiffOp, budget int) (kept []revision.DiffOp, complete bool) {
	used := 0
	perValue := max(budget/4, 200)
	for _, o := range ops {
		for _, v := range []*json.RawMessage{&o.Value, &o.OldValue} {
			if *v != nil && len(*v) > perValue {
				*v = elided(*v, o.Path, true)
			}
		}
		b, _ := json.Marshal(o)
		if used+len(b)+1 > budget {
			return kept, false
		}
		used += len(b) + 1
		kept = append(kept, o)
	}
	return kept, true
}

// Elided is the marker that stands for a value left out: its kind, where it is, its member or element count when
// known, and its size as JSON.
type Elided struct {
	Elided string `json:"$elided"`
	Path   string `json:"path"`
	Count  uint64 `json:"count,omitempty"`
	Bytes  uint64 `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"` // of the value's JSON, in a plan's kept operations
}

// ElidedRaw is the marker for a raw JSON value left out.
func ElidedRaw(raw json.RawMessage, p string) json.RawMessage { return elided(raw, p, false) }

// elided is the marker for a raw JSON value left out, with the SHA-256 of its JSON if hash is set.
func elided(raw json.RawMessage, p string, hash bool) json.RawMessage {
	kind := "string"
	switch raw[0] {
	case '{':
		kind = "object"
	case '[':
		kind = "array"
	case 't', 'f':
		kind = "boolean"
	case 'n':
		kind = "null"
	case '"':
	default:
		kind = "number"
	}
	e := Elided{Elided: kind, Path: p, Bytes: uint64(len(raw))}
	if hash {
		sum := sha256.Sum256(raw)
		e.SHA256 = hex.EncodeToString(sum[:])
	}
	b, _ := json.Marshal(e)
	return b
}
