package snapshots

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// maxHistoryScan bounds how many revisions one history call examines; past it the call returns a cursor to
// continue (10,000; SetHistoryScanLimit lowers it for tests).
var maxHistoryScan atomic.Int64

func init() { maxHistoryScan.Store(10_000) }

// SetHistoryScanLimit sets how many revisions one history call examines, and returns the limit it replaces: for
// tests, which need short histories to reach it. Safe while other goroutines read history.
func SetHistoryScanLimit(n int) (previous int) { return int(maxHistoryScan.Swap(int64(n))) }

// HistoryQuery selects revisions of a branch, newest first, following first parents.
type HistoryQuery struct {
	Branch   string           // default main
	Resource string           // only revisions that changed this resource
	Path     revision.Pointer // with Resource: only revisions that changed the value at this path
	Limit    int              // default 50
	Before   uint64           // continue below this revision (a cursor from a previous page)
	// Head walks from this revision instead of the branch's head: a cursor's (the Head of its first page), so that
	// later pages read the history the first page did, even once the branch has moved on, or was deleted and made
	// again elsewhere. The branch is then not looked up.
	Head uint64
}

// HistoryPage is one page of history.
type HistoryPage struct {
	Revisions []store.RevisionRecord
	Next      uint64 // the Before of the next page; 0 at the end
	Head      uint64 // the revision the walk began at: the branch's head, or the query's Head
}

// History lists revisions newest first. A resource filter uses each revision's record of touched resources, so it
// never diffs the database; a path filter then compares the value at the path with the parent's (by hash).
func (db *DB) History(ctx context.Context, q HistoryQuery) (*HistoryPage, error) {
	page := &HistoryPage{Revisions: []store.RevisionRecord{}}
	var stop uint64
	var err error
	page.Head, stop, err = db.walk(ctx, q.Branch, q.Head, q.Before, func(rec, parent store.RevisionRecord, hasParent bool) (bool, error) {
		if len(page.Revisions) >= limitOr(q.Limit) {
			page.Next = rec.Number + 1
			return false, nil
		}
		ok, _, _, err := db.touches(ctx, rec, parent, hasParent, q.Resource, q.Path)
		if err != nil {
			return false, err
		}
		if ok {
			page.Revisions = append(page.Revisions, rec)
		}
		return true, nil
	})
	if err == ErrScanLimit { // go on from the first revision not examined
		page.Next, err = stop+1, nil
	}
	return page, err
}

func limitOr(n int) int {
	if n <= 0 {
		return 50
	}
	return n
}

// ErrScanLimit ends a walk that examined its maximum of revisions (maxHistoryScan). History and PathHistory then answer
// what they found, with a cursor at the first revision not examined: a filter that matched nothing in that many
// revisions gets an empty page and a cursor, never an end of history it did not reach.
var ErrScanLimit = errors.New("history scan limit reached without a match")

