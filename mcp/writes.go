package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// The write tools of docs/design.md §3.3, registered only when the policy lets something change. Every revision they
// make records the principal as its author, the tool's name as its tool and the message argument as its message.
// Each runs under the policy (plans.go): allowed, answered with a plan a person must confirm, or denied. transform
// is in query.go, apply_plan in plans.go.

// writeOut is what a write that committed a revision answers.
type writeOut struct {
	Database  string    `json:"database"`
	Revision  uint64    `json:"revision"`
	Branch    string    `json:"branch"`
	Parent    uint64    `json:"parent,omitempty"`
	Time      time.Time `json:"time"`
	Resources []string  `json:"resources"`
	NewNodes  int       `json:"new_nodes"`
	NewBytes  int64     `json:"new_bytes"`
	Replayed  bool      `json:"replayed"`
	Unchanged bool      `json:"unchanged,omitempty"`
	// ResourcesMore is how many more resources it changed than Resources lists (cut to fit the answer).
	ResourcesMore int `json:"resources_more,omitempty"`
}

var writeOutProps = []prop{
	oDatabase,
	{"revision", intS("the revision this write committed")},
	{"branch", strS("the branch it was committed on")},
	{"parent", intS("the revision it was made on")},
	{"time", strS("when it was committed (RFC 3339)")},
	{"resources", strArrS("the resources it changed", "a resource name")},
	oResourcesMore,
	{"new_nodes", intS("how many storage nodes it added")},
	{"new_bytes", intS("how many bytes of storage it added")},
	{"replayed", boolS("true when an earlier call with the same idempotency_key had already committed it: that call's result, nothing new was written")},
	{"unchanged", boolS("true when the write changed nothing: no revision was made and revision is the branch head")},
}

var writeOutRequired = []string{"database", "revision", "branch", "time", "resources", "new_nodes", "new_bytes", "replayed"}

// writeOutSchema is the output of a write tool: the revision it committed, or the plan it made instead.
func writeOutSchema() schema {
	return orPlan(outputSchema(writeOutRequired, writeOutProps...))
}

func (c *call) writeOut(res *snapshots.Result) writeOut {
	out := writeOut{Database: c.a.str("database"), Revision: res.Revision, Branch: res.Branch, Parent: res.Parent,
		Time: res.Time, NewNodes: res.NewNodes, NewBytes: res.NewBytes, Replayed: res.Replayed,
		Unchanged: res.Unchanged}
	// A write that committed must answer so, whatever it touched: its list of resources is cut to fit.
	out.Resources, out.ResourcesMore = clipNames(res.Resources, c.s.budget()/2)
	return out
}

// writeSummary says what a committed write did.
func writeSummary(res *snapshots.Result, what string) string {
	if res.Replayed {
		return fmt.Sprintf("revision %d on %s: already committed by an earlier call with this idempotency_key; nothing new was written.", res.Revision, res.Branch)
	}
	switch {
	case res.Unchanged:
		return fmt.Sprintf("revision %d on %s: %s changed nothing; no revision was made.", res.Revision, res.Branch, what)
	case len(res.Resources) == 0:
		return fmt.Sprintf("revision %d on %s: %s; no resource changed.", res.Revision, res.Branch, what)
	}
	// The resources it changed are in the answer's resources.
	return fmt.Sprintf("revision %d on %s: %s.", res.Revision, res.Branch, what)
}

// change is the gate's change for this call: its operation, resource, path and write arguments.
func (c *call) change(op string) gate.Change {
	return gate.Change{Op: op, Resource: c.a.str("resource"), Path: c.a.str("path"), Branch: c.a.str("branch"),
		ExpectedHead: c.a.uint("expected_head"), Message: c.a.str("message"), IdempotencyKey: c.a.str("idempotency_key"),
		Tool: c.t.name}
}

// write makes a change through the gate and answers what it did: the revision committed, the plan that needs a
// person's confirmation, or the refusal.
func (c *call) write(ctx context.Context, ch gate.Change) (string, any, error) {
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	out, err := v.Write(ctx, ch)
	return c.answer(ctx, v, ch, out, err)
}

