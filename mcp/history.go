package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// The handlers of the read tools about change: history, show_revision, diff and path_history.

// ---- history

type historyOut struct {
	Database   string         `json:"database"`
	Branch     string         `json:"branch"`
	Resource   string         `json:"resource,omitempty"`
	Path       string         `json:"path,omitempty"`
	Revisions  []revisionJSON `json:"revisions"`
	More       bool           `json:"more"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// pathFilter reads the resource and path arguments of history and diff: a path needs a resource.
func (c *call) pathFilter() (string, revision.Pointer, error) {
	if c.a.has("path") && !c.a.has("resource") {
		return "", nil, newError(codeInvalidArgument, "path needs resource: a path is a JSON Pointer inside a resource")
	}
	ptr, err := c.a.pointer("path")
	return c.a.str("resource"), ptr, err
}

// pageBefore pages a page of revisions, newest first, that the library read up to next (0 when there are no older
// ones): it keeps what fits the budget and, where more follow, makes the cursor that continues below the last one kept,
// on the chain walked from head (the branch may move, or be deleted and made again, between pages).
func pageBefore[T any](c *call, items []T, next, head uint64, rev func(T) uint64) (kept []T, more bool, cursor string) {
	kept, cut := page(items, len(items), c.s.budget())
	if cut {
		next = rev(kept[len(kept)-1])
	}
	if next != 0 {
		more = true
		cursor = c.s.newCursor(c.t, c.a, cursorState{Before: next, Head: head})
	}
	return kept, more, cursor
}

func history(ctx context.Context, c *call) (string, any, error) {
	cur, v, err := c.cursorAndView(ctx)
	if err != nil {
		return "", nil, err
	}
	res, ptr, err := c.pathFilter()
	if err != nil {
		return "", nil, err
	}
	branch := branchOr(c.a.str("branch"))
	q := snapshots.HistoryQuery{Branch: branch, Resource: res, Path: ptr, Limit: c.limit(50)}
	if cur != nil {
		q.Before, q.Head = cur.Before, cur.Head
	}
	p, err := v.History(ctx, q)
	if err != nil {
		return "", nil, err
	}
	revs := make([]revisionJSON, len(p.Revisions))
	for i, r := range p.Revisions {
		revs[i] = revisionOf(r, min(maxMessage, c.s.budget()/4), c.s.budget()/4)
	}
	out := historyOut{Database: c.a.str("database"), Branch: branch, Resource: res}
	if res != "" {
		out.Path = ptr.String()
	}
	out.Revisions, out.More, out.NextCursor = pageBefore(c, revs, p.Next, p.Head, func(r revisionJSON) uint64 { return r.Revision })
	return fmt.Sprintf("%d revision(s) of branch %s, newest first%s.", len(out.Revisions), branch, moreText(out.More)), out, nil
}

// ---- show_revision

type showRevisionOut struct {
	Database string `json:"database"`
	revisionJSON
	NewNodes int     `json:"new_nodes"`
	NewBytes int64   `json:"new_bytes"`
	Changes  changes `json:"changes"`
}

type changes struct {
	Counts         revision.Counts `json:"counts"`
	CountsComplete bool            `json:"counts_complete"`
	Operations     []diffOp        `json:"operations"`
	More           bool            `json:"more"`
}

// diffOp is one operation of a diff as the tools show it.
type diffOp struct {
	Op       string          `json:"op"`
	Path     string          `json:"path"`
	From     string          `json:"from,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	OldValue json.RawMessage `json:"old_value,omitempty"`
}

// showOps is how many operations show_revision computes.
const showOps = 50

