package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/strata-db/strata/internal/suggest"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// Scopes (docs/design.md §4, docs/security.md T10). A database the scope does not permit does not exist for the
// principal, and neither does a resource: every read answers for a hidden name exactly as for a missing one,
// suggests only permitted names, and never lets hidden data reach its answer or a jq program. A revision is hidden
// when every resource it changed is hidden (a revision that changed no resource stays visible): it is left out of
// listings and histories, is "not found" by number, and a branch, snapshot or time that points at it stands for its
// newest visible first-parent ancestor, which holds the same permitted resources.
//
// Names are compared byte for byte (Names.Permits): case variants, look-alikes, escapes, NUL and overlong names
// match no pattern they do not spell, and then reach the library like any other name, which refuses or does not
// find them. With an unlimited scope (the default), none of this does any work.

// View is one database as a principal may see it: a reader like the database itself (Resolve, Get, Resources,
// History, ShowRevision, Diff, PathHistory, Query, Bisect, Branches, Snapshots), with the principal's scope applied
// once, here. Writes through a view go under the principal's policy (write.go).
type View struct {
	a    *Actor
	name string
	db   *snapshots.DB
}

// Databases lists the databases the principal may see, in name order.
func (a *Actor) Databases(ctx context.Context) ([]string, error) {
	names, err := a.g.dir.Names()
	if err != nil || !a.limited() {
		return names, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return !a.dbPermitted(n) }), nil
}

// missingDatabase is the error of a database that does not exist, suggesting permitted names only.
func (a *Actor) missingDatabase(ctx context.Context, name string) error {
	if err := snapshots.ValidDatabaseName(name); err != nil {
		return err
	}
	names, _ := a.Databases(ctx)
	return &snapshots.NotFoundError{What: "database", Name: name, DidYouMean: suggest.Closest(name, names), Hint: "create it first"}
}

// dbErr recomputes the suggestions of a missing database from the permitted names only (the library suggests from
// all names).
func (a *Actor) dbErr(ctx context.Context, err error) error {
	var nf *snapshots.NotFoundError
	if err == nil || !a.limited() || !errors.As(err, &nf) || nf.What != "database" {
		return err
	}
	names, _ := a.Databases(ctx)
	cp := *nf
	cp.DidYouMean = suggest.Closest(nf.Name, names)
	return &cp
}

// Open returns a database as the principal sees it; a hidden one is missing.
func (a *Actor) Open(ctx context.Context, name string) (*View, error) {
	if a.limited() && !a.dbPermitted(name) {
		return nil, a.missingDatabase(ctx, name)
	}
	db, err := a.g.dir.Open(ctx, name)
	if err != nil {
		return nil, a.dbErr(ctx, err)
	}
	recordDatabase(ctx, name)
	return &View{a: a, name: name, db: db}, nil
}

// DatabaseInfo summarises a database the principal may see; its heads are their newest visible revisions.
func (a *Actor) DatabaseInfo(ctx context.Context, name string) (snapshots.DatabaseInfo, error) {
	v, err := a.Open(ctx, name)
	if err != nil {
		return snapshots.DatabaseInfo{}, err
	}
	info, err := a.g.dir.Info(ctx, name)
	if err != nil || !a.limited() {
		return info, err
	}
	// The file's size and the revision count move with hidden commits too: the principal learns only the newest
	// revision it can see.
	memo := map[uint64]uint64{}
	info.FileBytes, info.Revisions = 0, 0
	for b, h := range info.Heads {
		info.Heads[b] = v.visibleNumber(ctx, h, memo)
		info.Revisions = max(info.Revisions, info.Heads[b])
	}
	return info, nil
}

// Name is the database's name.
func (v *View) Name() string { return v.name }

// Forest reads the values the view returned (a value reaches only its own subtree).
func (v *View) Forest() *revision.Forest { return v.db.Forest() }

// Now is the time by the database's clock.
func (v *View) Now() time.Time { return v.db.Now() }

// Protects reports whether a branch is protected for the principal.
func (v *View) Protects(branch string) bool { return v.a.p.Protects(branch) }

// revisionVisible reports whether a revision is visible: it changed no resource, or at least one permitted one.
func (v *View) revisionVisible(r store.RevisionRecord) bool {
	if !v.a.limited() || len(r.Resources) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Resources, v.a.resPermitted)
}