// answer shapes the outcome of a write (a call's, or a plan's being applied).
func (c *call) answer(ctx context.Context, v *gate.View, ch gate.Change, out *gate.Outcome, err error) (string, any, error) {
	if err != nil {
		if out != nil && out.Promote != nil && len(out.Promote.Conflicts) > 0 && gate.Code(err) == codeConflict {
			return "", nil, c.conflicts(ctx, v, ch, out.Promote, err)
		}
		return "", nil, resolutionError(err)
	}
	switch {
	case out.Plan != nil:
		p := c.planOut(v, out.Plan)
		return p.summary(), p, nil
	case out.Branch != nil:
		b := out.Branch
		return fmt.Sprintf("deleted branch %s (its head was revision %d).", b.Name, b.Head), c.branchOut(*b), nil
	case out.Label != nil:
		l := out.Label
		return fmt.Sprintf("deleted snapshot %s (it named revision %d).", l.Name, l.Revision), c.snapshotOut(*l), nil
	case ch.Op == gate.OpPromote:
		pr := out.Promote
		po := promoteOut{writeOut: c.writeOut(pr.Result), FastForward: pr.FastForward}
		what := fmt.Sprintf("promoted %s into %s", ch.Source, branchOr(ch.Branch))
		if pr.Unchanged {
			// Nothing was merged now: the head's second parent would be some earlier merge's.
			return writeSummary(pr.Result, what), po, nil
		}
		how := "merged"
		if pr.FastForward {
			how = "fast-forward"
		}
		if st, err := v.Resolve(ctx, snapshots.Ref{Revision: pr.Revision}); err == nil && len(st.Rev.Parents) > 1 {
			po.Merged = st.Rev.Parents[1]
		}
		return writeSummary(pr.Result, fmt.Sprintf("%s (%s)", what, how)), po, nil
	}
	return writeSummary(out.Result, ch.Summary()), c.writeOut(out.Result), nil
}

var (
	pValue = param{name: "value", kind: kJSON, required: true, desc: "any JSON, stored exactly as written"}
	pName  = func(what string) param {
		return param{name: "name", kind: kString, required: true, desc: what}
	}
	// refName is what a new branch's or snapshot's name may be.
	refName = `letters, digits, "." "_" "-" "/"; not only digits`
)

