package query

import (
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// TestBisectMergeRevisions: on a branch with merge revisions (promotions whose arrays merged element by element),
// bisect walks first parents: a change brought in by a promotion is found at the merge revision, never at the
// promoted branch's own revisions.
func TestBisectMergeRevisions(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	e := newEngine(t, Options{})
	put(t, db, "cat", `{"items":[{"id":1,"n":0},{"id":2,"n":0}]}`)
	if _, err := db.CreateBranch(ctx, "agent", snapshots.Ref{}, ""); err != nil {
		t.Fatal(err)
	}
	onBranch := func(doc string) uint64 {
		res, err := db.Put(ctx, "cat", []byte(doc), snapshots.WriteOptions{Branch: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Revision
	}
	b1 := onBranch(`{"items":[{"id":1,"n":0},{"id":2,"n":5}]}`)
	b2 := onBranch(`{"items":[{"id":1,"n":0},{"id":2,"n":5},{"id":3,"n":0}]}`)
	m1 := put(t, db, "cat", `{"items":[{"id":1,"n":1},{"id":2,"n":0}]}`)
	p, err := db.Promote(ctx, "agent", "", snapshots.WriteOptions{})
	if err != nil || p.FastForward {
		t.Fatalf("promote: %v %+v", err, p)
	}
	if got := string(must(db.Forest().JSON(ctx, must(db.Resolve(ctx, snapshots.Ref{})).Root))); got != `{"cat":{"items":[{"id":1,"n":1},{"id":2,"n":5},{"id":3,"n":0}]}}` {
		t.Fatalf("merged %s", got)
	}
	m2 := put(t, db, "cat", `{"items":[{"id":1,"n":1},{"id":2,"n":6},{"id":3,"n":0}]}`)
	for _, c := range []struct {
		pred  string
		first uint64
	}{
		{`.items[1].n >= 5`, p.Revision}, // brought by the promotion: b1 is not on main's first-parent history
		{`.items | length == 3`, p.Revision},
		{`.items[0].n == 1`, m1},
		{`.items[1].n == 6`, m2},
	} {
		r, err := e.Bisect(ctx, db, BisectRequest{Resource: "cat", Predicate: c.pred})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Found || r.First != c.first {
			t.Fatalf("%s: found %v at %d, want %d (branch revisions %d, %d)", c.pred, r.Found, r.First, c.first, b1, b2)
		}
		for _, ev := range r.Evaluations {
			if ev.Revision == b1 || ev.Revision == b2 {
				t.Fatalf("%s evaluated the branch's revision %d", c.pred, ev.Revision)
			}
		}
	}
}
