package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/strata-db/strata/internal/suggest"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// Scopes (docs/design.md §4, docs/security.md T10). A server serves one principal with one Scope. A database the scope does
// not permit does not exist for this principal, and neither does a resource: every tool, resource URI and completion
// answers for a hidden name exactly as for a missing one, suggests only permitted names, and never lets hidden data
// reach its answer or a jq program. A revision is hidden when every resource it changed is hidden (a revision that
// changed no resource stays visible): it is left out of listings and is "not found" by number.
//
// Names are compared byte for byte (Names.Permits): case variants, look-alikes, escapes, NUL and overlong names match
// no pattern they do not spell, and then reach the library like any other name, which refuses or does not find them.
//
// With an unlimited scope (the default), none of this does any work.

// selfScoped are the tools that enforce the scope themselves, so that a hidden name answers exactly as a missing one
// does in that tool (not found, an empty history, a null bisect input…). checkScope refuses hidden names for every
// other tool before it runs: a new tool is scoped conservatively until it is added here.
var selfScoped = map[string]bool{
	"status": true, "list_databases": true, "list_resources": true, "resource_info": true, "read": true,
	"history": true, "show_revision": true, "diff": true, "path_history": true, "query": true, "bisect": true,
	"list_branches": true, "list_snapshots": true,
}

// limited reports whether the scope hides anything.
func (s *server) limited() bool { return !s.cfg.Scope.Unlimited() }

// dbPermitted and resPermitted report whether the scope lets a name through.
func (s *server) dbPermitted(name string) bool  { return s.cfg.Scope.Databases.Permits(name) }
func (s *server) resPermitted(name string) bool { return s.cfg.Scope.Resources.Permits(name) }

// checkScope is the central check, run on every tool call before its handler: a database or resource argument the
// scope hides answers as a missing one. Tools in selfScoped check their own arguments, at the point where a missing
// name would be found missing.
func (c *call) checkScope(ctx context.Context) error {
	if !c.s.limited() || selfScoped[c.t.name] {
		return nil
	}
	if _, ok := c.t.param("database"); ok && c.a.has("database") {
		if name := c.a.str("database"); !c.s.dbPermitted(name) {
			return c.s.missingDatabase(name)
		}
	}
	if _, ok := c.t.param("resource"); ok && c.a.has("resource") {
		if name := c.a.str("resource"); !c.s.resPermitted(name) {
			if err := snapshots.ValidResourceName(name); err != nil {
				return err
			}
			return &snapshots.NotFoundError{What: "resource", Name: name}
		}
	}
	return nil
}

// hiddenAmong reports whether any of resources is hidden by the scope (for a revert or promote that would touch
// them).
func (c *call) hiddenAmong(resources []string) bool {
	if !c.s.limited() {
		return false
	}
	return slices.ContainsFunc(resources, func(r string) bool { return !c.s.resPermitted(r) })
}

// permittedDatabases are the names of the databases the scope lets through.
func (s *server) permittedDatabases() ([]string, error) {
	names, err := s.dir.Names()
	if err != nil || !s.limited() {
		return names, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return !s.dbPermitted(n) }), nil
}

// missingDatabase is the error of snapshots.Dir.Open for a database that does not exist, suggesting permitted names
// only.
func (s *server) missingDatabase(name string) error {
	if err := snapshots.ValidDatabaseName(name); err != nil {
		return err
	}
	names, _ := s.permittedDatabases()
	return &snapshots.NotFoundError{What: "database", Name: name, DidYouMean: suggest.Closest(name, names),
		Hint: "create it with create_database (strata db create " + name + ")"}
}

// openDB opens the call's database, which the scope must permit; a hidden one is missing.
func (c *call) openDB(ctx context.Context) (*snapshots.DB, error) {
	if !c.s.limited() {
		return c.db(ctx)
	}
	name := c.a.str("database")
	if !c.s.dbPermitted(name) {
		return nil, c.s.missingDatabase(name)
	}
	db, err := c.db(ctx)
	return db, c.s.scopeErr(err)
}

// scopeErr recomputes the suggestions of a missing database from the permitted names only (the library suggests
// from all names). A missing resource's suggestions need a state: see resourceErr.
func (s *server) scopeErr(err error) error {
	var nf *snapshots.NotFoundError
	if err == nil || !s.limited() || !errors.As(err, &nf) || nf.What != "database" {
		return err
	}
	names, _ := s.permittedDatabases()
	cp := *nf
	cp.DidYouMean = suggest.Closest(nf.Name, names)
	return &cp
}