func writeTools() []*toolSpec {
	return []*toolSpec{
		{
			name: "create_database", title: "Create a database", write: true,
			desc:   "A new, empty database with branch main.",
			params: one(param{name: "database", kind: kString, required: true, desc: `up to 64 lower-case letters, digits, "_" "-"`}),
			output: writeOutSchema(),
			handle: createDatabase,
		},
		{
			name: "put", title: "Put a resource", write: true, destructive: true,
			desc:   "Create a resource, or replace it whole, as one revision.",
			params: params(one(pDatabase, param{name: "resource", kind: kString, required: true, desc: `up to 128 letters, digits, "." "_" "-"`}, pValue), writeParams()),
			output: writeOutSchema(),
			handle: put,
		},
		{
			name: "patch", title: "Patch a resource", write: true, destructive: true,
			desc: "RFC 6902 operations on a resource, as one revision: if one fails (a test or old_value that does not hold, a missing path), nothing is written. A diff's operations apply as they are.",
			params: params(one(pDatabase, pResource,
				param{name: "operations", kind: kPatch, required: true, desc: "applied in order; paths inside the resource"}),
				writeParams()),
			output: writeOutSchema(),
			handle: patch,
		},
		{
			name: "insert", title: "Insert a value", write: true, destructive: true,
			desc:   `RFC 6902 add at path: into an array ("/-" appends), a member of an object (replacing it), or at "" the whole resource.`,
			params: params(one(pDatabase, pResource, pPath, pValue), writeParams()),
			output: writeOutSchema(),
			handle: insert,
		},
		{
			name: "update", title: "Update a value", write: true, destructive: true,
			desc:   "RFC 6902 replace at path: the value there, which must exist, becomes value.",
			params: params(one(pDatabase, pResource, pPath, pValue), writeParams()),
			output: writeOutSchema(),
			handle: update,
		},
		{
			name: "delete", title: "Delete a value", write: true, destructive: true,
			desc:   `RFC 6902 remove at path; at "" the whole resource (restore brings it back).`,
			params: params(one(pDatabase, pResource, pPath), writeParams()),
			output: writeOutSchema(),
			handle: del,
		},
		{
			name: "restore", title: "Restore a value", write: true, destructive: true,
			desc: "The value at path becomes what it was at an earlier state (from_…): undelete a resource, roll back a field; absent then, it is removed.",
			params: params(one(pDatabase, pResource, pPath),
				refParams("from_"), writeParams()),
			output: writeOutSchema(),
			handle: restore,
		},
		{
			name: "revert", title: "Revert a branch", write: true, destructive: true,
			desc: "A new revision of branch whose whole state equals an earlier one (revision, snapshot or at). Revert again to undo.",
			params: params(one(pDatabase,
				param{name: "branch", kind: kString},
				param{name: "revision", kind: kInteger, min: 1},
				param{name: "snapshot", kind: kString},
				param{name: "at", kind: kTime}),
				writeParams()[1:]),
			output: writeOutSchema(),
			handle: revert,
		},
		{
			name: "create_branch", title: "Create a branch", write: true,
			desc: "A new branch at a state (from_…; default the head of main), in O(1). Branches and snapshots share names.",
			params: params(one(pDatabase, pName(refName)),
				refParams("from_")),
			output: outputSchema([]string{"database", "branch", "revision", "base", "created", "protected"}, branchOutProps()...),
			handle: createBranch,
		},
		{
			name: "delete_branch", title: "Delete a branch", write: true, destructive: true,
			desc:   "Drop a branch name; its revisions stay readable by number until garbage collection.",
			params: one(pDatabase, pName("the branch")),
			output: orPlan(outputSchema([]string{"database", "branch", "revision", "base", "created", "protected"}, branchOutProps()...)),
			handle: deleteBranch,
		},
		{
			name: "create_snapshot", title: "Create a snapshot", write: true,
			desc: "A fixed name for a state (default the head of main), with an optional note, in O(1). It keeps the revision from garbage collection.",
			params: params(one(pDatabase, pName(refName)),
				refParams(""),
				one(param{name: "note", kind: kString})),
			output: outputSchema([]string{"database", "snapshot", "revision", "created"}, snapshotOutProps()...),
			handle: createSnapshot,
		},
		{
			name: "delete_snapshot", title: "Delete a snapshot", write: true, destructive: true,
			desc:   "Remove a snapshot name; the revision stays while a branch reaches it.",
			params: one(pDatabase, pName("the snapshot")),
			output: orPlan(outputSchema([]string{"database", "snapshot", "revision", "created"}, snapshotOutProps()...)),
			handle: deleteSnapshot,
		},
		{
			name: "promote", title: "Promote a branch", write: true, destructive: true,
			desc: "Bring the changes of branch into the branch into (default main): a fast-forward if into has not moved, else a three-way merge: objects by member, arrays by element (objects with a unique id aligned by it). Paths both sides changed differently come back as conflicts, with base, into and branch values; nothing is written unless resolve settles each.",
			params: one(pDatabase,
				param{name: "branch", kind: kString, required: true, desc: "the branch to bring in"},
				param{name: "into", kind: kString},
				pResolve,
				param{name: "expected_head", kind: kInteger, min: 1, desc: "of into"},
				param{name: "message", kind: kString},
				param{name: "idempotency_key", kind: kString}),
			output: orPlan(outputSchema(append(slices.Clone(writeOutRequired), "fast_forward"),
				append(slices.Clone(writeOutProps),
					prop{"fast_forward", boolS("true when into had not moved since the branch left it: the new revision holds the branch's head (merged) as it is")},
					prop{"merged", intS("the branch revision brought in")})...)),
			handle: promote,
		},
	}
}