// walk visits the first-parent chain of a branch from its head (or from head, when not 0), or from below a cursor,
// newest first. start is the revision it began at.
func (db *DB) walk(ctx context.Context, branch string, head, before uint64, fn func(rec, parent store.RevisionRecord, hasParent bool) (bool, error)) (start, stop uint64, err error) {
	if branch == "" {
		branch = Main
	}
	err = db.be.View(ctx, func(c store.CatalogReader) error {
		start = head
		if start == 0 {
			b, err := c.Branch(branch)
			if err != nil {
				return notFoundRef(c, "branch", branch, err)
			}
			start = b.Head
		}
		rec, err := c.Revision(start)
		if errors.Is(err, store.ErrNotFound) && head != 0 {
			return &NotFoundError{What: "revision", Name: strconv.FormatUint(head, 10),
				Hint: "the history this cursor was reading was garbage-collected (its branch was deleted): start again without the cursor"}
		}
		if err != nil {
			return err
		}
		// With a cursor, walk from the head down to it first (cheap: records only).
		for before != 0 && rec.Number >= before {
			if len(rec.Parents) == 0 {
				return nil
			}
			if rec, err = c.Revision(rec.Parents[0]); err != nil {
				return err
			}
		}
		for scanned := 0; ; scanned++ {
			if scanned == int(maxHistoryScan.Load()) {
				stop = rec.Number
				return ErrScanLimit
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			var parent store.RevisionRecord
			has := len(rec.Parents) > 0
			if has {
				if parent, err = c.Revision(rec.Parents[0]); err != nil {
					return err
				}
			}
			more, err := fn(rec, parent, has)
			if err != nil || !more || !has {
				return err
			}
			rec = parent
		}
	})
	return start, stop, err
}

// touches reports whether a revision changed a resource (or the value at a path in it), with the values before and
// after.
func (db *DB) touches(ctx context.Context, rec, parent store.RevisionRecord, hasParent bool, resource string, path revision.Pointer) (bool, revision.Value, revision.Value, error) {
	if resource == "" {
		return true, revision.Value{}, revision.Value{}, nil
	}
	found := false
	for _, r := range rec.Resources {
		found = found || r == resource
	}
	if !found {
		return false, revision.Value{}, revision.Value{}, nil
	}
	full := append(revision.Pointer{resource}, path...)
	after, err := db.valueAt(ctx, rec, full)
	if err != nil {
		return false, after, after, err
	}
	var before revision.Value
	if hasParent {
		if before, err = db.valueAt(ctx, parent, full); err != nil {
			return false, before, after, err
		}
	}
	return before != after, before, after, nil
}

// valueAt is the value at a pointer in a revision, or the zero Value where there is none.
func (db *DB) valueAt(ctx context.Context, rec store.RevisionRecord, p revision.Pointer) (revision.Value, error) {
	root, err := revision.ValueFromEncoding(string(rec.Root))
	if err != nil {
		return revision.Value{}, err
	}
	v, err := db.forest.Get(ctx, root, p)
	if errors.Is(err, revision.ErrNotFound) || errors.Is(err, revision.ErrInvalidPath) {
		return revision.Value{}, nil
	}
	return v, err
}

// PathChange is one revision that changed the value at a path ("blame" for one value). Before or After is the zero
// Value where the path did not exist.
type PathChange struct {
	Rev    store.RevisionRecord
	Before revision.Value
	After  revision.Value
}

// PathHistoryPage is one page of a path's history.
type PathHistoryPage struct {
	Changes []PathChange
	Next    uint64 // the Before of the next page; 0 at the end
	Head    uint64 // the revision the walk began at, as HistoryPage's
}

// PathHistory lists, newest first, the revisions of a branch where the value at q.Path inside q.Resource changed
// (q.Limit default 50).
func (db *DB) PathHistory(ctx context.Context, q HistoryQuery) (*PathHistoryPage, error) {
	if err := ValidResourceName(q.Resource); err != nil {
		return nil, err
	}
	page := &PathHistoryPage{Changes: []PathChange{}}
	var stop uint64
	var err error
	page.Head, stop, err = db.walk(ctx, q.Branch, q.Head, q.Before, func(rec, parent store.RevisionRecord, has bool) (bool, error) {
		if len(page.Changes) >= limitOr(q.Limit) {
			page.Next = rec.Number + 1
			return false, nil
		}
		ok, b, a, err := db.touches(ctx, rec, parent, has, q.Resource, q.Path)
		if ok {
			page.Changes = append(page.Changes, PathChange{Rev: rec, Before: b, After: a})
		}
		return err == nil, err
	})
	if err == ErrScanLimit {
		page.Next, err = stop+1, nil
	}
	if err != nil {
		return nil, err
	}
	return page, nil
}

// RevisionDetail is a revision with a summary of what it changed against its first parent.
type RevisionDetail struct {
	Rev  store.RevisionRecord
	Diff *revision.DiffResult
}

// ShowRevision returns a revision and the first maxOps operations of its change.
func (db *DB) ShowRevision(ctx context.Context, n uint64, maxOps int) (*RevisionDetail, error) {
	st, err := db.Resolve(ctx, Ref{Revision: n})
	if err != nil {
		return nil, err
	}
	before := revision.EmptyObject
	if len(st.Rev.Parents) > 0 {
		p, err := db.Resolve(ctx, Ref{Revision: st.Rev.Parents[0]})
		if err != nil {
			return nil, err
		}
		before = p.Root
	}
	// A value over 16 MiB stands as a marker: every front end shows less than that of one value.
	d, err := db.forest.Diff(ctx, before, st.Root, &revision.DiffOptions{MaxOps: maxOps, MaxValueBytes: 16 << 20})
	if err != nil {
		return nil, err
	}
	return &RevisionDetail{Rev: st.Rev, Diff: d}, nil
}

// Diff compares two states, optionally inside one resource (and a path in it).
func (db *DB) Diff(ctx context.Context, from, to Ref, resource string, path revision.Pointer, opts *revision.DiffOptions) (*revision.DiffResult, State, State, error) {
	a, err := db.Resolve(ctx, from)
	if err != nil {
		return nil, a, State{}, err
	}
	b, err := db.Resolve(ctx, to)
	if err != nil {
		return nil, a, b, err
	}
	va, vb := a.Root, b.Root
	if resource != "" {
		p := append(revision.Pointer{resource}, path...)
		if va, err = db.valueAt(ctx, a.Rev, p); err != nil {
			return nil, a, b, err
		}
		if vb, err = db.valueAt(ctx, b.Rev, p); err != nil {
			return nil, a, b, err
		}
		if !va.IsValid() && !vb.IsValid() {
			return nil, a, b, &NotFoundError{What: "resource", Name: resource + path.String(), Hint: fmt.Sprintf("absent in both revision %d and revision %d", a.Rev.Number, b.Rev.Number)}
		}
		if !va.IsValid() || !vb.IsValid() {
			// Absent on one side: the value was added or removed there, as the whole-database diff says (found in
			// review: this compared with null, and answered a replace of a null that was never there).
			d, err := db.appeared(ctx, va, vb)
			return d, a, b, err
		}
	}
	d, err := db.forest.Diff(ctx, va, vb, opts)
	return d, a, b, err
}

// appeared is the diff of a value present on one side only: one add at "" (va absent) or one remove (vb absent).
func (db *DB) appeared(ctx context.Context, va, vb revision.Value) (*revision.DiffResult, error) {
	d := &revision.DiffResult{Operations: []revision.DiffOp{}}
	if !va.IsValid() {
		j, err := db.forest.JSON(ctx, vb)
		if err != nil {
			return nil, err
		}
		d.Operations, d.Counts.Added = append(d.Operations, revision.DiffOp{Op: "add", Path: "", Value: j}), 1
		return d, nil
	}
	j, err := db.forest.JSON(ctx, va)
	if err != nil {
		return nil, err
	}
	d.Operations, d.Counts.Removed = append(d.Operations, revision.DiffOp{Op: "remove", Path: "", OldValue: j}), 1
	return d, nil
}

// PromoteResult says how a branch was promoted.
type PromoteResult struct {
	*Result
	FastForward bool
	// Conflicts are the paths both branches changed in ways that cannot both be kept and that the resolutions did
	// not settle; Resolved those they did. In each, Ours is the value on the branch promoted into (into) and Theirs
	// the value on the branch promoted (branch); array indexes in paths count positions at the merge base. Read
	// their values with ConflictForest: runs of elements are built by the merge and are in no store.
	Conflicts []revision.Conflict
	Resolved  []revision.Conflict
	// NodeReads is how many nodes the three-way merge read (0 for a fast-forward): it grows with what both
	// branches changed since they parted, not with the documents.
	NodeReads int
	forest    *revision.Forest
}

// ConflictForest reads the values of the conflicts (and of the resolved ones).
func (p *PromoteResult) ConflictForest() *revision.Forest { return p.forest }

// The sides a promote resolution takes (PromoteOptions.Resolve).
const (
	ResolveInto   = "into"   // keep the value of the branch promoted into
	ResolveBranch = "branch" // take the value of the branch promoted
)

// PromoteOptions adjusts the three-way merge of a promotion.
type PromoteOptions struct {
	// Resolve settles conflicts: a JSON Pointer exactly as PromoteResult.Conflicts reports it (beginning with the
	// resource, "/cat/items/3/price") → ResolveInto or ResolveBranch. Nothing is written unless every conflict is
	// settled, and a pointer that is not in conflict is refused (ErrInvalidArgument).
	Resolve map[string]string
	// Keys names, for the array at a JSON Pointer (beginning with the resource: "/catalog/items"), the member that
	// identifies its elements instead of "id" ("" aligns that array by position). Elements are aligned by key only
	// when every element the merge reads carries a unique string or number there; otherwise by position.
	Keys map[string]string
}

// Promote is PromoteWith without options.
func (db *DB) Promote(ctx context.Context, branch, into string, w WriteOptions) (*PromoteResult, error) {
	return db.PromoteWith(ctx, branch, into, w, PromoteOptions{})
}

// PromoteWith brings a branch's changes into another (default main): a fast-forward when the target has not moved
// since the branch left it (its head simply moves), else a three-way merge as a new revision with two parents (the
// target's head first, so first-parent history stays the target's own). Objects merge member by member and arrays
// element by element (revision.Forest.Merge). Conflicts the resolutions do not settle are reported and nothing is
// written.
func (db *DB) PromoteWith(ctx context.Context, branch, into string, w WriteOptions, o PromoteOptions) (*PromoteResult, error) {
	if into == "" {
		into = Main
	}
	if branch == into {
		return nil, invalid("cannot promote branch %s into itself", branch)
	}
	mo := &revision.MergeOptions{Keys: o.Keys}
	if len(o.Resolve) > 0 {
		mo.Resolve = make(map[string]string, len(o.Resolve))
		for p, side := range o.Resolve {
			switch side {
			case ResolveInto:
				mo.Resolve[p] = revision.Ours
			case ResolveBranch:
				mo.Resolve[p] = revision.Theirs
			default:
				return nil, invalid("resolution %q for %q: use %q (keep %s's value) or %q (take %s's)", side, p, ResolveInto, into, ResolveBranch, branch)
			}
		}
	}
	src, err := db.Resolve(ctx, Ref{Branch: branch})
	if err != nil {
		return nil, err
	}
	w.Branch = into
	out := &PromoteResult{forest: db.forest}
	res, err := db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		out.FastForward, out.Conflicts, out.Resolved, out.NodeReads = false, nil, nil, 0
		base, err := db.mergeBase(ctx, head.Rev.Number, src.Rev.Number)
		if err != nil {
			return nil, nil, err
		}
		if base == src.Rev.Number || base == head.Rev.Number {
			if len(mo.Resolve) > 0 {
				how := "it is already part of " + into
				if base == head.Rev.Number {
					how = into + " has not moved since it left (a fast-forward)"
				}
				return nil, nil, invalid("promoting %s into %s has no conflicts (%s): drop the resolutions", branch, into, how)
			}
			if base == src.Rev.Number {
				return &revision.Change{Root: head.Root}, nil, nil // nothing to bring
			}
			out.FastForward = true
			return &revision.Change{Root: src.Root}, []uint64{src.Rev.Number}, nil
		}
		bs, err := db.Resolve(ctx, Ref{Revision: base})
		if err != nil {
			return nil, nil, err
		}
		mr, err := f.Merge(ctx, bs.Root, head.Root, src.Root, mo)
		if err != nil {
			if errors.Is(err, revision.ErrResolution) {
				err = fmt.Errorf("%w: %w", ErrInvalidArgument, err)
			}
			return nil, nil, err
		}
		out.Conflicts, out.Resolved, out.NodeReads = mr.Conflicts, mr.Resolved, mr.NodeReads
		if len(mr.Nodes) > 0 {
			ov := &overlay{base: db.be, nodes: map[store.Hash][]byte{}}
			if _, err := ov.PutNodes(ctx, mr.Nodes); err != nil {
				return nil, nil, err
			}
			out.forest = db.forest.WithStore(ov)
		}
		if cs := mr.Conflicts; len(cs) > 0 {
			return nil, nil, &ConflictError{Msg: fmt.Sprintf("promoting %s into %s conflicts at %d path(s), first %s; nothing was written (settle each with a resolution: %q or %q)", branch, into, len(cs), cs[0], ResolveInto, ResolveBranch)}
		}
		return mr.Change, []uint64{src.Rev.Number}, nil
	})
	if err != nil {
		if len(out.Conflicts) == 0 {
			return &PromoteResult{}, err
		}
		return out, err
	}
	out.Result = res
	if res.Replayed && !res.Unchanged {
		// The change function did not run: say how the revision replayed was made. It fast-forwarded when its
		// first parent (into's head then) is an ancestor of its second (the branch's head then). A retry of a
		// promote that brought nothing names into's head then, which this promote did not make.
		st, err := db.Resolve(ctx, Ref{Revision: res.Revision})
		if err != nil {
			return nil, err
		}
		if ps := st.Rev.Parents; len(ps) == 2 {
			base, err := db.mergeBase(ctx, ps[0], ps[1])
			if err != nil {
				return nil, err
			}
			out.FastForward = base == ps[0]
		}
	}
	return out, nil
}

// mergeBase returns the newest common ancestor of two revisions. Revision numbers grow along history, so it walks
// back from both at once, always from the highest revision not yet expanded: the first one found to be an ancestor
// of both is the newest common one (every revision above it has been expanded already). The walk covers the
// revisions since the two parted, not the whole history.
func (db *DB) mergeBase(ctx context.Context, a, b uint64) (uint64, error) {
	var base uint64
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		reached := map[uint64]uint8{a: 1}
		reached[b] |= 2
		q := &revHeap{a}
		if b != a {
			heap.Push(q, b)
		}
		for q.Len() > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			x := heap.Pop(q).(uint64)
			from := reached[x]
			if from == 3 {
				base = x
				return nil
			}
			rec, err := c.Revision(x)
			if err != nil {
				return err
			}
			for _, p := range rec.Parents {
				if reached[p] == 0 {
					heap.Push(q, p)
				}
				reached[p] |= from
			}
		}
		return nil
	})
	return base, err
}

// revHeap is a max-heap of revision numbers.
type revHeap []uint64

func (h revHeap) Len() int           { return len(h) }
func (h revHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h revHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *revHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *revHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