// permittedResources are the names of the resources at a state that the scope lets through.
func (c *call) permittedResources(ctx context.Context, db *snapshots.DB, st snapshots.State) []string {
	var names []string
	rs, _ := db.Resources(ctx, st)
	for _, r := range rs {
		if c.s.resPermitted(r.Name) {
			names = append(names, r.Name)
		}
	}
	return names
}

// resourceErr recomputes the suggestions of a missing resource (at state st) from the permitted names only.
func (c *call) resourceErr(ctx context.Context, db *snapshots.DB, st snapshots.State, err error) error {
	var nf *snapshots.NotFoundError
	if err == nil || !c.s.limited() || !errors.As(err, &nf) {
		return err
	}
	if nf.What != "resource" {
		return c.s.scopeErr(err)
	}
	cp := *nf
	cp.DidYouMean = suggest.Closest(nf.Name, c.permittedResources(ctx, db, st))
	return &cp
}

// missingResource is the error of snapshots.DB.Get for a resource that is not in state st.
func (c *call) missingResource(ctx context.Context, db *snapshots.DB, st snapshots.State, name string) error {
	if err := snapshots.ValidResourceName(name); err != nil {
		return err
	}
	return &snapshots.NotFoundError{What: "resource", Name: name,
		DidYouMean: suggest.Closest(name, c.permittedResources(ctx, db, st)),
		Hint:       fmt.Sprintf("not in revision %d", st.Rev.Number)}
}

// revisionVisible reports whether a revision is visible: it changed no resource, or at least one permitted one.
func (s *server) revisionVisible(r store.RevisionRecord) bool {
	if !s.limited() || len(r.Resources) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Resources, s.resPermitted)
}

// permittedOnly returns the permitted names of a revision's resources.
func (s *server) permittedOnly(names []string) []string {
	if !s.limited() {
		return names
	}
	out := []string{}
	for _, n := range names {
		if s.resPermitted(n) {
			out = append(out, n)
		}
	}
	return out
}

// missingRevision is the error of snapshots.DB.Resolve for a revision number that does not exist.
func (c *call) missingRevision(ctx context.Context, n uint64) error {
	last := uint64(0)
	if info, err := c.s.dir.Info(ctx, c.a.str("database")); err == nil {
		last = info.Revisions
	}
	return &snapshots.NotFoundError{What: "revision", Name: strconv.FormatUint(n, 10), Hint: fmt.Sprintf("revisions run from 1 to %d", last)}
}

// visibleAncestor returns the newest visible revision on the first-parent chain from n down (n itself when visible).
// ok is false when there is none.
func (c *call) visibleAncestor(ctx context.Context, db *snapshots.DB, n uint64) (st snapshots.State, ok bool, err error) {
	for n != 0 {
		if st, err = db.Resolve(ctx, snapshots.Ref{Revision: n}); err != nil {
			return st, false, err
		}
		if c.s.revisionVisible(st.Rev) {
			return st, true, nil
		}
		n = 0
		if len(st.Rev.Parents) > 0 {
			n = st.Rev.Parents[0]
		}
	}
	return snapshots.State{}, false, nil
}

// scopeState applies the scope to a resolved state. A hidden revision named by its number is not found, as a
// revision that does not exist; one reached through a branch, snapshot or time is replaced by its newest visible
// first-parent ancestor, which holds the same permitted resources.
func (c *call) scopeState(ctx context.Context, db *snapshots.DB, ref snapshots.Ref, st snapshots.State) (snapshots.State, error) {
	if !c.s.limited() || c.s.revisionVisible(st.Rev) {
		return st, nil
	}
	if ref.Revision != 0 {
		return snapshots.State{}, c.missingRevision(ctx, ref.Revision)
	}
	anc, ok, err := c.visibleAncestor(ctx, db, st.Rev.Number)
	if err != nil {
		return snapshots.State{}, err
	}
	if !ok {
		return snapshots.State{}, c.missingRevision(ctx, st.Rev.Number)
	}
	anc.Branch = st.Branch
	return anc, nil
}

// scopeRevision shows a revision record with its hidden resources left out, and its parents replaced by their
// newest visible ancestors (so that a hidden revision's number never shows).
func (c *call) scopeRevision(ctx context.Context, db *snapshots.DB, j revisionJSON, memo map[uint64]uint64) revisionJSON {
	if !c.s.limited() {
		return j
	}
	j.Resources = c.s.permittedOnly(j.Resources)
	j.Parent, j.Merged = c.visibleNumber(ctx, db, j.Parent, memo), c.visibleNumber(ctx, db, j.Merged, memo)
	if j.Merged == j.Parent {
		j.Merged = 0
	}
	return j
}