// permittedOnly returns the permitted names among names.
func (v *View) permittedOnly(names []string) []string {
	if !v.a.limited() {
		return names
	}
	out := []string{}
	for _, n := range names {
		if v.a.resPermitted(n) {
			out = append(out, n)
		}
	}
	return out
}

// missingRevision is the error of a revision number that does not exist.
// The range of revisions is not told: it would count the hidden ones.
func (v *View) missingRevision(ctx context.Context, n uint64) error {
	return &snapshots.NotFoundError{What: "revision", Name: strconv.FormatUint(n, 10), Hint: "history lists the revisions you can read"}
}

// visibleAncestor returns the newest visible revision on the first-parent chain from n down (n itself when
// visible). ok is false when there is none.
func (v *View) visibleAncestor(ctx context.Context, n uint64) (st snapshots.State, ok bool, err error) {
	for n != 0 {
		if st, err = v.db.Resolve(ctx, snapshots.Ref{Revision: n}); err != nil {
			return st, false, err
		}
		if v.revisionVisible(st.Rev) {
			return st, true, nil
		}
		n = 0
		if len(st.Rev.Parents) > 0 {
			n = st.Rev.Parents[0]
		}
	}
	return snapshots.State{}, false, nil
}

// visibleNumber is the newest visible revision on the first-parent chain from n down (0 when none, or n is 0).
// memo, if not nil, remembers answers.
// VisibleRevision is revision n as the principal sees it: n itself, or for a scoped principal the newest
// first-parent ancestor of n that it may see (0 if none). A plan's base is the real head it was computed on, which
// may be a revision the principal cannot see: front ends show it so (found in review: the review page linked a
// scoped reviewer to a hidden revision, and said the branch had moved when nothing it could see had).
func (v *View) VisibleRevision(ctx context.Context, n uint64) uint64 {
	return v.visibleNumber(ctx, n, nil)
}

func (v *View) visibleNumber(ctx context.Context, n uint64, memo map[uint64]uint64) uint64 {
	if n == 0 || !v.a.limited() {
		return n
	}
	if x, ok := memo[n]; ok {
		return x
	}
	st, ok, err := v.visibleAncestor(ctx, n)
	x := uint64(0)
	if err == nil && ok {
		x = st.Rev.Number
	}
	if memo != nil {
		memo[n] = x
	}
	return x
}

// Resolve finds the state a ref names, as the principal sees it: a hidden revision named by its number is not
// found; one reached through a branch, snapshot or time stands for its newest visible first-parent ancestor.
func (v *View) Resolve(ctx context.Context, ref snapshots.Ref) (snapshots.State, error) {
	st, err := v.db.Resolve(ctx, ref)
	if err != nil {
		var nf *snapshots.NotFoundError
		if v.a.limited() && errors.As(err, &nf) && nf.What == "revision" && ref.Revision != 0 {
			return st, v.missingRevision(ctx, ref.Revision) // the library's hint counts every revision
		}
		return st, v.a.dbErr(ctx, err)
	}
	if !v.a.limited() || v.revisionVisible(st.Rev) {
		return st, nil
	}
	if ref.Revision != 0 {
		return snapshots.State{}, v.missingRevision(ctx, ref.Revision)
	}
	anc, ok, err := v.visibleAncestor(ctx, st.Rev.Number)
	if err != nil {
		return snapshots.State{}, err
	}
	if !ok {
		return snapshots.State{}, v.missingRevision(ctx, st.Rev.Number)
	}
	anc.Branch = st.Branch
	return anc, nil
}

// Record shows a revision record as the principal sees it: its hidden resources left out, its parents replaced by
// their newest visible ancestors (so that a hidden revision's number never shows). memo, if not nil, remembers
// ancestors across calls.
func (v *View) Record(ctx context.Context, r store.RevisionRecord, memo map[uint64]uint64) store.RevisionRecord {
	if !v.a.limited() {
		return r
	}
	r.Resources = v.permittedOnly(r.Resources)
	if len(r.Parents) > 0 {
		ps := []uint64{v.visibleNumber(ctx, r.Parents[0], memo)}
		if len(r.Parents) > 1 {
			if m := v.visibleNumber(ctx, r.Parents[1], memo); m != ps[0] {
				ps = append(ps, m)
			}
		}
		if ps[0] == 0 && len(ps) == 1 {
			ps = nil
		}
		r.Parents = ps
	}
	return r
}