// ---- create_database

func createDatabase(ctx context.Context, c *call) (string, any, error) {
	name := c.a.str("database")
	v, err := c.s.actor.CreateDatabase(ctx, name)
	if err != nil {
		return "", nil, err
	}
	st, err := v.Resolve(ctx, snapshots.Ref{})
	if err != nil {
		return "", nil, err
	}
	out := writeOut{Database: name, Revision: st.Rev.Number, Branch: st.Rev.Branch, Time: st.Rev.Time, Resources: []string{}}
	return fmt.Sprintf("created database %s: revision %d on main.", name, st.Rev.Number), out, nil
}

// ---- put, insert, update, delete, patch

func put(ctx context.Context, c *call) (string, any, error) {
	ch := c.change(gate.OpPut)
	ch.Value = c.a.raw("value")
	return c.write(ctx, ch)
}

func insert(ctx context.Context, c *call) (string, any, error) {
	ch := c.change(gate.OpInsert)
	ch.Value = c.a.raw("value")
	return c.write(ctx, ch)
}

func update(ctx context.Context, c *call) (string, any, error) {
	ch := c.change(gate.OpUpdate)
	ch.Value = c.a.raw("value")
	return c.write(ctx, ch)
}

func del(ctx context.Context, c *call) (string, any, error) {
	return c.write(ctx, c.change(gate.OpDelete))
}

// patchMembers are the members an operation may have: RFC 6902's, and old_value, the precondition a diff's
// operations carry. RFC 6902 ignores other members; this server's schemas are closed, so a misspelt member
// ("vaule") is refused instead of silently ignored — the one place where it is stricter than RFC 6902 §4.
var patchMembers = []string{"op", "path", "from", "value", "old_value"}

func patch(ctx context.Context, c *call) (string, any, error) {
	raw := c.a.raw("operations")
	if _, err := revision.ParsePatch(raw); err != nil {
		return "", nil, err
	}
	var members []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err == nil {
		var faults, near []string
		for i, m := range members {
			for k := range m {
				if !slices.Contains(patchMembers, k) {
					f := fmt.Sprintf("operation %d has an unknown member %q", i, clip(k))
					if s := closestNames(k, patchMembers); len(s) > 0 {
						f += fmt.Sprintf(" (did you mean %s?)", quoteAll(s))
						near = append(near, s...)
					}
					faults = append(faults, f)
				}
			}
		}
		if len(faults) > 0 {
			slices.Sort(faults)
			e := newError(codeInvalidArgument, "patch refused its operations, and nothing was done: %s", strings.Join(faults, "; "))
			e.Hint = "an operation has op, path, and from (move, copy) or value (add, replace, test), and may have old_value"
			slices.Sort(near)
			e.DidYouMean = slices.Compact(near)
			return "", nil, e
		}
	}
	ch := c.change(gate.OpPatch)
	ch.Patch = raw
	return c.write(ctx, ch)
}

// ---- restore and revert

func restore(ctx context.Context, c *call) (string, any, error) {
	from, given, err := c.a.ref("from_")
	if err != nil {
		return "", nil, err
	}
	if !given {
		return "", nil, newError(codeInvalidArgument, "restore needs the state to restore from: from_revision, from_snapshot, or from_branch (with from_at)")
	}
	ch := c.change(gate.OpRestore)
	ch.From = &from
	return c.write(ctx, ch)
}

func revert(ctx context.Context, c *call) (string, any, error) {
	var set []string
	for _, n := range []string{"revision", "snapshot", "at"} {
		if c.a.has(n) {
			set = append(set, n)
		}
	}
	if len(set) != 1 {
		return "", nil, newError(codeInvalidArgument, "revert needs exactly one state to return to: revision, snapshot or at (got %d)", len(set))
	}
	ch := c.change(gate.OpRevert)
	target := snapshots.Ref{Revision: c.a.uint("revision"), Snapshot: c.a.str("snapshot")}
	if c.a.has("at") {
		target = snapshots.Ref{Branch: branchOr(ch.Branch), At: c.a.timeRef("at")}
	}
	ch.Target = &target
	return c.write(ctx, ch)
}

