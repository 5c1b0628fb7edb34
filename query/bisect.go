package query

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// Evaluation is one run of a bisect predicate.
type Evaluation struct {
	Revision uint64 `json:"revision"`
	Value    bool   `json:"value"`
}

// BisectResult is the answer of Bisect.
type BisectResult struct {
	Found       bool         `json:"found"`       // the predicate is true at the end of the range
	First       uint64       `json:"first"`       // the first revision where it is true (when Found)
	Last        uint64       `json:"last_false"`  // the revision before it, where it was false (0 when true from the start)
	Candidates  int          `json:"candidates"`  // revisions that could have changed the answer
	Evaluations []Evaluation `json:"evaluations"` // every evaluation, in the order made
}

// maxBisectChain bounds the history a bisect walks.
const maxBisectChain = 1_000_000

// BisectRequest is one bisect: find the first revision on a branch's first-parent history, between From and To (0:
// the branch's first revision and its head), at which a jq predicate on a resource (or on the root, when Resource is
// "") becomes true.
type BisectRequest struct {
	Branch    string         // default main
	Resource  string         // "" for the object of all resources
	Predicate string         // jq; its first output decides, by jq truthiness
	Params    map[string]any // $name variables
	From, To  uint64
	// Visible, when set, hides resources (gate.View sets it for a scoped principal): revisions that changed only
	// hidden resources are not on the history walked (they cannot change what the predicate sees; From or To naming
	// one is an error, as for a revision off the branch), a hidden resource is absent (null) throughout, and the
	// object of all resources holds the visible ones only.
	Visible func(resource string) bool
}

// Bisect finds the first revision at which req's predicate becomes true. The predicate's first output decides, by
// jq truthiness (false and null are false; no output is false).
//
// Like git bisect it assumes the predicate is false up to some revision and true from then on, and finds that
// revision in O(log n) evaluations: the end of the range is evaluated first (not true there: nothing to find), then
// the start (already true: the start is the answer), then midpoints. With a resource, only revisions that changed
// it are candidates (the value, and so the answer, cannot change elsewhere), read from the revision records without
// opening any tree; an absent resource is null. Each evaluation is an ordinary query, under the engine's deadline
// and isolation, and is reported in BisectResult.Evaluations.
func (e *Engine) Bisect(ctx context.Context, db *snapshots.DB, req BisectRequest) (*BisectResult, error) {
	branch, resource, predicate, params, from, to, visible := req.Branch, req.Resource, req.Predicate, req.Params, req.From, req.To, req.Visible
	if resource != "" {
		if err := snapshots.ValidResourceName(resource); err != nil {
			return nil, err
		}
	}
	if from != 0 && to != 0 && from > to {
		return nil, fmt.Errorf("%w: the range's start, revision %d (from_revision, or --from), is after its end, revision %d (to_revision, or --to): swap them", snapshots.ErrInvalidArgument, from, to)
	}
	ps, err := e.params(predicate, params)
	if err != nil {
		return nil, err
	}
	prog, err := e.program(predicate, ps.names)
	if err != nil {
		return nil, err
	}
	chain, err := firstParentChain(ctx, db, branch, from)
	if err != nil {
		return nil, err
	}
	if visible != nil {
		chain = slices.DeleteFunc(chain, func(r store.RevisionRecord) bool {
			return len(r.Resources) > 0 && !slices.ContainsFunc(r.Resources, visible)
		})
	}
	hidden := resource != "" && visible != nil && !visible(resource)
	// chain is oldest first; keep from…to.
	lo, hi := 0, len(chain)
	if from != 0 {
		lo = slices.IndexFunc(chain, func(r store.RevisionRecord) bool { return r.Number == from })
		if lo < 0 {
			return nil, fmt.Errorf("%w: the range's start, revision %d (from_revision, or --from), is not on the first-parent history of branch %s", snapshots.ErrInvalidArgument, from, branchName(branch))
		}
	}
	if to != 0 {
		i := slices.IndexFunc(chain, func(r store.RevisionRecord) bool { return r.Number == to })
		if i < 0 {
			return nil, fmt.Errorf("%w: the range's end, revision %d (to_revision, or --to), is not on the first-parent history of branch %s", snapshots.ErrInvalidArgument, to, branchName(branch))
		}
		hi = i + 1
	}
	chain = chain[lo:hi]
	cands := chain[:0:0]
	for i, r := range chain {
		if i == 0 || resource == "" || (!hidden && slices.Contains(r.Resources, resource)) {
			cands = append(cands, r)
		}
	}
	res := &BisectResult{Candidates: len(cands), Evaluations: []Evaluation{}}
	if len(cands) == 0 {
		return res, nil
	}
	memo := map[store.Hash]bool{}
	eval := func(i int) (bool, error) {
		r := cands[i]
		root, err := revision.ValueFromEncoding(string(r.Root))
		if err != nil {
			return false, fmt.Errorf("revision %d: %w", r.Number, err)
		}
		src := &source{f: db.Forest(), v: root}
		switch {
		case hidden:
			src = &source{f: db.Forest(), null: true}
		case resource == "" && visible != nil:
			if src, err = e.source(ctx, &Request{Forest: db.Forest(), Root: root, Revision: r.Number, Visible: visible}); err != nil {
				return false, err
			}
		case resource != "":
			v, err := db.Forest().Get(ctx, root, revision.Pointer{resource})
			switch {
			case errors.Is(err, revision.ErrNotFound):
				src = &source{f: db.Forest(), null: true}
			case err != nil:
				return false, err
			default:
				src.v = v
			}
		}
		var h store.Hash // the zero hash stands for null (an absent or hidden resource): no value has it
		if !src.null {
			h = src.v.Hash()
		}
		if b, ok := memo[h]; ok {
			return b, nil
		}
		b, err := e.truth(ctx, prog, ps, src)
		if err != nil {
			return false, fmt.Errorf("evaluating the predicate at revision %d: %w", r.Number, err)
		}
		memo[h] = b
		res.Evaluations = append(res.Evaluations, Evaluation{Revision: r.Number, Value: b})
		return b, nil
	}
	n := len(cands)
	end, err := eval(n - 1)
	if err != nil || !end {
		return res, err
	}
	res.Found = true
	start, err := eval(0)
	if err != nil {
		return res, err
	}
	if start {
		res.First = cands[0].Number
		return res, nil
	}
	f, t := 0, n-1 // predicate false at f, true at t
	for t-f > 1 {
		mid := f + (t-f)/2
		b, err := eval(mid)
		if err != nil {
			return res, err
		}
		if b {
			t = mid
		} else {
			f = mid
		}
	}
	res.First, res.Last = cands[t].Number, cands[f].Number
	return res, nil
}