// Resources lists the resources at a state that the principal may see, in name order.
func (v *View) Resources(ctx context.Context, st snapshots.State) ([]snapshots.ResourceSummary, error) {
	all, err := v.db.Resources(ctx, st)
	if err != nil || !v.a.limited() {
		return all, err
	}
	return slices.DeleteFunc(all, func(r snapshots.ResourceSummary) bool { return !v.a.resPermitted(r.Name) }), nil
}

// permittedResources are the names of the resources at a state that the scope lets through.
func (v *View) permittedResources(ctx context.Context, st snapshots.State) []string {
	var names []string
	rs, _ := v.Resources(ctx, st)
	for _, r := range rs {
		names = append(names, r.Name)
	}
	return names
}

// missingResource is the error of a resource that is not in state st, suggesting permitted names only.
func (v *View) missingResource(ctx context.Context, st snapshots.State, name string) error {
	if err := snapshots.ValidResourceName(name); err != nil {
		return err
	}
	return &snapshots.NotFoundError{What: "resource", Name: name,
		DidYouMean: suggest.Closest(name, v.permittedResources(ctx, st)),
		Hint:       fmt.Sprintf("not in revision %d", st.Rev.Number)}
}

// Get returns a resource's value at a state; a hidden resource is missing.
func (v *View) Get(ctx context.Context, st snapshots.State, resource string) (revision.Value, error) {
	if v.a.limited() && !v.a.resPermitted(resource) {
		return revision.Value{}, v.missingResource(ctx, st, resource)
	}
	val, _, err := v.db.Get(ctx, snapshots.Ref{Revision: st.Rev.Number}, resource, nil)
	if err == nil || !v.a.limited() {
		return val, err
	}
	var nf *snapshots.NotFoundError
	if !errors.As(err, &nf) {
		return val, err
	}
	if nf.What != "resource" {
		return val, v.a.dbErr(ctx, err)
	}
	cp := *nf
	cp.DidYouMean = suggest.Closest(nf.Name, v.permittedResources(ctx, st))
	return val, &cp
}

// Schema returns the schema the operator set for a resource the principal may see (ok false: it has none). A hidden
// resource answers as one without a schema.
func (v *View) Schema(ctx context.Context, resource string) (rec snapshots.SchemaRecord, ok bool, err error) {
	if v.a.limited() && !v.a.resPermitted(resource) {
		return rec, false, nil
	}
	return v.db.Schema(ctx, resource)
}

// noResource is a resource name no database holds (it is not a valid name): a history filtered by it walks the
// whole branch and finds nothing, as a filter by a missing resource does.
const noResource = "\x00hidden"