// ---- branches and snapshots

type branchOut struct {
	Database  string    `json:"database"`
	Branch    string    `json:"branch"`
	Revision  uint64    `json:"revision"`
	Base      uint64    `json:"base"`
	Creator   string    `json:"creator,omitempty"`
	Created   time.Time `json:"created"`
	Protected bool      `json:"protected"`
}

func branchOutProps() []prop {
	return []prop{oDatabase,
		{"branch", strS("the branch")},
		{"revision", intS("its head revision")},
		{"base", intS("the revision it was created from")},
		{"creator", strS("who created it")},
		{"created", strS("when it was created (RFC 3339)")},
		{"protected", boolS("true when agents may change it only through a confirmed plan")}}
}

func (c *call) branchOut(b store.BranchRecord) branchOut {
	return branchOut{Database: c.a.str("database"), Branch: b.Name, Revision: b.Head, Base: b.Base, Creator: b.Creator,
		Created: b.Created, Protected: c.s.cfg.protected(b.Name)}
}

func createBranch(ctx context.Context, c *call) (string, any, error) {
	from, _, err := c.a.ref("from_")
	if err != nil {
		return "", nil, err
	}
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	b, err := v.CreateBranch(ctx, c.a.str("name"), from)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("created branch %s at revision %d.", b.Name, b.Head), c.branchOut(b), nil
}

func deleteBranch(ctx context.Context, c *call) (string, any, error) {
	ch := c.change(gate.OpDeleteBranch)
	ch.Resource, ch.Path, ch.Branch, ch.Name = "", "", "", c.a.str("name")
	return c.write(ctx, ch)
}

type snapshotOut struct {
	Database string    `json:"database"`
	Snapshot string    `json:"snapshot"`
	Revision uint64    `json:"revision"`
	Note     string    `json:"note,omitempty"`
	Creator  string    `json:"creator,omitempty"`
	Created  time.Time `json:"created"`
}

func snapshotOutProps() []prop {
	return []prop{oDatabase,
		{"snapshot", strS("the snapshot")},
		{"revision", intS("the revision it names")},
		{"note", strS("its note")},
		{"creator", strS("who created it")},
		{"created", strS("when it was created (RFC 3339)")}}
}

func (c *call) snapshotOut(l store.LabelRecord) snapshotOut {
	return snapshotOut{Database: c.a.str("database"), Snapshot: l.Name, Revision: l.Revision, Note: clipText(l.Note, maxMessage),
		Creator: l.Creator, Created: l.Created}
}

func createSnapshot(ctx context.Context, c *call) (string, any, error) {
	ref, _, err := c.a.ref("")
	if err != nil {
		return "", nil, err
	}
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	l, err := v.CreateSnapshot(ctx, c.a.str("name"), ref, c.a.str("note"))
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("created snapshot %s of revision %d.", l.Name, l.Revision), c.snapshotOut(l), nil
}

func deleteSnapshot(ctx context.Context, c *call) (string, any, error) {
	ch := c.change(gate.OpDeleteSnapshot)
	ch.Resource, ch.Path, ch.Branch, ch.Name = "", "", "", c.a.str("name")
	return c.write(ctx, ch)
}

// ---- promote

type promoteOut struct {
	writeOut
	FastForward bool   `json:"fast_forward"`
	Merged      uint64 `json:"merged,omitempty"`
}

func promote(ctx context.Context, c *call) (string, any, error) {
	ch := c.change(gate.OpPromote)
	ch.Source, ch.Branch = c.a.str("branch"), branchOr(c.a.str("into"))
	ch.Resolve = resolveArg(c.a.raw("resolve"))
	return c.write(ctx, ch)
}