// visibleNumber is the newest visible revision on the first-parent chain from n down (0 when none, or n is 0).
// memo, if not nil, remembers answers.
func (c *call) visibleNumber(ctx context.Context, db *snapshots.DB, n uint64, memo map[uint64]uint64) uint64 {
	if n == 0 || !c.s.limited() {
		return n
	}
	if v, ok := memo[n]; ok {
		return v
	}
	st, ok, err := c.visibleAncestor(ctx, db, n)
	v := uint64(0)
	if err == nil && ok {
		v = st.Rev.Number
	}
	if memo != nil {
		memo[n] = v
	}
	return v
}

// scopeHeads shows branch heads of database name as their newest visible revisions.
func (c *call) scopeHeads(ctx context.Context, name string, heads []headJSON) {
	if !c.s.limited() || len(heads) == 0 {
		return
	}
	db, err := c.s.dir.Open(ctx, name)
	if err != nil {
		return
	}
	memo := map[uint64]uint64{}
	for i := range heads {
		heads[i].Revision = c.visibleNumber(ctx, db, heads[i].Revision, memo)
	}
}

// visibleHistory is db.History with hidden revisions left out, also from the paging: it reads on until it has
// q.Limit visible revisions or the history ends.
func (c *call) visibleHistory(ctx context.Context, db *snapshots.DB, q snapshots.HistoryQuery) (*snapshots.HistoryPage, error) {
	if !c.s.limited() {
		return db.History(ctx, q)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	out := &snapshots.HistoryPage{Revisions: []store.RevisionRecord{}}
	for {
		q.Limit = limit - len(out.Revisions)
		p, err := db.History(ctx, q)
		if err != nil {
			if len(out.Revisions) > 0 && isScanLimit(err) {
				out.Next = out.Revisions[len(out.Revisions)-1].Number
				return out, nil
			}
			return nil, err
		}
		for _, r := range p.Revisions {
			if c.s.revisionVisible(r) {
				out.Revisions = append(out.Revisions, r)
			}
		}
		if p.Next == 0 {
			return out, nil
		}
		if len(out.Revisions) >= limit {
			out.Next = p.Next
			return out, nil
		}
		q.Before = p.Next
	}
}

// isScanLimit recognises the library's error for a history walk that examined its maximum of revisions without
// finding any.
func isScanLimit(err error) bool { return errors.Is(err, snapshots.ErrScanLimit) }

// noResource is a resource name no database holds (it is not a valid name): a history filtered by it walks the
// whole branch and finds nothing, as a filter by a missing resource does.
const noResource = "\x00hidden"

// ---- diffs restricted to permitted resources

// scopedDiff compares two database roots as the library's whole-root diff does, but only over permitted resources:
// operations under hidden resources are never computed, and counts cover permitted resources only. maxOps bounds the
// operations (0: no bound); past it, Truncated is set.
func (c *call) scopedDiff(ctx context.Context, db *snapshots.DB, a, b revision.Value, maxOps int) (*revision.DiffResult, error) {
	f := db.Forest()
	members := map[string][2]revision.Value{}
	for i, root := range []revision.Value{a, b} {
		if !root.IsValid() {
			continue
		}
		err := f.Members(ctx, root, func(name string, v revision.Value) error {
			if c.s.resPermitted(name) {
				m := members[name]
				m[i] = v
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

// scopedShowRevision is snapshots.DB.ShowRevision for a limited scope: a hidden revision is not found, as one that
// does not exist, and the change is computed over permitted resources only.
func (c *call) scopedShowRevision(ctx context.Context, db *snapshots.DB, n uint64, maxOps int) (*snapshots.RevisionDetail, error) {
	st, err := db.Resolve(ctx, snapshots.Ref{Revision: n})
	if err != nil {
		return nil, err
	}
	if !c.s.revisionVisible(st.Rev) {
		return nil, c.missingRevision(ctx, n)
	}
	before := revision.EmptyObject
	if len(st.Rev.Parents) > 0 {
		p, err := db.Resolve(ctx, snapshots.Ref{Revision: st.Rev.Parents[0]})
		if err != nil {
			return nil, err
		}
		before = p.Root
	}
	d, err := c.scopedDiff(ctx, db, before, st.Root, maxOps)
	if err != nil {
		return nil, err
	}
	return &snapshots.RevisionDetail{Rev: st.Rev, Diff: d}, nil
}