func showRevision(ctx context.Context, c *call) (string, any, error) {
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	d, err := v.ShowRevision(ctx, c.a.uint("revision"), showOps+1)
	if err != nil {
		return "", nil, err
	}
	r := revisionOf(d.Rev, 0, c.s.budget()/4)
	if len(r.Message) > c.s.budget()/4 {
		r.Message = clipText(r.Message, c.s.budget()/4)
	}
	out := showRevisionOut{Database: c.a.str("database"), revisionJSON: r, NewNodes: d.Rev.NewNodes, NewBytes: d.Rev.NewBytes}
	head, _, _ := marshalData(out)
	ops := d.Diff.Operations
	more := len(ops) > showOps
	if more {
		ops = ops[:showOps]
	}
	shown, cut, _ := fitOps(ops, c.s.budget()-len(head))
	out.Changes = changes{Counts: d.Diff.Counts, CountsComplete: !d.Diff.Truncated, Operations: shown, More: more || cut}
	return fmt.Sprintf("revision %d on %s: %d added, %d removed, %d replaced, %d moved%s.", r.Revision, r.Branch,
		d.Diff.Counts.Added, d.Diff.Counts.Removed, d.Diff.Counts.Replaced, d.Diff.Counts.Moved, countsNote(!d.Diff.Truncated)), out, nil
}

// countsText says the counts of a diff that are not zero ("no change" when none is); counts holds them all.
func countsText(c revision.Counts) string {
	var parts []string
	for _, k := range []struct {
		n    int
		what string
	}{{c.Added, "added"}, {c.Removed, "removed"}, {c.Replaced, "replaced"}, {c.Moved, "moved"}} {
		if k.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k.n, k.what))
		}
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

func countsNote(complete bool) string {
	if complete {
		return ""
	}
	return " (at least: the change is larger than the operations computed)"
}

// fitOps converts operations, keeping them while they fit the budget. A value too big for the budget is replaced by
// an $elided marker (elided reports that), so that one huge value never stops the list. cut reports operations left
// out.
func fitOps(ops []revision.DiffOp, budget int) (out []diffOp, cut, elidedAny bool) {
	out = []diffOp{}
	used := 0
	perValue := max(budget/4, 200)
	for _, o := range ops {
		op := diffOp{Op: o.Op, Path: o.Path, From: o.From, Value: o.Value, OldValue: o.OldValue}
		elidedAny = elidedAny || o.Elided // left out by the library already (DiffOptions.MaxValueBytes)
		for _, v := range []*json.RawMessage{&op.Value, &op.OldValue} {
			if *v != nil && shownLen(*v) > perValue {
				*v = gate.ElidedRaw(*v, o.Path)
				elidedAny = true
			}
		}
		b, _, _ := marshalData(op)
		if used+len(b)+1 > budget {
			return out, true, elidedAny
		}
		used += len(b) + 1
		out = append(out, op)
	}
	return out, false, elidedAny
}

// ---- diff

type diffOut struct {
	Database       string          `json:"database"`
	FromRevision   uint64          `json:"from_revision"`
	FromBranch     string          `json:"from_branch,omitempty"`
	ToRevision     uint64          `json:"to_revision"`
	ToBranch       string          `json:"to_branch,omitempty"`
	Resource       string          `json:"resource,omitempty"`
	Path           string          `json:"path,omitempty"`
	Counts         revision.Counts `json:"counts"`
	CountsComplete bool            `json:"counts_complete"`
	Operations     []diffOp        `json:"operations"`
	More           bool            `json:"more"`
	NextCursor     string          `json:"next_cursor,omitempty"`
	Truncated      bool            `json:"truncated"`
}