// truth runs a predicate once and reports the jq truthiness of its first output.
func (e *Engine) truth(ctx context.Context, prog *program, ps *params, src *source) (bool, error) {
	ctx, cancel := e.deadline(ctx)
	defer cancel()
	src, k, _, err := e.descend(ctx, src, prog, ps)
	if err != nil {
		return false, err
	}
	var pg *page
	if prog.plan.whole() && k == len(prog.plan.steps) {
		// A bare path: its value decides. Reading it whole is not needed for its truthiness.
		return !src.null && src.v.Kind() != revision.Null && !(src.v.Kind() == revision.Bool && !src.v.Bool()), nil
	}
	var plan Plan
	if pg, err = e.execute(ctx, prog, ps, src, k, "run", 0, 1, e.opts.MaxOutputBytes, &plan); err != nil {
		return false, err
	}
	if len(pg.results) == 0 {
		return false, nil
	}
	s := string(pg.results[0])
	return s != "false" && s != "null", nil
}

// firstParentChain returns a branch's first-parent history, oldest first, down to revision from (0: all).
func firstParentChain(ctx context.Context, db *snapshots.DB, branch string, from uint64) ([]store.RevisionRecord, error) {
	var chain []store.RevisionRecord
	before := uint64(0)
	for {
		pg, err := db.History(ctx, snapshots.HistoryQuery{Branch: branch, Limit: 10_000, Before: before})
		if err != nil {
			return nil, err
		}
		done := false
		for _, r := range pg.Revisions {
			chain = append(chain, r)
			if r.Number <= from || len(chain) >= maxBisectChain {
				done = true
				break
			}
		}
		if done || pg.Next == 0 || len(pg.Revisions) == 0 {
			break
		}
		before = pg.Next
	}
	slices.Reverse(chain)
	return chain, nil
}

func branchName(b string) string {
	if b == "" {
		return snapshots.Main
	}
	return b
}