// History lists revisions of a branch as the principal sees them: hidden revisions left out (also from the paging:
// it reads on until it has q.Limit visible revisions or the history ends), each record as Record shows it, and a
// filter by a hidden resource finds nothing, as one by a missing resource does.
func (v *View) History(ctx context.Context, q snapshots.HistoryQuery) (*snapshots.HistoryPage, error) {
	if !v.a.limited() {
		return v.db.History(ctx, q)
	}
	if q.Resource != "" && !v.a.resPermitted(q.Resource) {
		q.Resource = noResource
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	out := &snapshots.HistoryPage{Revisions: []store.RevisionRecord{}}
	memo := map[uint64]uint64{}
	for {
		q.Limit = limit - len(out.Revisions)
		p, err := v.db.History(ctx, q)
		if err != nil {
			return nil, err
		}
		// Every round reads the chain the first one did. The page names its start as the principal may see it: the
		// newest visible revision on that chain, from which the same visible revisions follow.
		if out.Head == 0 {
			out.Head = v.visibleNumber(ctx, p.Head, memo)
		}
		q.Head = p.Head
		for _, r := range p.Revisions {
			if v.revisionVisible(r) {
				out.Revisions = append(out.Revisions, v.Record(ctx, r, memo))
			}
		}
		if p.Next == 0 {
			return out, nil
		}
		if len(out.Revisions) >= limit || len(p.Revisions) < q.Limit {
			// Full, or the walk stopped at its scan limit (as for a name nothing changed, hidden or not): the
			// caller goes on from the cursor.
			out.Next = p.Next
			return out, nil
		}
		q.Before = p.Next
	}
}

// ShowRevision is one revision and what it changed against its first parent, as the principal sees it: a hidden
// revision is not found, and the change covers permitted resources only.
func (v *View) ShowRevision(ctx context.Context, n uint64, maxOps int) (*snapshots.RevisionDetail, error) {
	if !v.a.limited() {
		return v.db.ShowRevision(ctx, n, maxOps)
	}
	st, err := v.Resolve(ctx, snapshots.Ref{Revision: n}) // a hidden revision is not found, as a missing one
	if err != nil {
		return nil, err
	}
	before := revision.EmptyObject
	if len(st.Rev.Parents) > 0 {
		p, err := v.db.Resolve(ctx, snapshots.Ref{Revision: st.Rev.Parents[0]})
		if err != nil {
			return nil, err
		}
		before = p.Root
	}
	d, err := v.scopedDiff(ctx, before, st.Root, maxOps)
	if err != nil {
		return nil, err
	}
	return &snapshots.RevisionDetail{Rev: v.Record(ctx, st.Rev, nil), Diff: d}, nil
}

// Diff compares two states the principal resolved through this view: the whole database (permitted resources
// only), one resource, or a path inside it. A hidden resource is absent from both states, as a missing one is.
// opts.MaxOps bounds the operations computed.
func (v *View) Diff(ctx context.Context, from, to snapshots.State, resource string, ptr revision.Pointer, opts *revision.DiffOptions) (d *revision.DiffResult, err error) {
	ctx, end := diffSpan(ctx)
	defer func() { end(d, err) }()
	switch {
	case !v.a.limited() || (resource != "" && v.a.resPermitted(resource)):
		d, _, _, err := v.db.Diff(ctx, snapshots.Ref{Revision: from.Rev.Number}, snapshots.Ref{Revision: to.Rev.Number}, resource, ptr, opts)
		return d, err
	case resource != "":
		return nil, &snapshots.NotFoundError{What: "resource", Name: resource + ptr.String(),
			Hint: fmt.Sprintf("absent in both revision %d and revision %d", from.Rev.Number, to.Rev.Number)}
	}
	maxOps := 0
	if opts != nil {
		maxOps = opts.MaxOps
	}
	return v.scopedDiff(ctx, from.Root, to.Root, maxOps)
}

// scopedDiff compares two database roots as the library's whole-root diff does, but only over permitted
// resources: operations under hidden resources are never computed, and counts cover permitted resources only.
// maxOps bounds the operations (0: no bound); past it, Truncated is set.
func (v *View) scopedDiff(ctx context.Context, a, b revision.Value, maxOps int) (*revision.DiffResult, error) {
	f := v.db.Forest()
	members := map[string][2]revision.Value{}
	for i, root := range []revision.Value{a, b} {
		if !root.IsValid() {
			continue
		}
		err := f.Members(ctx, root, func(name string, val revision.Value) error {
			if v.a.resPermitted(name) {
				m := members[name]
				m[i] = val
				members[name] = m
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	out := &revision.DiffResult{Operations: []revision.DiffOp{}}
	full := func() bool { return maxOps > 0 && len(out.Operations) >= maxOps }
	for _, n := range names {
		m := members[n]
		va, vb := m[0], m[1]
		if va.IsValid() && vb.IsValid() && va.Hash() == vb.Hash() {
			continue
		}
		if full() {
			out.Truncated = true
			break
		}
		prefix := "/" + revision.EscapeToken(n)
		switch {
		case !va.IsValid():
			j, err := f.JSON(ctx, vb)
			if err != nil {
				return nil, err
			}
			out.Operations = append(out.Operations, revision.DiffOp{Op: "add", Path: prefix, Value: j})
			out.Counts.Added++
		case !vb.IsValid():
			j, err := f.JSON(ctx, va)
			if err != nil {
				return nil, err
			}
			out.Operations = append(out.Operations, revision.DiffOp{Op: "remove", Path: prefix, OldValue: j})
			out.Counts.Removed++
		default:
			opts := &revision.DiffOptions{}
			if maxOps > 0 {
				opts.MaxOps = maxOps - len(out.Operations)
			}
			d, err := f.Diff(ctx, va, vb, opts)
			if err != nil {
				return nil, err
			}
			for _, o := range d.Operations {
				o.Path = prefix + o.Path
				if o.From != "" || o.Op == "move" || o.Op == "copy" {
					o.From = prefix + o.From
				}
				out.Operations = append(out.Operations, o)
			}
			out.Counts.Added += d.Counts.Added
			out.Counts.Removed += d.Counts.Removed
			out.Counts.Replaced += d.Counts.Replaced
			out.Counts.Moved += d.Counts.Moved
			if d.Truncated {
				out.Truncated = true
				return out, nil
			}
		}
	}
	return out, nil
}

// PathHistory lists the revisions of a branch, newest first, where the value at q.Path inside q.Resource changed,
// each record as Record shows it. A hidden resource is missing: the branch is walked, and no revision changed it.
func (v *View) PathHistory(ctx context.Context, q snapshots.HistoryQuery) (*snapshots.PathHistoryPage, error) {
	if v.a.limited() && !v.a.resPermitted(q.Resource) {
		if err := snapshots.ValidResourceName(q.Resource); err != nil {
			return nil, err
		}
		p, err := v.db.History(ctx, snapshots.HistoryQuery{Branch: q.Branch, Resource: noResource, Limit: 1, Before: q.Before, Head: q.Head})
		if err != nil {
			return nil, err
		}
		// the cursor a walk past the scan limit gives any name
		return &snapshots.PathHistoryPage{Changes: []snapshots.PathChange{}, Next: p.Next, Head: v.VisibleRevision(ctx, p.Head)}, nil
	}
	p, err := v.db.PathHistory(ctx, q)
	if err != nil || !v.a.limited() {
		return p, err
	}
	memo := map[uint64]uint64{}
	p.Head = v.visibleNumber(ctx, p.Head, memo)
	for i := range p.Changes {
		p.Changes[i].Rev = v.Record(ctx, p.Changes[i].Rev, memo)
	}
	return p, nil
}

// Branches lists the branches, each head and base as its newest visible revision.
func (v *View) Branches(ctx context.Context) ([]store.BranchRecord, error) {
	bs, err := v.db.Branches(ctx)
	if err != nil || !v.a.limited() {
		return bs, err
	}
	memo := map[uint64]uint64{}
	for i := range bs {
		bs[i].Head = v.visibleNumber(ctx, bs[i].Head, memo)
		bs[i].Base = v.visibleNumber(ctx, bs[i].Base, memo)
	}
	return bs, nil
}

// Snapshots lists the snapshots, each revision as its newest visible revision.
func (v *View) Snapshots(ctx context.Context) ([]store.LabelRecord, error) {
	ls, err := v.db.Snapshots(ctx)
	if err != nil || !v.a.limited() {
		return ls, err
	}
	memo := map[uint64]uint64{}
	for i := range ls {
		ls[i].Revision = v.visibleNumber(ctx, ls[i].Revision, memo)
	}
	return ls, nil
}

// Query runs a jq program at a state (a resource of it, or the object of all resources) in the gate's engine.
// Hidden resources never reach the program: a hidden resource is "not found", and the object of all resources
// holds the permitted ones only. req.Caller is the principal, so that a cursor works only for them.
func (v *View) Query(ctx context.Context, ref snapshots.Ref, req query.Request) (*query.Result, error) {
	req.Caller = v.a.p.Name
	if v.a.limited() {
		req.Visible = v.a.resPermitted
		if req.Cursor == "" {
			st, err := v.Resolve(ctx, ref)
			if err != nil {
				return nil, err
			}
			ref = snapshots.Ref{Revision: st.Rev.Number}
		}
	}
	return v.a.g.engine.Query(ctx, v.db, ref, req)
}

// Bisect finds the first revision on a branch where a jq predicate became true (query.Engine.Bisect), as the
// principal sees the history: revisions that changed only hidden resources are not on it, a hidden resource is
// absent (null) throughout, and the object of all resources holds the permitted ones only.
func (v *View) Bisect(ctx context.Context, req query.BisectRequest) (*query.BisectResult, error) {
	if v.a.limited() {
		req.Visible = v.a.resPermitted
	}
	return v.a.g.engine.Bisect(ctx, v.db, req)
}