func diff(ctx context.Context, c *call) (string, any, error) {
	cur, db, err := c.cursorAndView(ctx)
	if err != nil {
		return "", nil, err
	}
	res, ptr, err := c.pathFilter()
	if err != nil {
		return "", nil, err
	}
	_, fromGiven, err := c.a.ref("from_")
	if err != nil {
		return "", nil, err
	}
	_, toGiven, err := c.a.ref("to_")
	if err != nil {
		return "", nil, err
	}
	if !fromGiven && !toGiven {
		return "", nil, newError(codeInvalidArgument, "diff needs the states to compare: give from_revision, from_snapshot or from_branch (with from_at), and to_… the same way (each side defaults to the head of main)")
	}
	from, err := c.state(ctx, db, "from_", cur, 0)
	if err != nil {
		return "", nil, err
	}
	to, err := c.state(ctx, db, "to_", cur, 1)
	if err != nil {
		return "", nil, err
	}
	limit := c.limit(100)
	var offset int
	if cur != nil {
		offset = int(cur.Offset)
	}
	d, err := db.Diff(ctx, from, to, res, ptr, &revision.DiffOptions{MaxOps: offset + limit + 1, MaxValueBytes: uint64(c.s.budget())})
	if err != nil {
		return "", nil, err
	}
	ops := d.Operations[min(offset, len(d.Operations)):]
	more := len(ops) > limit
	if more {
		ops = ops[:limit]
	}
	out := diffOut{Database: c.a.str("database"), FromRevision: from.Rev.Number, FromBranch: from.Branch,
		ToRevision: to.Rev.Number, ToBranch: to.Branch, Resource: res, Counts: d.Counts, CountsComplete: !d.Truncated}
	if res != "" {
		out.Path = ptr.String()
	}
	shown, cut, elidedAny := fitOps(ops, c.s.budget()-400)
	out.Operations, out.Truncated = shown, elidedAny
	out.More = more || cut
	if out.More {
		out.NextCursor = c.s.newCursor(c.t, c.a, cursorState{Revs: []uint64{from.Rev.Number, to.Rev.Number}, Offset: uint64(offset + len(shown))})
	}
	return fmt.Sprintf("revision %d → %d: %s%s%s.", from.Rev.Number, to.Rev.Number, countsText(d.Counts),
		countsNote(!d.Truncated), moreText(out.More)), out, nil
}

// ---- path_history

type pathChangeJSON struct {
	revisionJSON
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

type pathHistoryOut struct {
	Database   string           `json:"database"`
	Branch     string           `json:"branch"`
	Resource   string           `json:"resource"`
	Path       string           `json:"path"`
	Changes    []pathChangeJSON `json:"changes"`
	More       bool             `json:"more"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

func pathHistory(ctx context.Context, c *call) (string, any, error) {
	cur, db, err := c.cursorAndView(ctx)
	if err != nil {
		return "", nil, err
	}
	ptr, err := c.a.pointer("path")
	if err != nil {
		return "", nil, err
	}
	branch := branchOr(c.a.str("branch"))
	res := c.a.str("resource")
	q := snapshots.HistoryQuery{Branch: branch, Resource: res, Path: ptr, Limit: c.limit(20)}
	if cur != nil {
		q.Before, q.Head = cur.Before, cur.Head
	}
	p, err := db.PathHistory(ctx, q)
	if err != nil {
		return "", nil, err
	}
	chs := p.Changes
	budget := c.s.budget()
	perValue := max(budget/8, 200)
	value := func(v revision.Value) (json.RawMessage, error) {
		if !v.IsValid() {
			return nil, nil
		}
		if v.Size() > uint64(perValue) {
			return elisionOf(v, ptr.String()), nil
		}
		b, err := db.Forest().JSON(ctx, v)
		if err == nil && shownLen(b) > perValue {
			b = elisionOf(v, ptr.String())
		}
		return b, err
	}
	all := make([]pathChangeJSON, len(chs))
	for i, ch := range chs {
		all[i].revisionJSON = revisionOf(ch.Rev, min(maxMessage, budget/8), budget/8)
		if all[i].Before, err = value(ch.Before); err != nil {
			return "", nil, err
		}
		if all[i].After, err = value(ch.After); err != nil {
			return "", nil, err
		}
	}
	out := pathHistoryOut{Database: c.a.str("database"), Branch: branch, Resource: res, Path: ptr.String()}
	out.Changes, out.More, out.NextCursor = pageBefore(c, all, p.Next, p.Head, func(ch pathChangeJSON) uint64 { return ch.Revision })
	return fmt.Sprintf("%d change(s) of %s%s on branch %s, newest first%s.", len(out.Changes), res, ptr, branch, moreText(out.More)), out, nil
}
